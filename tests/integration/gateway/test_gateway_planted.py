"""root never opens, creates or copies through a name in the gateway's logs dir, which the xrootd
user writes: that user (the attacker) plants links to a root-owned file at every name a daemon's
stdout/stderr file had or could have there, right after the dir is handed over (before the
daemons start) and again before a restart; then a gateway whose stop() fails leaves its live
logs to the run's artifact copy, with each log replaced by a link to a root-only secret. The
victim keeps its content, and nothing of the secret lands in the run. (Over ssh, the same
attacker at work on a gateway host: tests/integration/gateway/test_gateway_agent_handover.py.)"""

from __future__ import annotations

import os

import pytest

from tests.support.gwcheck import xrootd_workdir
from tests.support.planted import VICTIM_TEXT, bait, link
from xcbench.backends.tmpfs import BACKEND
from xcbench.cell import Cell
from xcbench.gateway import launch, start_gateway
from xcbench.run import session
from xcbench.system.proc import ProcessSet
from xcbench.system.treewalk import Budget
from xcbench.system.xrootd_user import xrootd_ids

pytestmark = pytest.mark.integration
# what a daemon's stdout/stderr file was called there (a link at a .log name only stops the
# daemon, which opens its own log as the xrootd user: that user's own business)
OUTS = [f"{n}-{d}.out" for n in ("xcb", "mgr", "o1", "o2") for d in ("xrootd", "cmsd")]
LOGS = [n.replace(".out", ".log") for n in OUTS]


def plant_all(logs, markers, ids, round_: str) -> list:
    """Links at every .out name to a file that does not exist in a dir only root may write: a
    file there means root opened (created) it through the link."""
    return [p for p in (link(logs, n, markers / f"created-{round_}-{n}", ids) for n in OUTS)
            if p is not None]


def test_links_planted_in_the_logs_dir_are_never_opened(monkeypatch):
    ids = xrootd_ids()
    if ids is None:
        pytest.skip("the attack needs root handing the logs dir to the xrootd user")
    procs = ProcessSet()
    planted: list = []
    with bait() as (markers, victim, _vdir), xrootd_workdir("xcb-test-planted-") as wd:
        secret = victim.parent / "secret"
        secret.write_text("root's secret\n")
        secret.chmod(0o600)
        real = launch.gateway_security

        def plant_first(mode, sec, admin, ids_, host):  # the logs dir is the xrootd user's now
            planted.extend(plant_all(launch.logs_dir(admin), markers, ids, "start"))
            return real(mode, sec, admin, ids_, host)

        monkeypatch.setattr(launch, "gateway_security", plant_first)
        backend = BACKEND(None, wd, procs)
        gw = None
        target = backend.prepare(Cell(id="planted", label="x", backend="tmpfs", tmpfs_size=16 << 20))
        try:
            gw = start_gateway(target, workdir=wd, procs=procs, name="planted")
            logs = launch.logs_dir(gw._admin_dir)
            assert planted and all(p.is_symlink() for p in planted)
            # before a restart: the attacker swaps in links for what is there (its own logs)
            for n in OUTS:
                (logs / n).unlink(missing_ok=True)
            plant_all(logs, markers, ids, "restart")
            gw.restart()
            assert not [p.name for p in markers.iterdir() if p.name.startswith("created-")]
            assert gw.servers[0].out.parent == launch.out_dir(gw._admin_dir)
            assert gw.servers[0].out.stat().st_uid == 0 and gw.servers[0].out.parent.stat().st_uid == 0
            # a stop that fails before it copies the logs: they stay live, links to a secret
            monkeypatch.setattr(launch, "_keep_live_files", _boom)
            with pytest.raises(RuntimeError):
                gw.stop()
            for n in OUTS + LOGS:
                (logs / n).unlink(missing_ok=True)
                link(logs, n, secret, ids)
            dest = wd / "run-raw"
            session.copy_artifacts(gw, dest, Budget())
            kept = {p.name: p.read_text() for p in dest.iterdir()} if dest.exists() else {}
            assert kept and not [n for n, text in kept.items() if "secret" in text], kept
            assert [n for n in kept if n.endswith(".cfg")]  # the configs are copied all the same
        finally:
            procs.stop_all()
            monkeypatch.undo()
            if gw is not None:
                launch.remove_tree(gw._admin_dir)
            backend.cleanup(target)
        assert victim.read_text() == VICTIM_TEXT and oct(victim.stat().st_mode)[-3:] == "600"
        assert os.stat(secret).st_uid == 0


def _boom(*a, **k):
    raise RuntimeError("stop failed before the logs were copied")
