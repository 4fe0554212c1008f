"""The cephfs backend (xcbench.backends.cephfs): a CephFS directory with the cell's file layout."""

from xcbench.backends.cephfs.backend import CephFSBackend

BACKEND = CephFSBackend

__all__ = ["BACKEND", "CephFSBackend"]
