"""xcbench gateway up|down: a cell's target and XRootD gateway, for manual exploration.

    xcbench gateway up --matrix layouts/quick.yaml --cell <id|label>   # prepare, start, print URLs
    xcbench gateway down                                               # stop, clean the target up

``up`` leaves the gateway running and records it in ``<workdir>/gateway.json`` (``--wait`` keeps
it in the foreground until Ctrl-C instead); ``down`` stops exactly the processes recorded there
and runs the backend's cleanup.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from xcbench.backends.base import Target, backend_class, get_backend
from xcbench.cell import Layout
from xcbench.ceph.access import check_access
from xcbench.ceph.cluster import cluster_from_args
from xcbench.ceph.keys import remove_kept
from xcbench.commands import argcheck
from xcbench.commands.options import add_ceph_args
from xcbench.errors import XcbError
from xcbench.gateway import stop_recorded
from xcbench.gateway.security import RunSecurity
from xcbench.matrix import load_matrix
from xcbench.run.session import CellSession
from xcbench.system import orphans, proc, statedir
from xcbench.system.fsutil import remove_tree
from xcbench.system.proc import ProcessSet
from xcbench.system.signals import current
from xcbench.system.userfiles import read_json
from xcbench.system.xrootd_user import set_user

STATE = "gateway.json"


def add_parser(sub):
    p = sub.add_parser("gateway", help="start/stop a cell's XRootD gateway for manual exploration",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=("up", "down"),
                   help="up: start the gateway of a cell (--matrix, --cell); down: stop the one started")
    p.add_argument("--matrix", metavar="FILE", help="matrix file (up)")
    p.add_argument("--cell", metavar="ID", help="cell id, id prefix or label (up)")
    p.add_argument("--workdir", metavar="DIR",
                   help="where configs, logs and the state file go (default <state home>/gateway)")
    p.add_argument("--origins", type=int, help="override the cell's origins")
    p.add_argument("--gateway-user", metavar="USER",
                   help="the user the gateway's daemons run as (default: $XCBENCH_GATEWAY_USER, "
                        "else xrootd); a uid of its own keeps it apart from a production xrootd")
    p.add_argument("--report", metavar="HOST:PORT", help="xrd.report summaries to this UDP address")
    p.add_argument("--scale-ec", action="store_true", help="as for `xcbench matrix`")
    p.add_argument("--wait", action="store_true", help="stay in the foreground; Ctrl-C stops it")
    add_ceph_args(p)
    return p


def _target_from_json(d: dict):
    d = dict(d)
    if d.get("layout"):
        d["layout"] = Layout(**d["layout"])
    return Target(**d)


def _cluster(args, backend: str):
    """The cluster (none for a backend that never talks to Ceph, e.g. tmpfs)."""
    if not backend_class(backend).needs_cluster:
        return None
    return cluster_from_args(args)


def up(args) -> int:
    if not args.matrix or not args.cell:
        raise XcbError("gateway up: give --matrix FILE and --cell ID")
    argcheck.number("--origins", args.origins, 1, 64)
    argcheck.host_port("--report", args.report)
    set_user(args.gateway_user)
    workdir = _workdir(args)
    state_file = workdir / STATE
    if state_file.exists():
        raise XcbError(f"{state_file}: a gateway is already up here (run `xcbench gateway down"
                       f" --workdir {workdir}` first)")
    peek = load_matrix(args.matrix, scale_ec=args.scale_ec).cell(args.cell)
    cluster = _cluster(args, peek.backend)
    cell = load_matrix(args.matrix, cluster, scale_ec=args.scale_ec).cell(args.cell) if cluster else peek
    if cluster is not None:
        check_access(cluster, [cell], backend_class)
    if args.origins:
        cell = dataclasses.replace(cell, origins=args.origins)
    workdir.mkdir(parents=True, exist_ok=True)
    procs = ProcessSet()
    sec = None
    if cell.security != "none":  # its CA and tokens stay with the gateway until `down`
        sec = RunSecurity()
    session = CellSession(cell, cluster=cluster, workdir=workdir, procs=procs,
                          report_addr=args.report, run_security=sec)
    try:
        with session:
            session.verify()
            target, gw = session.target, session.gateway
            assert gw is not None  # a session started with its gateway
            state: dict[str, Any] = {"matrix": str(args.matrix), "cell": cell.id, "label": cell.label,
                     "backend": cell.backend, "target": dataclasses.asdict(target),
                     "gateway": gw.state()}
            if cluster is not None:  # the gateway reads its key copy after this process exits
                state["key_dir"] = cluster.keep_keys()
            state.update(host=statedir.HOST, uid=os.geteuid(), workdir=str(workdir))
            if sec is not None:  # CA, keys, tokens: removed by `down` (the issuer ends with us)
                state["security_dir"] = str(sec.dir)
            statedir.write_private(state_file, json.dumps(state, indent=2, default=str))
            session.keep()  # left running on purpose: `down` undoes what gateway.json records
    except BaseException:
        # a signal just as a daemon started is raised once the daemon is in ``procs`` but
        # before the gateway holds it (proc.spawn): the gateway's own stop cannot see it
        procs.stop_all()
        if sec is not None:
            sec.close()
        raise
    print(f"cell {cell.id} ({cell.label}): {target.backend} target {target.path or target.pool}")
    print(f"gateway {gw.name} up in {gw.start_seconds:.2f} s: {gw.root_url}  {gw.http_url}")
    for s in gw.servers:
        print(f"  {s.daemon:6} {s.role:10} pid {s.pid:<7} port {s.port}  {s.log}")
    for f in gw.findings:
        print(f"  FINDING [{f['severity']}] {f['what']}: {f['fix']}")
    if gw.client_env:
        print("  clients need: " + " ".join(f"{k}={v}" for k, v in gw.client_env.items()))
    if not args.wait:
        orphans.release()  # left running on purpose, recorded in gateway.json: not an orphan
        print(f"state in {state_file}; stop with: xcbench gateway down --workdir {workdir}")
        return 0
    try:
        with current().polite() as stop:  # SIGINT, SIGTERM, SIGHUP: down, as Ctrl-C does
            while not stop.wait(1.0):
                dead = [s for s in gw.servers if s.proc and not s.proc.alive()]
                if dead:
                    print(f"{dead[0].daemon} {dead[0].name} exited; see {dead[0].log}")
                    break
    except KeyboardInterrupt:
        pass
    return down(args)


def down(args) -> int:
    workdir = _workdir(args)
    state_file = workdir / STATE
    if not state_file.exists():
        raise XcbError(f"{state_file}: no gateway recorded here (nothing to stop)")
    try:
        state = read_json(state_file)
        why = record_problem(state_file, state, workdir)
        target = _target_from_json(state["target"])
    except (ValueError, KeyError, TypeError) as e:
        raise XcbError(f"{state_file}: unreadable gateway state ({e})") from e
    if why is not None:
        raise XcbError(f"{state_file}: left alone, not acted on: {why}")
    pids = stop_recorded(state["gateway"])
    cluster = _cluster(args, state["backend"])
    get_backend(state["backend"])(cluster, workdir, None).cleanup(target)
    remove_kept(state.get("key_dir"))
    _remove_security(state.get("security_dir"))
    state_file.unlink()
    print(f"gateway {state['gateway']['name']} down ({len(pids)} processes stopped); "
          f"{state['backend']} target of cell {state['cell']} cleaned up; logs in {state['gateway']['keep_dir']}")
    return 0


def _workdir(args) -> Path:
    if args.workdir is None:
        return statedir.ensure(statedir.home() / "gateway")
    argcheck.directory("--workdir", args.workdir)
    argcheck.ours("--workdir", args.workdir)
    return Path(args.workdir).absolute()


GATEWAY_DAEMONS = ("xrootd", "cmsd")


def record_problem(path: Path, state: dict, workdir: Path) -> str | None:
    """Why ``gateway.json`` may not be acted on (None: it may): the file is ours (owner, mode,
    host); what it names is what `gateway up` makes: its kept dir under the workdir, its admin
    dir an xcbgw-* dir, configs in those, processes that are xrootd/cmsd running that config,
    target dirs and mounts under the workdir or named xcb-*."""
    why = statedir.record_problem(path) or statedir.host_problem(state)
    if why is not None:
        return why
    if state.get("uid") != os.geteuid():
        return f"written by uid {state.get('uid')!r}, not by this user"
    gw = state["gateway"]
    keep, live, admin = (Path(str(gw[k])) for k in ("keep_dir", "live_dir", "admin_dir"))
    if not keep.is_relative_to(workdir) or keep == workdir:
        return f"its kept dir {keep} is not in {workdir}"
    if not admin.name.startswith("xcbgw-") or admin.is_symlink():
        return f"its admin dir {admin} is not one xcbench makes (xcbgw-*)"
    if live not in (keep, admin / "live"):
        return f"its live dir {live} is neither its kept dir nor in its admin dir"
    for s in gw["servers"]:
        cfg = Path(str(s["config"]))
        if not (cfg.is_relative_to(keep) or cfg.is_relative_to(admin)) or ".." in cfg.parts:
            return f"server {s.get('name')}: config {cfg} is not in the gateway's dirs"
        pid = s.get("pid")
        if pid is not None and (not isinstance(pid, int) or pid < 2):
            return f"server {s.get('name')}: pid {pid!r} is not a pid"
        argv = (proc.cmdline(pid) or []) if pid else []
        if argv and not any(os.path.basename(w) in GATEWAY_DAEMONS for w in argv):
            return f"server {s.get('name')}: pid {pid} runs {os.path.basename(argv[0])}, not xrootd/cmsd"
    for item in state["target"].get("created") or []:
        kind, _, where = str(item).partition(":")
        if kind in ("dir", "mount"):
            p = Path(where)
            if not p.is_absolute() or ".." in p.parts or not (
                    p.is_relative_to(workdir) or p.name.startswith(("xcb-", "xcbench-"))):
                return f"its target names {kind} {where}, not one xcbench makes"
    return None


def main(args) -> int:
    return up(args) if args.action == "up" else down(args)


def _remove_security(path: str | None) -> None:
    """The security dir `up` recorded: only an xcbsec-* dir of ours (owner, name) is removed."""
    if not path:
        return
    p = Path(path)
    if p.name.startswith("xcbsec-") and p.is_dir() and not p.is_symlink() and p.stat().st_uid == os.geteuid():
        remove_tree(p, what="gateway security dir")
