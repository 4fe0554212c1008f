"""The cephfs backend (xcbench.backends.cephfs)."""
