"""The xrootd user cannot make root run its code or write through its links: a gateway's dirs.

What the gateway user owns (its export, each daemon's admin path, the logs dir) is planted with
Python packages and links before the gateway starts (the export; the command's cwd) and while it
runs (every dir it was handed), then the gateway is restarted (root spawns its helpers again)
and stopped (root copies the logs). The planted code would write a marker in a dir only root
may write; no marker may appear, the links' targets keep their owner and content, and nothing
of theirs is copied into the kept dir. One gateway start (two origins, a redirector) covers it.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from tests.support.gwcheck import xrootd_workdir
from tests.support.planted import bait as planted_bait
from tests.support.planted import link, plant
from xcbench.backends.tmpfs import BACKEND as TMPFS
from xcbench.cell import Cell
from xcbench.gateway import start_gateway
from xcbench.system import proc
from xcbench.system.fsutil import remove_tree
from xcbench.system.xrootd_user import DAEMON_PATH, xrootd_ids

pytestmark = pytest.mark.integration

SECRET = "xcb-test-secret-token-value"


@pytest.fixture
def bait():
    """A root-only dir (markers: only root could write them) and the links' targets."""
    with planted_bait() as b:
        yield b


def test_planted_code_and_links_in_the_gateway_users_dirs_do_nothing(bait, monkeypatch):
    ids = xrootd_ids()
    if ids is None:
        pytest.skip("the attack needs root handing dirs to the xrootd user")
    markers, victim, vdir = bait
    monkeypatch.setenv("XCB_TEST_TOKEN", SECRET)  # root's environment: never a daemon's
    with xrootd_workdir("xcb-test-handover-") as wd:
        procs = proc.ProcessSet()
        backend = TMPFS(None, wd, procs)
        target = backend.prepare(Cell(id="handover", label="x", backend="tmpfs", tmpfs_size=64 << 20))
        export = Path(target.path)
        assert export.stat().st_uid == ids[0]
        # before: the export (the origins' dirs are made in it) and the command's own cwd
        link(export, "origin-1", vdir, ids)
        plant(export, ids, markers, "export")
        cwd = Path(tempfile.mkdtemp(prefix="xcb-test-cwd-", dir="/var/tmp"))
        cwd.chmod(0o755)
        os.chown(cwd, *ids)
        plant(cwd, ids, markers, "cwd")
        monkeypatch.chdir(cwd)
        gw = None
        try:
            gw = start_gateway(target, workdir=wd, procs=procs, origins=2, name="handover")
            admin = gw._admin_dir
            theirs = _root_tree_and_handed(admin, ids[0])
            # handed over: each daemon's admin path and the logs dir, nothing else of the tree
            assert theirs == {admin / "mgr", admin / "o1", admin / "o2", admin / "logs"}, theirs
            for s in gw.servers:
                env = Path(f"/proc/{s.pid}/environ").read_bytes().split(b"\0")
                names = {e.split(b"=", 1)[0].decode() for e in env if e}
                assert SECRET.encode() not in b"\0".join(env), s.name
                assert f"PATH={DAEMON_PATH}".encode() in env
                assert names <= {"PATH", "HOME", "LANG", "XRD_CPUSEPGWRTRD", "LISTEN_FDS",
                                 "LISTEN_PID"}, (s.name, names)
            # during: every dir the xrootd user was handed
            for d in theirs | {export, Path(target.origin_path(2))}:
                plant(d, ids, markers, d.name)
                link(d, "planted-link.log", victim, ids)
            os.mkfifo(admin / "logs" / "planted.fifo")
            os.lchown(admin / "logs" / "planted.fifo", *ids)
            gw.restart()  # root starts every helper again, now
            gw.stop()
            kept = gw.keep_dir
            copies = [p for p in kept.rglob("*") if p.is_file()]
            assert any(p.name == "o1-xrootd.log" for p in copies), copies
            assert not any("root's file" in p.read_text(errors="replace") for p in copies)
            assert not (kept / "planted-link.log").exists() and not (kept / "planted.fifo").exists()
        finally:
            if gw is not None:
                gw.stop()
            procs.stop_all()
            backend.cleanup(target)
            remove_tree(cwd)
    assert sorted(p.name for p in markers.iterdir()) == ["vdir", "victim"], "root ran planted code"
    st = victim.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode), victim.read_text()) == (0, 0o600, "root's file\n")
    assert vdir.stat().st_uid == 0  # never chowned through the link


def _root_tree_and_handed(admin: Path, uid: int) -> set[Path]:
    """The dirs of ``admin`` handed to ``uid`` (not entered); every other dir root's, not
    writable by anyone else."""
    theirs = set()
    for r, ds, _ in os.walk(admin):
        st = os.lstat(r)
        assert st.st_uid == 0 and not st.st_mode & 0o022, (r, oct(st.st_mode))
        for n in list(ds):
            if os.lstat(Path(r) / n).st_uid == uid:
                theirs.add(Path(r) / n)
                ds.remove(n)
    return theirs


def test_a_gateway_agents_part_hands_over_the_same_way(bait, monkeypatch):
    """What a gateway agent runs on an ssh gateway host (xcbench.gateway.agent_parts), here."""
    from xcbench.gateway.agent_parts import start_part
    ids = xrootd_ids()
    if ids is None:
        pytest.skip("the attack needs root handing dirs to the xrootd user")
    markers, victim, _ = bait
    monkeypatch.setenv("XCB_TEST_TOKEN", SECRET)
    with xrootd_workdir("xcb-test-handover-agent-") as wd:
        procs = proc.ProcessSet()
        backend = TMPFS(None, wd, procs)
        target = backend.prepare(Cell(id="handagent", label="x", backend="tmpfs", tmpfs_size=64 << 20))
        plant(Path(target.path), ids, markers, "export")
        monkeypatch.chdir(target.path)  # the agent's cwd: a dir of the xrootd user's
        gw = None
        try:
            gw = start_part(target, role="standalone", index=0, origins=1, name="handagent",
                            addr="127.0.0.1", manager=None, allow=("localhost",), tunables={},
                            report_addr=None, workdir=wd, ceph=None, procs=procs, timeout=30)
            admin = gw._admin_dir
            assert _root_tree_and_handed(admin, ids[0]) == {admin / "xcb", admin / "logs"}
            env = Path(f"/proc/{gw.servers[0].pid}/environ").read_bytes()
            assert SECRET.encode() not in env and f"PATH={DAEMON_PATH}".encode() in env
            for d in (admin / "xcb", admin / "logs"):
                plant(d, ids, markers, d.name)
                link(d, "planted-link.log", victim, ids)
            gw.stop()
            copies = [p for p in gw.keep_dir.rglob("*") if p.is_file()]
            assert any(p.name == "xcb-xrootd.log" for p in copies), copies
            assert not any("root's file" in p.read_text(errors="replace") for p in copies)
        finally:
            if gw is not None:
                gw.stop()
            procs.stop_all()
            backend.cleanup(target)
    assert sorted(p.name for p in markers.iterdir()) == ["vdir", "victim"], "root ran planted code"
    assert victim.read_text() == "root's file\n" and victim.stat().st_uid == 0


def test_benchmark_gateways_can_run_under_a_uid_of_their_own(other_user, monkeypatch):
    """--gateway-user / $XCBENCH_GATEWAY_USER: the daemons, the export and what is handed over
    are that user's, not the xrootd user's (a site's production xrootd shares that one)."""
    from xcbench.system.xrootd_user import USER_ENV, set_user
    monkeypatch.setenv(USER_ENV, "")  # restored after: set_user writes it
    set_user(other_user.name)
    with xrootd_workdir("xcb-test-gwuser-") as wd:
        procs = proc.ProcessSet()
        backend = TMPFS(None, wd, procs)
        target = backend.prepare(Cell(id="gwuser", label="x", backend="tmpfs", tmpfs_size=64 << 20))
        try:
            with start_gateway(target, workdir=wd, procs=procs, name="gwuser") as gw:
                status = Path(f"/proc/{gw.servers[0].pid}/status").read_text()
                uids = next(ln for ln in status.splitlines() if ln.startswith("Uid:")).split()[1:]
                assert int(uids[1]) == other_user.uid  # effective (xrootd -R keeps a saved 0)
                assert Path(target.path).stat().st_uid == other_user.uid
                admin = gw._admin_dir
                assert _root_tree_and_handed(admin, other_user.uid) == {admin / "xcb", admin / "logs"}
        finally:
            procs.stop_all()
            backend.cleanup(target)
