"""Copies of keys, kept private and removed when the run ends, however it ends.

A gateway runs as the xrootd user, so it cannot read the keyring the operator gave (root's
file): xcbench copies that one keyring. The copy lives in a directory made fresh for this
process (mkdtemp: unpredictable name, 0700; 0710 with the xrootd group when a gateway must
traverse it, never listable), written with O_CREAT|O_EXCL|O_NOFOLLOW (a planted symlink
fails), and the copy itself is the xrootd user's, 0400. The directory is removed by
:meth:`KeyDir.close` (Cluster.close), at interpreter exit (atexit), and, after a kill -9, by
the next xcbench command: each directory is recorded under the state home
(xcbench.system.statedir, ``keydirs/<pid>-<dir>.json``) and :func:`sweep` removes
those whose process is gone.
"""

from __future__ import annotations

import atexit
import json
import os
import stat
import sys
import tempfile
import threading
from pathlib import Path

from xcbench.errors import XcbError
from xcbench.system import statedir
from xcbench.system.fsutil import remove_tree
from xcbench.system.proc import pid_alive

PREFIX = "xcbench-keys-"
_lock = threading.Lock()
_live: set[KeyDir] = set()


def state_home() -> Path:
    return statedir.home()


class KeyDir:
    """A private directory for key copies, made on first use; one per Cluster handle."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self._record: Path | None = None

    def ensure(self, gid: int | None = None) -> Path:
        """The directory (made fresh on first use). ``gid``: a group that may traverse it (to
        read one file it is given), else nobody but the owner."""
        with _lock:
            if self.path is None or not self.path.is_dir():
                base = "/var/tmp" if os.path.isdir("/var/tmp") else None
                self.path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))  # 0700, fresh
                if not _live:
                    atexit.register(_close_all)
                _live.add(self)
                try:
                    rec = state_home() / "keydirs" / f"{os.getpid()}-{self.path.name}.json"
                    statedir.write_private(rec, json.dumps(
                        {"pid": os.getpid(), "dir": str(self.path), "host": statedir.HOST}))
                    self._record = rec
                except (OSError, XcbError):
                    pass  # no record: close() and atexit still remove it
            if gid is not None:
                os.chown(self.path, os.getuid(), gid)
                self.path.chmod(0o710)
            return self.path

    def write(self, name: str, data: bytes, *, owner: tuple[int, int] | None = None) -> Path:
        """Write ``data`` as ``name``: 0400, owned by ``owner`` (uid, gid) when given (the
        directory then lets that group traverse it); a symlink planted there is refused."""
        if "/" in name or name in ("", ".", ".."):
            raise XcbError(f"key copy: bad file name {name!r}")
        path = self.ensure(owner[1] if owner else None) / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        if st is not None:
            if not stat.S_ISREG(st.st_mode):
                raise XcbError(f"{path}: not a regular file (refusing a symlink in the key directory)")
            if (owner is None or (st.st_uid, st.st_gid) == owner) and _read(path) == data:
                return path  # the same copy, maybe in use by a running gateway
            os.unlink(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o400)
        try:
            os.write(fd, data)
            if owner is not None:
                os.fchown(fd, *owner)
            os.fchmod(fd, 0o400)
        finally:
            os.close(fd)
        return path

    def keep(self) -> str | None:
        """Leave the directory after this process (a gateway left running by `gateway up`:
        `gateway down` removes it); returns its path."""
        with _lock:
            d, rec, self.path, self._record = self.path, self._record, None, None
            _live.discard(self)
        if rec is not None:
            rec.unlink(missing_ok=True)
        return str(d) if d is not None else None

    def close(self) -> None:
        """Remove the directory and its record (idempotent)."""
        with _lock:
            d, rec, self.path, self._record = self.path, self._record, None, None
            _live.discard(self)
        if d is not None:
            remove_tree(d, what="key copies")
        if rec is not None:
            rec.unlink(missing_ok=True)


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        return os.read(fd, 1 << 20)
    finally:
        os.close(fd)


def remove_kept(path: str | None) -> None:
    """Remove a directory :meth:`KeyDir.keep` left (only one with xcbench's prefix)."""
    if path and Path(path).name.startswith(PREFIX):
        remove_tree(path, what="key copies")


def _close_all() -> None:
    for kd in list(_live):
        kd.close()


def sweep() -> list[Path]:
    """Remove key directories recorded by xcbench processes that are gone (a kill -9);
    return them. Only directories with xcbench's prefix, owned by this user, are touched."""
    removed = []
    for rec in sorted((state_home() / "keydirs").glob("*.json")):
        try:
            info = json.loads(rec.read_text())
            pid, d = int(info["pid"]), Path(info["dir"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        why = statedir.record_problem(rec) or statedir.host_problem(info)
        if why is not None:
            statedir.warn_skipped(rec, why)
            continue
        if pid == os.getpid() or pid_alive(pid):
            continue
        try:
            st = os.lstat(d)
            ours = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and d.name.startswith(PREFIX)
        except FileNotFoundError:
            ours = False
        if ours:
            remove_tree(d, what="key copies of an earlier run")
            removed.append(d)
            print(f"xcbench: removed key copies left by process {pid}: {d}", file=sys.stderr)
        rec.unlink(missing_ok=True)
    return removed
