"""The orchestrated run: walk a matrix, measure every layer, leave a result directory.

For the run: a network baseline (iperf3). For each cell: prepare the backend, start the
gateway(s), verify the target, start telemetry, run the fio probe, run the campaigns at each
concurrency level (x repeats), stop telemetry, clean up — records go to the store as they come.
At the end: the Parquet tables and the run's status. The verdicts and the report are the
caller's, from the finished run (xcbench.analysis.conclude): nothing here imports the analysis.
A caller extends a run through ``RunOptions.hooks`` (xcbench.run.hooks), not by subclassing.

Faults: a failed cell is recorded with its error and the matrix goes on. The first Ctrl-C
(SIGINT, SIGTERM or SIGHUP: xcbench.system.signals) lets the current record finish, stops every
process the run started, flushes and leaves the run resumable (`--resume`); a second one stops
at once (cleanup still runs).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xcbench import telemetry
from xcbench.backends.base import Target
from xcbench.campaign import CampaignSpec, OptimizerSpec, run_campaign
from xcbench.cell import Cell
from xcbench.cell.classes import campaign_sizes
from xcbench.ceph.cluster import Cluster
from xcbench.ceph.pools import pool_settings
from xcbench.errors import XcbError
from xcbench.gateway import Gateway
from xcbench.gateway.config import gateway_inputs
from xcbench.gateway.security import RunSecurity
from xcbench.matrix import Matrix
from xcbench.network.addressing import report_host
from xcbench.network.baseline import iperf3
from xcbench.probe.jobs import run_probe
from xcbench.run import matrix_sections  # noqa: F401 (the checks of a matrix's sections)
from xcbench.run.hooks import DeviceCounter, RunHooks
from xcbench.run.hostrun import RunHosts
from xcbench.run.options import RunOptions, RunStopped
from xcbench.run.session import ARTIFACTS_CAP, CellSession, copy_artifacts
from xcbench.scaleout.engine import pop_engine
from xcbench.store import fingerprint as fp
from xcbench.store.manifest import DONE
from xcbench.store.rundir import RunDir
from xcbench.system import orphans, proc, secrets
from xcbench.system.fsutil import remove_tree
from xcbench.system.signals import Interrupted, StopFlag
from xcbench.system.treewalk import Budget
from xcbench.telemetry import ReportListener, TelemetryRunner
from xcbench.telemetry.gateway import report_listener
from xcbench.telemetry.gateway_cpu_meter import GatewayCpuMeter

__all__ = ["DONE", "Interrupted", "RunHooks", "RunOptions", "RunStopped", "Runner", "StopFlag",
           "open_or_create", "run_matrix"]


class Runner:
    def __init__(self, matrix: Matrix, cluster: Cluster | None, run: RunDir, opts: RunOptions,
                 stop: StopFlag, view: Any = None):
        self.matrix, self.run, self.opts = matrix, run, opts
        # the backends and the gateway still take the concrete handle (xcbench.ceph.cluster)
        self.cluster = cluster
        self.stop, self.view = stop, view
        self.procs = proc.ProcessSet()
        self.scratch = Path(tempfile.mkdtemp(prefix=f"xcbench-{run.path.name}-", dir="/var/tmp"))
        os.chmod(self.scratch, 0o755)  # xrootd runs as its own user and must traverse it
        orphans.note_dir(self.scratch)  # after a kill -9, the next command removes it
        self._sources: dict[str, Any] = {}  # tmpfs source gateway per security mode, for TPC modes
        self._security: Any = None  # the run's CA and token issuer (xcbench.gateway.security)
        self._source_stack = contextlib.ExitStack()
        self.hosts: Any = None  # xcbench.run.hostrun.RunHosts with an inventory
        if opts.hosts is not None:
            self.hosts = RunHosts(opts.hosts, run, self.procs)

    # -- records ---------------------------------------------------------------------------
    def sink(self, table: str, rows: list[dict]) -> None:
        self.run.append(table, rows)
        if self.view is not None:
            self.view.observe(table, rows)

    # -- the run ---------------------------------------------------------------------------
    def execute(self) -> None:
        try:
            if self.hosts is not None:
                self.hosts.start()  # clock offsets into the manifest
            if self.opts.baseline and not self.run.state.baseline_done:
                self._baseline()
            for cell in self.matrix.cells:
                state = self.run.cells.get(cell.id)
                if state is not None and state.done:
                    continue
                self.stop.check()
                self._cell(cell)
        finally:
            self._source_stack.close()
            self.procs.stop_all()
            if self._security is not None:
                self._security.close()
            remove_tree(self.scratch, unmount=True, what="scratch")  # never crosses a mount

    def _baseline(self) -> None:
        rows = self.opts.hooks.baseline_rows()
        if rows:  # rows that stand for this run's (the self-test's uncapped run's)
            self.sink("baseline", rows)
            self.run.state.baseline_done = True
            self.run.save_manifest()
            return
        pairs, pair_runner = self.hosts.baseline() if self.hosts else (None, None)
        if self.view:
            self.view.phase("baseline", f"iperf3 over {len(pairs)} host pairs" if pairs
                            else "iperf3 on loopback")
        try:
            self.sink("baseline", iperf3(pairs, procs=self.procs, run=self.run, sink=self.sink,
                                         pair_runner=pair_runner, **self.opts.extra.get("baseline", {})))
            self.run.state.baseline_done = True
            self.run.save_manifest()
        except XcbError as e:
            self.run.warn(f"baseline: {e}")

    def _cell(self, cell: Cell) -> None:
        try:
            self._run_cell(cell)
        finally:
            self.opts.hooks.cell_end(cell, self.run)

    def _run_cell(self, cell: Cell) -> None:
        t0 = time.time()
        self.run.set_cell(cell.id, label=cell.label, status="running", started=t0, error=None)
        if self.view:
            self.view.start_cell(cell)
        status, error = "complete", None
        try:
            with contextlib.ExitStack() as stack:
                status, error = self._measure(cell, stack)
        except (Interrupted, KeyboardInterrupt):
            self.run.set_cell(cell.id, status="interrupted", finished=time.time(),
                              error="interrupted by the user")
            raise Interrupted() from None
        except XcbError as e:
            status, error = "failed", str(e)
        except Exception as e:  # a bug or an unexpected fault: record it, go on with the matrix
            status, error = "failed", f"{type(e).__name__}: {e}"
            with contextlib.suppress(OSError):  # a full result store must not end the run
                # a client library's exception may quote its request headers or a token
                (self.run.raw_path("errors", f"{cell.id}.txt")).write_text(
                    secrets.scrub(traceback.format_exc()))
        self.run.set_cell(cell.id, status=status, error=error, finished=time.time(),
                          seconds=round(time.time() - t0, 1))
        if self.view:
            self.view.end_cell(cell, status, error)

    def _measure(self, cell: Cell, stack: contextlib.ExitStack) -> tuple[str, str | None]:
        workdir = self.scratch / cell.id
        workdir.mkdir(parents=True, exist_ok=True)
        os.chmod(workdir, 0o755)
        listener = self._listener(stack)
        session = CellSession(cell, cluster=self.cluster, workdir=workdir, procs=self.procs,
                              name=f"gw-{cell.id}", report_addr=listener.addr if listener else None,
                              run_security=self._run_security(cell),
                              **({"hosts": self.opts.hosts} if self.hosts else {}))
        # after the session's exit (gateway stopped: its logs are final)
        stack.callback(self._copy_artifacts, session, self.run.path / "raw" / "gateways" / cell.id)
        self._phase(cell, "prepare, gateway")
        stack.enter_context(session)
        backend, target, gateway = session.backend, session.target, session.gateway
        assert gateway is not None  # the session starts one unless told not to
        self.sink("findings", [{**f, "cell_id": cell.id} for f in session.findings])
        self._phase(cell, "verify")
        evidence = self._verify(session)
        self.run.set_cell(cell.id, target=target.info, verify=evidence, pool=target.pool,
                          backend_info=backend.describe())
        self._fingerprint(cell, session)
        self.opts.hooks.cell_ready(cell, target, gateway)
        devices = self._telemetry(cell, target, gateway, listener)
        if devices is not None:
            stack.callback(self._count_lost, devices.lost)  # after the device stopped
            stack.enter_context(devices)
        self.stop.check()
        if self.opts.probes:
            self._phase(cell, "fio probe")
            self._probe(cell, target)
        self.stop.check()
        failed, total = 0, 0
        if self.opts.campaigns:
            repeats = self.opts.repeats or cell.repeats
            for repeat in range(repeats):
                for level in cell.concurrency:
                    self.stop.check()
                    self._phase(cell, f"campaign c={level} r={repeat + 1}/{repeats}")
                    t_level = time.time()
                    with self.opts.hooks.level(cell, level, repeat):
                        summary = self._campaign(cell, gateway, level, repeat)
                    if devices is not None:  # devices that read the level's window afterwards
                        devices.level_end(t_level, time.time(), concurrency=level, repeat=repeat)
                    failed += int(summary.get("failed") or 0)
                    total += int(summary.get("files") or 0)
                    if self.stop.event.is_set():
                        raise Interrupted()
        if self.hosts is not None and self.opts.campaigns:  # every origin got files (evidence)
            seen = len(session.findings)
            self.run.set_cell(cell.id, origins=session.origin_check())
            self.sink("findings", [{**f, "cell_id": cell.id} for f in session.findings[seen:]])
        if failed:  # measured to the end, but not every file arrived: say so in the report
            return "degraded", (f"{failed} of {total} transfers failed after their retries "
                                "(see the transfers table: reason, error_scope, error_phase)")
        return "complete", None

    def _copy_artifacts(self, session: Any, dest: Path) -> None:
        if self.run.has_room():  # a full store keeps its reserve for the manifest
            # one budget for the whole run (session.ARTIFACTS_CAP bytes of gateway logs, configs)
            budget = self.__dict__.setdefault("_artifacts", Budget(ARTIFACTS_CAP))
            copy_artifacts(session, dest, budget)

    def _count_lost(self, lost: dict[str, dict]) -> None:
        """Rows a sink refused upstream of the store (the store counts its own): the manifest."""
        for table, v in lost.items():
            self.run.state.lost(table, int(v["rows"]), str(v["error"]))
        if lost:
            self.run.save_manifest()

    def _fingerprint(self, cell: Cell, session: Any) -> None:
        target = session.target
        layout = session.backend.layout_evidence(target)
        pool = pool_settings(self.cluster, target.pool) if target.pool and self.cluster else None
        inputs = {**gateway_inputs(target, cell.gateway_settings, cell.origins), "templates": fp.template_hashes()}
        # hashed: what defines the measurement; the rendered configs (ports, temp paths) are
        # recorded for tracing only
        self.run.set_cell_fingerprint(
            cell.id, layout=layout, pool=pool,
            gateway=fp.scrub(inputs),
            versions=fp.versions_digest(),
            configs=fp.config_hashes(getattr(session.gateway, "config_paths", [])))

    def _phase(self, cell: Cell, what: str) -> None:
        if self.view:
            self.view.phase(cell.label, what)

    def _verify(self, session: Any) -> dict:
        return session.verify()

    def _listener(self, stack: contextlib.ExitStack) -> ReportListener | None:
        if not telemetry.wants(self.opts.telemetry, "gateway"):
            return None  # no gateway device: no xrd.report stream to listen to
        if self.hosts is not None:  # where the gateway hosts reach it
            listener = report_listener(self.opts.hosts)
        else:
            listener = ReportListener()
        stack.callback(listener.close)
        return listener

    def _telemetry(self, cell: Cell, target: Target, gateway: Gateway,
                   listener: ReportListener | None) -> TelemetryRunner | None:
        return telemetry.build(self.opts.telemetry, cell=cell, target=target, gateway=gateway,
                               listener=listener, cluster=self.cluster, sink=self.sink,
                               hosts=self.hosts.inv if self.hosts is not None else None,
                               prometheus=self.opts.extra.get("prometheus"),
                               raw_dir=self.run.path / "raw")

    def _probe(self, cell: Cell, target: Target) -> None:
        given = self.opts.hooks.probe_rows(cell)
        if given is not None and given[0]:  # rows that stand for this cell's (the self-test's)
            rows, origin = given
            self.sink("probes", rows)
            self.run.set_cell(cell.id, probes_from=origin)
            return
        raw = self.run.path / "raw" / "fio" / cell.id
        raw.mkdir(parents=True, exist_ok=True)
        run_probe(cell, target, cluster=self.cluster, workdir=self.scratch / cell.id / "fio",
                  sink=self.sink, raw_dir=raw, hosts=self.opts.fio_hosts,
                  device=self.opts.hooks.device_counter(cell),
                  levels=cell.concurrency if self.opts.campaigns else ())

    def _run_security(self, cell: Cell) -> Any:
        """The run's security material, made when the first secure cell needs it."""
        if (getattr(cell, "security", "none") or "none") == "none":
            return None
        if self._security is None:
            self._security = RunSecurity()
        return self._security

    def _source_gateway(self, security: str = "none") -> Any:
        """A tmpfs gateway holding the datasets: the TPC source "of infinite capacity" (one per
        security mode: a secure destination pulls from a secure source, as between sites)."""
        if security not in self._sources:
            from dataclasses import replace

            src_cell = replace(self.matrix.cells[0], backend="tmpfs", layout=None, pool=None,
                               tmpfs_size=max(c.file_size * c.files for c in self.matrix.cells) * 2,
                               id="source", label="tpc source", origins=1, gateway_settings={},
                               security=security)
            workdir = self.scratch / f"source-{security}"
            workdir.mkdir(exist_ok=True)
            os.chmod(workdir, 0o755)
            bind = None
            if self.hosts is not None:  # the gateway hosts pull from it
                bind = report_host(self.opts.hosts)
            session = self._source_stack.enter_context(
                CellSession(src_cell, cluster=None, workdir=workdir, procs=self.procs,
                            name=f"gw-source-{security}", bind=bind,
                            run_security=self._run_security(src_cell)))
            self._sources[security] = session.gateway
        return self._sources[security]

    def _campaign(self, cell: Cell, gateway: Gateway, level: int, repeat: int) -> dict:
        settings = dict(cell.campaign)
        engine = pop_engine(settings) or run_campaign  # campaign.engine: local | fts3 (one job a level)
        opt = settings.pop("optimizer", None)
        if opt:  # true, or the optimizer's settings
            settings["optimizer"] = OptimizerSpec(**opt) if isinstance(opt, dict) else OptimizerSpec()
        # a small destination absorbs the campaign: each file goes once its checksum matched
        settings.setdefault("delete_after_verify", True)
        if cell.streams is not None:  # the streams dimension wins over campaign.streams
            settings["streams"] = cell.streams
        # direction read | mixed: the dataset is written into the gateway once per cell, then
        # read at each level (xcbench.campaign.reads, through run_campaign)
        spec = CampaignSpec(files=cell.files, **campaign_sizes(cell),
                            mode=cell.mode, concurrency=level, repeat=repeat,
                            campaign_id=f"{cell.id}-c{level}-r{repeat}",
                            direction=cell.direction, **settings)
        source = self._source_gateway(cell.security) if cell.mode != "push" else None
        sink = self._metered_sink(cell, gateway, source)
        if self.hosts is not None and engine is run_campaign:  # from the client hosts, merged
            return self.hosts.campaign(spec, dest=gateway, source=source, sink=sink,
                                       cell_id=cell.id, stop_event=self.stop.event)
        return engine(spec, dest=gateway, source=source, sink=sink, cell_id=cell.id,
                   progress=False, stop_event=self.stop.event)

    def _metered_sink(self, cell: Cell, gateway: Gateway, source: Any = None) -> Callable[[str, list[dict]], None]:
        """The run's sink, with the gateway's CPU per GB of the level added to its campaign row
        (xcbench.telemetry.gateway_cpu_meter): the meter starts now and reads again when the row comes.
        A TPC level also meters its source gateway: serving the pulls and the source checksums
        (the dataset is staged as local files, xcbench.campaign.staging: no CPU of the source's)."""
        meter = GatewayCpuMeter(gateway, security=getattr(cell, "security", "none") or "none")
        src = GatewayCpuMeter(source, link_bytes=lambda s: None) if source is not None else None
        device: DeviceCounter | None = self.opts.hooks.device_counter(cell)
        dev0 = (time.monotonic(), *device()) if device is not None else None
        meter.start()
        if src is not None:
            src.start()

        def sink(table: str, rows: list[dict]) -> None:
            if table == "campaigns":
                rows = [{**r, **meter.finish(r.get("bytes"), r.get("direction")),
                         "source_cpu_s_per_gb": src.finish(r.get("bytes"))["gateway_cpu_s_per_gb"]
                         if src is not None else None} for r in rows]
                if device is not None and dev0 is not None:  # the device's writes/s over the level
                    dt = max(1e-3, time.monotonic() - dev0[0])
                    n, b = device()
                    rows = [{**r, "device_write_iops": (n - dev0[1]) / dt,
                             "device_write_bytes_per_s": (b - dev0[2]) / dt} for r in rows]
            self.sink(table, rows)
        return sink


def open_or_create(matrix: Matrix, opts: RunOptions, **info: Any) -> RunDir:
    """The run to record into: ``opts.resume``'s (made ready to go on), or a new one."""
    if opts.resume:
        run = RunDir.open(opts.resume)
        run.resume()
        return run
    return RunDir.create(opts.store, name=opts.name, matrix=matrix.manifest(), **info)


def run_matrix(matrix: Matrix, cluster: Cluster | None, opts: RunOptions,
               view: Any = None) -> RunDir:
    """Run a parsed matrix (for --resume: the run's own, see commands.run.load_run_matrix) and
    return its RunDir, finalized; raises RunStopped on Ctrl-C after everything was flushed and
    stopped. A signal from the run directory's creation on is a polite stop: the run is
    finalized (interrupted) and resumable, never left saying `running`. The verdicts and the
    report are the caller's (xcbench.analysis.conclude), in either case."""
    between = opts.between_run
    with StopFlag() as stop, stop.polite():  # the command's own flag when there is one (cli.main)
        run = open_or_create(matrix, opts, options={"repeats": opts.repeats, "scale_ec": opts.scale_ec,
                                                    "fio_hosts": opts.fio_hosts},
                             cluster=_cluster_info(cluster),
                             **({"between_run": between} if between else {}))
        run.register_cells(c for c in matrix.cells if c.id not in run.cells)
        status = "complete"
        r = Runner(matrix, cluster, run, opts, stop, view)
        if view:
            view.begin(run, matrix)
        try:
            r.execute()
        except (Interrupted, KeyboardInterrupt):
            status = "interrupted"
        finally:
            if view:
                view.finish()
            _finish(run, status)
    if status == "interrupted":
        raise RunStopped(run)
    return run


def _cluster_info(cluster: Cluster | None) -> dict[str, Any]:
    """What the plan's calibration and the report need to know of the cluster (no secrets)."""
    if cluster is None:
        return {}
    info: dict[str, Any] = {"conf": str(cluster.conf), "embedded": cluster.embedded,
                            "client_id": cluster.ceph_id, "fs_name": cluster.fs_name}
    with contextlib.suppress(Exception):
        info.update(num_osds=cluster.num_osds(), num_hosts=cluster.num_hosts(),
                    osd_max_object_size=cluster.osd_max_object_size())
    return info


def _finish(run: RunDir, status: str) -> None:
    """The Parquet tables and the run's status ("partial": a cell not done)."""
    if status == "complete" and any(not c.done for c in run.cells.values()):
        status = "partial"
    run.finalize(status)
    if run.unsaved:  # one line for the user; on disk the run still says where it was
        run.warn(f"{run.path / 'manifest.json'} not updated ({run.unsaved}): the run stays resumable "
                 f"— free space in the result store, then `xcbench run --resume {run.path}`")
