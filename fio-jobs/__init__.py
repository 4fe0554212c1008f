"""Package data: see the files beside this one."""
