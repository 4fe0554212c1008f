"""One cell session: prepare the cell's target, start its gateway, and undo both in reverse.

    with CellSession(cell, cluster=cluster, workdir=wd, procs=procs) as s:
        evidence = s.verify()          # backend.verify(target, gateway)
        ... s.target, s.gateway, s.findings ...
    # the gateway is stopped, then the target cleaned up: on any exit, even if a step raises

The runner, the campaign/gateway/probe commands, the pytest plugin and the benchmarks all set a
cell up this way, so the order of setup and teardown is written once.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcbench.backends.base import get_backend
from xcbench.ceph.cluster import Cluster
from xcbench.gateway import start_gateway
from xcbench.gateway.cores import limit_origins
from xcbench.gateway.placement import origin_findings, origin_load, refuse_cores, uses_agents
from xcbench.gateway.remote import start_remote_gateway
from xcbench.system.fsutil import copy_files
from xcbench.system.treewalk import Budget

if TYPE_CHECKING:
    from xcbench.backends.base import Backend, Target
    from xcbench.cell import Cell
    from xcbench.gateway import Gateway
    from xcbench.system.proc import ProcessSet


class CellSession:
    """Context manager for one cell: ``backend``, ``target``, ``gateway`` (None when started
    with ``gateway=False``) and ``findings`` (the gateway's FINDING rows) while inside."""

    backend: Backend
    target: Target
    gateway: Gateway | None
    findings: list[dict]

    def __init__(self, cell: Cell, *, cluster: Cluster | None, workdir: Path, procs: ProcessSet,
                 name: str | None = None, report_addr: str | None = None, bind: str | None = None,
                 gateway: bool = True, hosts: Any = None, run_security: Any = None):
        self.cell, self.cluster, self.workdir, self.procs = cell, cluster, Path(workdir), procs
        self.hosts = hosts  # an xcbench.hosts.Inventory: origins on its gateway hosts
        self.name, self.report_addr, self.bind, self.with_gateway = name, report_addr, bind, gateway
        self.run_security = run_security  # xcbench.gateway.security.RunSecurity for a secure cell
        self.gateway = None
        self.findings = []
        self._stack: contextlib.ExitStack | None = None

    def __enter__(self) -> CellSession:
        if self.hosts is not None and getattr(self.cell, "cores", None):
            refuse_cores(self.cell, self.hosts)  # before anything is prepared
        stack = contextlib.ExitStack()
        try:
            self.backend = get_backend(self.cell.backend)(self.cluster, self.workdir, self.procs)
            stack.callback(self.backend.close)  # last: whatever the instance still holds
            self.target = self.backend.prepare(self.cell)
            stack.callback(self.backend.cleanup, self.target)
            if self.with_gateway:
                self.gateway = self._start()
                stack.callback(self.gateway.stop)
                cores = getattr(self.cell, "cores", None)
                if cores:  # the cores dimension: a CPU quota per origin
                    stack.callback(limit_origins(self.gateway, cores).close)
                self.findings = list(self.gateway.findings)
        except BaseException:
            stack.close()  # undo what was done, in reverse; the first error is the one raised
            raise
        self._stack = stack
        return self

    def _start(self) -> Gateway:
        kw: dict[str, Any] = {} if self.bind is None else {"bind": self.bind}
        if self.hosts is not None:
            kw["hosts"] = self.hosts
        security = getattr(self.cell, "security", "none") or "none"
        if security != "none":
            kw.update(security=security, run_security=self.run_security)
        # a gateway host over ssh: every part through a gateway agent on its host
        start = start_remote_gateway if uses_agents(self.hosts, self.cell.origins) else start_gateway
        return start(self.target, workdir=self.workdir, cluster=self.cluster,
                     origins=self.cell.origins, tunables=dict(self.cell.gateway_settings or {}),
                     report_addr=self.report_addr, procs=self.procs, name=self.name,
                     cell=self.cell, **kw)

    def _verify_gateway(self) -> Gateway:
        """A plain one-origin gateway for a check only (loopback, the backend's defaults)."""
        cid = self.target.cell_id
        return start_gateway(self.target, workdir=self.workdir / f"verify-{cid}",
                             cluster=self.cluster, procs=self.procs, name=f"verify-{cid}")

    def verify(self) -> dict:
        """The backend's evidence that the target is what the cell asked for. A backend that
        checks through a gateway gets the session's, or one started for the check."""
        if self.gateway is None and self.backend.verify_needs_gateway:
            with self._verify_gateway() as gw:
                return self.backend.verify(self.target, gw)
        return self.backend.verify(self.target, self.gateway)

    def origin_check(self) -> list[dict]:
        """Per-origin evidence (files, bytes each origin received); an origin that got none
        adds a FINDING to ``findings``. Call it after the campaign, before leaving."""
        if self.gateway is None:
            return []
        load = origin_load(self.gateway)
        self.findings += origin_findings(self.gateway, load)
        return load

    def keep(self) -> None:
        """Leave the gateway running and the target in place on exit (``xcbench gateway up``:
        ``gateway down`` undoes both from the recorded state)."""
        self._stack = None

    def __exit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()


ARTIFACTS_CAP = 1 << 30  # bytes of gateway logs and configs one run keeps at most


def copy_artifacts(session: Any, dest: Path, budget: Budget | None = None) -> None:
    """Rendered configs and logs of the session's gateway into the run (never keyrings): read
    through their directory's descriptor (a log the xrootd user replaced by a link, when the
    gateway's stop failed before it copied them, is never followed), each capped and all of the
    run's within ``budget`` (xcbench.system.fsutil.copy_files)."""
    gateway = getattr(session, "gateway", session)
    if gateway is None:
        return
    paths = [Path(p) for p in list(getattr(gateway, "config_paths", [])) +
             list(getattr(gateway, "log_paths", [])) if "keyring" not in Path(p).name]
    try:
        copy_files(paths, dest, budget or Budget(ARTIFACTS_CAP))
    except OSError:  # a full result store: the copies are lost, not the cell's measurements
        pass
