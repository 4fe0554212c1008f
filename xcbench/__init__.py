"""xcbench: what caps XRootD gateway transfers into Ceph — measured, attributed, planned."""

__version__ = "0.1.0"
