"""The tmpfs backend (xcbench.backends.tmpfs)."""
