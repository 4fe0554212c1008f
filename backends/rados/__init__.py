"""The rados backend (xcbench.backends.rados): XrdCeph (libradosstriper) into a RADOS pool."""

from xcbench.backends.rados.backend import RadosBackend

BACKEND = RadosBackend

__all__ = ["BACKEND", "RadosBackend"]
