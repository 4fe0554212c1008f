"""The orchestrated run: walk a matrix, measure every layer, leave a result directory.

For the run: a network baseline (iperf3). For each cell: prepare the backend, start the
gateway(s), verify the target, start telemetry, run the fio probe, run the campaigns at each
concurrency level (x repeats), stop telemetry, clean up — records go to the store as they come.
At the end: verdicts, Parquet tables, the report.

Faults: a failed cell is recorded with its error and the matrix goes on. The first Ctrl-C
(or SIGTERM) lets the current record finish, stops every process the run started, flushes and
leaves the run resumable (`--resume`); a second one stops at once (cleanup still runs).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcbench import proc
from xcbench.cell import Cell
from xcbench.errors import XcbError
from xcbench.matrix import Matrix, load_matrix
from xcbench.store import RunDir

DONE = ("complete", "degraded")  # cell states --resume does not run again


class Interrupted(Exception):
    """The user asked the run to stop (Ctrl-C / SIGTERM)."""


@dataclass
class RunOptions:
    out: Path = Path("results")
    repeats: int | None = None  # overrides every cell's repeats
    resume: Path | None = None
    scale_ec: bool = False
    fio_hosts: list[str] | None = None
    baseline: bool = True
    probes: bool = True
    campaigns: bool = True
    report: bool = True
    report_format: str = "html"
    progress: bool = True
    name: str | None = None
    telemetry: str | None = None  # devices and intervals, "host:0.5,ceph" (None: all, defaults)
    extra: dict[str, Any] = field(default_factory=dict)


class StopFlag:
    """Signal handling for the run: first signal asks politely, the second interrupts."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._old: dict[int, Any] = {}

    def __enter__(self) -> StopFlag:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.event.is_set():
            raise KeyboardInterrupt
        self.event.set()

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def check(self) -> None:
        if self.event.is_set():
            raise Interrupted()


def _copy_artifacts(gateway: Any, dest: Path) -> None:
    """Rendered configs and logs into the run (never keyrings)."""
    dest.mkdir(parents=True, exist_ok=True)
    for p in list(getattr(gateway, "config_paths", [])) + list(getattr(gateway, "log_paths", [])):
        p = Path(p)
        if p.is_file() and "keyring" not in p.name:
            shutil.copy2(p, dest / f"{p.parent.name}-{p.name}" if (dest / p.name).exists() else dest / p.name)


class Runner:
    def __init__(self, matrix: Matrix, cluster: Any, run: RunDir, opts: RunOptions,
                 stop: StopFlag, view: Any = None):
        self.matrix, self.cluster, self.run, self.opts = matrix, cluster, run, opts
        self.stop, self.view = stop, view
        self.procs = proc.ProcessSet()
        self.scratch = Path(tempfile.mkdtemp(prefix=f"xcbench-{run.path.name}-", dir="/var/tmp"))
        os.chmod(self.scratch, 0o755)  # xrootd runs as its own user and must traverse it
        self._source: Any = None  # tmpfs source gateway for TPC modes, started on first need
        self._source_stack = contextlib.ExitStack()

    # -- records ---------------------------------------------------------------------------
    def sink(self, table: str, rows: list[dict]) -> None:
        self.run.append(table, rows)
        if self.view is not None:
            self.view.observe(table, rows)

    # -- the run ---------------------------------------------------------------------------
    def execute(self) -> None:
        try:
            if self.opts.baseline and not self.run.manifest.get("baseline_done"):
                self._baseline()
            for cell in self.matrix.cells:
                state = self.run.manifest["cells"].get(cell.id, {}).get("status")
                if state in DONE:
                    continue
                self.stop.check()
                self._cell(cell)
        finally:
            self._source_stack.close()
            self.procs.stop_all()
            shutil.rmtree(self.scratch, ignore_errors=True)

    def _baseline(self) -> None:
        from xcbench.baseline import iperf3
        if self.view:
            self.view.phase("baseline", "iperf3 on loopback")
        try:
            self.sink("baseline", [iperf3(procs=self.procs)])
            self.run.manifest["baseline_done"] = True
            self.run.save_manifest()
        except XcbError as e:
            self.run.manifest.setdefault("warnings", []).append(f"baseline: {e}")

    def _cell(self, cell: Cell) -> None:
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
            (self.run.raw_path("errors", f"{cell.id}.txt")).write_text(traceback.format_exc())
        self.run.set_cell(cell.id, status=status, error=error, finished=time.time(),
                          seconds=round(time.time() - t0, 1))
        if self.view:
            self.view.end_cell(cell, status, error)

    def _measure(self, cell: Cell, stack: contextlib.ExitStack) -> tuple[str, str | None]:
        from xcbench.backends import get_backend
        from xcbench.gateway import start_gateway
        workdir = self.scratch / cell.id
        workdir.mkdir(parents=True, exist_ok=True)
        os.chmod(workdir, 0o755)
        backend = get_backend(cell.backend)(self.cluster, workdir, self.procs)
        self._phase(cell, "prepare")
        target = backend.prepare(cell)
        stack.callback(backend.cleanup, target)
        listener = self._listener(stack)
        self._phase(cell, "gateway")
        gateway = start_gateway(target, workdir=workdir, cluster=self.cluster, origins=cell.origins,
                                tunables=dict(cell.gateway),
                                report_addr=listener.addr if listener else None,
                                procs=self.procs, name=f"gw-{cell.id}", cell=cell)
        stack.callback(_copy_artifacts, gateway, self.run.path / "raw" / "gateways" / cell.id)
        stack.callback(gateway.stop)
        self.sink("findings", [{**f, "cell_id": cell.id} for f in gateway.findings])
        self._phase(cell, "verify")
        evidence = self._verify(backend, target, gateway)
        self.run.set_cell(cell.id, target=target.info, verify=evidence, pool=target.pool,
                          backend_info=backend.describe())
        self._fingerprint(cell, target, gateway)
        telemetry = self._telemetry(cell, target, gateway, listener)
        if telemetry is not None:
            stack.enter_context(telemetry)
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
                    summary = self._campaign(cell, gateway, level, repeat)
                    failed += int(summary.get("failed") or 0)
                    total += int(summary.get("files") or 0)
                    if self.stop.event.is_set():
                        raise Interrupted()
        if failed:  # measured to the end, but not every file arrived: say so in the report
            return "degraded", (f"{failed} of {total} transfers failed after their retries "
                                "(see the transfers table: reason, error_scope, error_phase)")
        return "complete", None

    def _fingerprint(self, cell: Cell, target: Any, gateway: Any) -> None:
        from xcbench import fingerprint as fp
        layout = fp.layout_xattrs(target.path) if cell.backend == "cephfs" and target.path else None
        if layout is None and target.layout is not None:
            layout = {"stripe_unit": target.layout.stripe_unit, "object_size": target.layout.object_size,
                      "stripe_count": target.layout.stripe_count, "source": "xrdceph striper"}
        pool = fp.pool_settings(self.cluster, target.pool) if target.pool and self.cluster else None
        self.run.set_cell_fingerprint(cell.id, layout=layout, pool=pool,
                                      configs=fp.config_hashes(getattr(gateway, "config_paths", [])))

    def _phase(self, cell: Cell, what: str) -> None:
        if self.view:
            self.view.phase(cell.label, what)

    def _verify(self, backend: Any, target: Any, gateway: Any) -> dict:
        import inspect
        if "gateway" in inspect.signature(backend.verify).parameters:
            return backend.verify(target, gateway=gateway)
        return backend.verify(target)

    def _listener(self, stack: contextlib.ExitStack) -> Any:
        from xcbench.telemetry import ReportListener, wants
        if not wants(self.opts.telemetry, "gateway"):
            return None  # no gateway device: no xrd.report stream to listen to
        listener = ReportListener()
        stack.callback(listener.close)
        return listener

    def _telemetry(self, cell: Cell, target: Any, gateway: Any, listener: Any) -> Any:
        from xcbench import telemetry
        return telemetry.build(self.opts.telemetry, cell=cell, target=target, gateway=gateway,
                               listener=listener, cluster=self.cluster, sink=self.sink)

    def _probe(self, cell: Cell, target: Any) -> None:
        from xcbench.probe import run_probe
        raw = self.run.path / "raw" / "fio" / cell.id
        raw.mkdir(parents=True, exist_ok=True)
        run_probe(cell, target, cluster=self.cluster, workdir=self.scratch / cell.id / "fio",
                  sink=self.sink, raw_dir=raw, hosts=self.opts.fio_hosts)

    def _source_gateway(self) -> Any:
        """A tmpfs gateway holding the datasets: the TPC source "of infinite capacity"."""
        if self._source is None:
            from dataclasses import replace

            from xcbench.backends import get_backend
            from xcbench.gateway import start_gateway
            src_cell = replace(self.matrix.cells[0], backend="tmpfs", layout=None, pool=None,
                               tmpfs_size=max(c.file_size * c.files for c in self.matrix.cells) * 2,
                               id="source", label="tpc source")
            workdir = self.scratch / "source"
            workdir.mkdir(exist_ok=True)
            os.chmod(workdir, 0o755)
            backend = get_backend("tmpfs")(None, workdir, self.procs)
            target = backend.prepare(src_cell)
            self._source_stack.callback(backend.cleanup, target)
            gw = start_gateway(target, workdir=workdir, procs=self.procs, name="gw-source")
            self._source_stack.callback(gw.stop)
            self._source = gw
        return self._source

    def _campaign(self, cell: Cell, gateway: Any, level: int, repeat: int) -> dict:
        from xcbench.campaign import CampaignSpec, OptimizerSpec, run_campaign
        settings = dict(cell.campaign)
        opt = settings.pop("optimizer", None)
        if opt:  # true, or the optimizer's settings
            settings["optimizer"] = OptimizerSpec(**opt) if isinstance(opt, dict) else OptimizerSpec()
        # a small destination absorbs the campaign: each file goes once its checksum matched
        settings.setdefault("delete_after_verify", True)
        spec = CampaignSpec(files=cell.files, file_size=cell.file_size, size_dist=cell.size_dist,
                            mode=cell.mode, concurrency=level, repeat=repeat,
                            campaign_id=f"{cell.id}-c{level}-r{repeat}", **settings)
        source = self._source_gateway() if cell.mode != "push" else None
        return run_campaign(spec, dest=gateway, source=source, sink=self.sink, cell_id=cell.id,
                            progress=False, stop_event=self.stop.event)


def open_or_create(matrix: Matrix, opts: RunOptions, **info: Any) -> RunDir:
    if opts.resume:
        run = RunDir.open(opts.resume)
        for pq in run.path.glob("*.parquet"):  # derived from the JSONL; rewritten at the end
            pq.unlink()
        _supersede_partial(run)
        run.manifest["status"] = "running"
        run.manifest.setdefault("resumed", []).append(time.time())
        run.save_manifest()
        return run
    return RunDir.create(opts.out, name=opts.name, matrix=matrix.manifest(), **info)


def _supersede_partial(run: RunDir) -> None:
    """Records of cells that did not finish move to records/superseded/: kept, not analysed."""
    import json
    redo = {cid for cid, c in run.manifest.get("cells", {}).items() if c.get("status") not in DONE}
    if not redo:
        return
    old = run.path / "records" / "superseded"
    old.mkdir(exist_ok=True)
    for jl in (run.path / "records").glob("*.jsonl"):
        keep, moved = [], []
        for line in jl.read_text().splitlines(keepends=True):
            try:
                cid = json.loads(line).get("cell_id")
            except ValueError:
                continue  # a torn last line from a hard kill
            (moved if cid in redo else keep).append(line)
        if moved:
            with open(old / jl.name, "a") as fh:
                fh.writelines(moved)
            jl.write_text("".join(keep))


def run_matrix(matrix_path: str | Path | None, cluster: Any, opts: RunOptions,
               view: Any = None) -> RunDir:
    """Run a matrix (or resume a run) and return its RunDir; raises Interrupted on Ctrl-C
    after everything was flushed and stopped."""
    if opts.resume:
        prev = RunDir.open(opts.resume)
        matrix_path = prev.manifest.get("matrix", {}).get("path")
        opts.scale_ec = bool(prev.manifest.get("matrix", {}).get("scaled_ec")) or opts.scale_ec
        if not matrix_path or not Path(matrix_path).exists():
            raise XcbError(f"{opts.resume}: the run's matrix file {matrix_path!r} is gone")
    load_matrix(matrix_path)  # structure first: bad input fails before the cluster is asked
    matrix = load_matrix(matrix_path, cluster, scale_ec=opts.scale_ec) if cluster is not None \
        else load_matrix(matrix_path)
    run = open_or_create(matrix, opts, options={"repeats": opts.repeats, "scale_ec": opts.scale_ec,
                                                "fio_hosts": opts.fio_hosts},
                         cluster=_cluster_info(cluster))
    run.register_cells(c for c in matrix.cells if c.id not in run.cells)
    status = "complete"
    with StopFlag() as stop:
        runner = Runner(matrix, cluster, run, opts, stop, view)
        if view:
            view.begin(run, matrix)
        try:
            runner.execute()
        except (Interrupted, KeyboardInterrupt):
            status = "interrupted"
        finally:
            if view:
                view.finish()
            _conclude(run, status, opts)
    if status == "interrupted":
        raise Interrupted(str(run.path))
    return run


def _cluster_info(cluster: Any) -> dict[str, Any]:
    """What the plan's calibration and the report need to know of the cluster (no secrets)."""
    if cluster is None:
        return {}
    info: dict[str, Any] = {"conf": str(cluster.conf), "embedded": cluster.embedded,
                            "client_id": cluster.client_id, "fs_name": cluster.fs_name}
    with contextlib.suppress(Exception):
        info.update(num_osds=cluster.num_osds(), num_hosts=cluster.num_hosts(),
                    osd_max_object_size=cluster.osd_max_object_size())
    return info


def _conclude(run: RunDir, status: str, opts: RunOptions) -> None:
    """Verdicts, Parquet, report — each best effort, so a failure here loses no record."""
    cells = run.manifest["cells"].values()
    if status == "complete" and any(c.get("status") not in DONE for c in cells):
        status = "partial"
    try:
        from xcbench.analysis.attribution import attribute
        run.close()
        verdicts = attribute(run)
        done = {v["cell_id"] for v in verdicts}
        old = run.table("verdicts")
        if len(old):  # a resumed run: replace the verdicts of cells attributed again
            keep = old[~old["cell_id"].isin(done)].to_dict("records")
            (run.path / "records" / "verdicts.jsonl").unlink(missing_ok=True)
            run.append("verdicts", keep)
        run.append("verdicts", verdicts)
    except Exception as e:
        run.manifest.setdefault("warnings", []).append(f"attribution: {type(e).__name__}: {e}")
    run.finalize(status)
    if opts.report:
        try:
            from xcbench.analysis.report import render_report
            path = render_report([run.path], fmt=opts.report_format)
            run.manifest["report"] = str(path)
            if opts.report_format == "html":
                md = render_report([run.path], fmt="md")
                run.manifest["report_md"] = str(md)
        except Exception as e:
            run.manifest.setdefault("warnings", []).append(f"report: {type(e).__name__}: {e}")
        run.save_manifest()
