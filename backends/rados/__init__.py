"""The rados backend (xcbench.backends.rados)."""
