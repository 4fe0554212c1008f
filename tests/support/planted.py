"""What the xrootd user (the attacker: a site's production xrootd shares the uid) can leave in a
directory it was handed, and the bait that shows whether root fell for it.

    with bait() as (markers, victim, vdir):
        plant(d, ids, markers, "tag")           # code Python would run from a cwd or sys.path
        link(d, "planted-link.log", victim, ids)
    # after: markers holds only victim and vdir; the victim is root's, 0600, unchanged

The planted code writes ``markers/ran-<tag>``: a dir only root may write, so a marker there
means root ran it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from xcbench.system.fsutil import remove_tree

VICTIM_TEXT = "root's file\n"
PACKAGE = ("xcbench/__init__.py", "xcbench/system/__init__.py", "xcbench/system/sdlisten.py",
           "sitecustomize.py", "usercustomize.py")


def plant(d: Path, ids, markers: Path, tag: str) -> list[Path]:
    """Code Python would run from a cwd or a sys.path entry, as files of that user, in ``d``;
    returns what was planted (nothing that was there already)."""
    code = f"open({str(markers / ('ran-' + tag))!r}, 'w').write('root ran planted code')\n"
    made = []
    for rel in PACKAGE:
        p = d / rel
        if os.path.lexists(p):
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(code)
        made.append(p)
    for root, dirs, files in os.walk(d / "xcbench"):
        for name in [*dirs, *files, "."]:
            os.lchown(os.path.join(root, name), *ids)
    for name in ("sitecustomize.py", "usercustomize.py"):
        os.lchown(d / name, *ids)
    return made


def link(d: Path, name: str, to: Path, ids) -> Path | None:
    """A link ``d/name`` -> ``to`` of that user (None when the name is taken)."""
    p = d / name
    try:
        p.symlink_to(to)
    except FileExistsError:
        return None
    os.lchown(p, *ids)
    return p


@contextlib.contextmanager
def bait():
    """(markers, victim, vdir): a root-only dir (only root could write a marker there), a
    root-owned 0600 file and a dir writable by all (an origin a link leads to still works)."""
    d = Path(tempfile.mkdtemp(prefix="xcb-test-bait-", dir="/var/tmp"))
    d.chmod(0o711)  # root's: only root writes markers here; xrootd reaches vdir
    victim = d / "victim"
    victim.write_text(VICTIM_TEXT)
    victim.chmod(0o600)
    vdir = d / "vdir"
    vdir.mkdir()
    vdir.chmod(0o777)
    try:
        yield d, victim, vdir
    finally:
        remove_tree(d)
