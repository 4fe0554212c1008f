"""Backends: turn a cell into a verified target a gateway can export (xcbench.backends)."""

from xcbench.backends.base import Backend, Target, get_backend

__all__ = ["Backend", "Target", "get_backend"]
