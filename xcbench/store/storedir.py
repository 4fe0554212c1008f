"""The result store's own directory: checked before a run is written in it (xcbench.store.rundir)."""

from __future__ import annotations

import os
from pathlib import Path

from xcbench.errors import XcbError
from xcbench.system import outfiles, statedir


def check_store(store: str | os.PathLike, *, make: bool = True) -> Path:
    """The result store a run is written in, made if missing (``make``; else only what exists
    of its path is checked: a command checks before anything, makes it when a run begins),
    checked as the state home is: reached from ``/`` without a link, every parent root's or
    ours and writable by nobody else (xcbench.system.outfiles), itself a directory of ours that
    nobody else may write. XcbError (one line, nothing touched) otherwise: another user could
    rename what is in it, or put a link where a run writes."""
    p = Path(os.path.abspath(store))
    if not make and not os.path.lexists(p):
        there = next(a for a in p.parents if os.path.lexists(a))
        try:
            os.close(outfiles.open_dir(there, make=False))
        except XcbError as e:
            raise XcbError(f"result store {p}: {e}") from None
        return p
    try:
        fd = outfiles.open_dir(p)
    except XcbError as e:
        raise XcbError(f"result store {p}: {e}") from None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    why = statedir.dir_problem(p)
    if why is None and (os.lstat(p).st_dev, os.lstat(p).st_ino) != (st.st_dev, st.st_ino):
        why = "it changed while being checked"
    if why is not None:
        raise XcbError(f"result store {p}: {why}; refusing to write a run there (pass "
                       f"--store DIR of your own, or set XCBENCH_STORE)")
    return p
