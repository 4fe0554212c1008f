"""The ground floor: the OS layer every other package stands on (imports nothing else of
xcbench but the error type): processes and signals, cgroups and CPU limits, safe deletion, the
state home, secrets, ports, the xrootd user, and reading the files and sizes a user hands in."""
