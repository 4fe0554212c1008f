"""fio in a directory another user owns: it runs as that user, and root only reads back.

A probe's target (a tmpfs origin, a CephFS layout dir) belongs to the gateway user, who may
be a site's production xrootd. Root never creates, writes or follows a link in it: fio runs as
the directory's owner (uid/gid, no supplementary group, xcbench.system.xrootd_user.run_as), its
job file on stdin and its JSON on stdout (root keeps both in raw/); its bandwidth logs go to a
dir handed to that user inside a root-owned scratch dir, and root copies back only the names it
expects, without following a link and with a size cap. What fio leaves behind is removed by the
directory's descriptor (unlinkat: a link is removed, never followed), only names of our prefix.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path

from xcbench.errors import XcbError
from xcbench.system import orphans
from xcbench.system.fsutil import hand_over, make_dir, read_at, remove_tree, write_file
from xcbench.system.scratch import private_dir
from xcbench.system.xrootd_user import remove_as_owner, run_as

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
LOG_CAP = 16 << 20  # bytes kept of one fio bandwidth log (a 500 ms log of a day is ~2 MiB)


def owner_of(directory: str | os.PathLike) -> tuple[int, int] | None:
    """(uid, gid) of ``directory``'s owner when that is not us (fio then runs as it), else None."""
    st = os.stat(directory)
    return None if st.st_uid == os.geteuid() else (st.st_uid, st.st_gid)


def direct_io_as_owner(directory: str | os.PathLike, owner: tuple[int, int]) -> bool:
    """Whether ``directory`` (of ``owner``) takes O_DIRECT, asked by its owner: a new file of an
    unpredictable name written with O_DIRECT (dd oflag=direct, conv=excl) and removed."""
    path = Path(directory) / f".xcb-probe-odirect-{secrets.token_hex(8)}"
    res = run_as(owner, ["dd", "if=/dev/zero", f"of={path}", "bs=4096", "count=1",
                         "oflag=direct", "conv=excl", "status=none"], timeout=60, check=False)
    try:
        if res.returncode == 0:
            return True
        if os.strerror(errno.EINVAL) in res.stderr:
            return False
        raise XcbError(f"{directory}: its owner (uid {owner[0]}) cannot create a file: "
                       f"{res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.returncode}")
    finally:
        remove_as_owner(path)  # an O_DIRECT open refused with EINVAL may leave the file made


@contextlib.contextmanager
def log_dir(owner: tuple[int, int] | None, stem: Path, jobs: int) -> Iterator[Path]:
    """The ``write_bw_log`` stem fio (running as ``owner``) writes to: ``stem`` itself when fio
    runs as us; else a dir handed to ``owner`` in a root-owned scratch dir, whose logs
    ``<stem.name>_bw.<1..jobs>.log`` are copied into ``stem.parent`` at the end (regular files
    only, never through a link, LOG_CAP bytes each) and the scratch dir removed."""
    if owner is None:
        yield stem
        return
    top = private_dir(tempfile.gettempdir(), "xcb-fio-", mode=0o711)
    try:
        logs = make_dir(top / "logs", 0o700)
        hand_over(logs, owner)
        yield logs / stem.name
        _keep_logs(logs, stem, jobs)
    finally:
        if not remove_tree(top):
            orphans.forget_dir(top)


def _keep_logs(logs: Path, stem: Path, jobs: int) -> None:
    want = re.compile(rf"{re.escape(stem.name)}_bw\.(\d+)\.log")
    dfd = os.open(logs, _DIR)
    try:
        for name in os.listdir(dfd):
            m = want.fullmatch(name)
            if not m or not 1 <= int(m.group(1)) <= jobs:
                continue
            data = read_at(dfd, name, LOG_CAP)
            if data is not None:  # a link, a fifo or gone: not kept
                write_file(stem.parent / name, data)
    finally:
        os.close(dfd)


def remove_files(directory: str | os.PathLike, prefixes: list[str]) -> int:
    """Remove the entries ``<prefix>.*`` of ``directory`` (what fio left) through the directory's
    descriptor: a link is removed as a link, a directory (not fio's) is left. Returns how many."""
    try:
        dfd = os.open(directory, _DIR)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    removed = 0
    try:
        for name in os.listdir(dfd):
            if not any(name.startswith(f"{pre}.") for pre in prefixes):
                continue
            try:
                os.unlink(name, dir_fd=dfd)
                removed += 1
            except OSError:  # gone, a directory (EISDIR), or not ours to remove
                continue
    finally:
        os.close(dfd)
    return removed
