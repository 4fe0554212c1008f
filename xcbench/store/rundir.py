"""Result store: one directory per run.

    <store>/<run-id>/manifest.json         schema version, matrix, cells, fingerprint, status
    <store>/<run-id>/records/<table>.jsonl appended record by record (flushed: a crash loses none)
    <store>/<run-id>/<table>.parquet       written by finalize() from the JSONL (and by
                                           replace_table() in a finalized run)
    <store>/<run-id>/raw/...               raw fio JSON, gateway logs, rendered configs

Table names and columns: xcbench.store.tables.TABLES. Nested values (labels, settings, evidence)
are stored as JSON text with sorted keys, so Parquet columns stay flat.

Manifest (schema 2)::

    schema_version, run_id, start, end, status (running|complete|failed|interrupted)
    matrix        what the run was given (path, name, the matrix data) - as passed to create()
    cells         {cell_id: {label, backend, settings (Cell.settings()), status, error, start, end,
                             fingerprint: {layout, pool, configs, ..., digest}}}
    fingerprint   {versions: {ceph, xrootd, fio, gfal2, iperf3, xcbench, packages: {...}},
                   host: {hostname, os, kernel, cpus, mem_bytes, ...}, versions_digest}
    tables_version the shape of the rows in records/ and *.parquet (xcbench.store.upgrade)
    upgraded_from the schema version found on disk, when open() upgraded the manifest

Cell status: pending -> running -> complete | degraded (measured, some transfers failed) |
failed | skipped | interrupted.
open() refuses a newer run (upgrade xcbench) and upgrades an older one in memory, its tables at
each read (xcbench.store.upgrade); the typed form (Manifest, CellState): xcbench.store.manifest.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.store import reserve
from xcbench.store.fingerprint import cell_fingerprint, run_fingerprint
from xcbench.store.jsonl import (
    append_lines,
    open_append,
    read_jsonl,
    rewrite_lines,
    split_lines,
    write_all,
)
from xcbench.store.manifest import (
    CELL_STATUSES,
    DONE,
    SCHEMA_VERSION,
    CellState,
    LostRows,
    Manifest,
)
from xcbench.store.reserve import RESERVE
from xcbench.store.storedir import check_store
from xcbench.store.tables import TABLES
from xcbench.store.upgrade import TABLES_VERSION, columns_to_read, update_manifest, update_table
from xcbench.system.secrets import redact, scrub_known
from xcbench.system.userfiles import read_json

__all__ = ["CELL_STATUSES", "DONE", "RESERVE", "SCHEMA_VERSION", "CellState", "LostRows",
           "Manifest", "RunDir",
           "read_jsonl", "upgrade_manifest", "write_json"]
log = logging.getLogger(__name__)
DEFAULT_STORE = "results"  # the `--store` default; XCBENCH_STORE overrides it


def default_store() -> Path:
    return Path(os.environ.get("XCBENCH_STORE") or DEFAULT_STORE)



def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat()


def _json_bytes(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode()


def write_json(path: str | os.PathLike, data: Any) -> None:
    """Atomic JSON write (tmp + rename; never through a link: O_NOFOLLOW, and the rename
    replaces a link at ``path`` rather than follow it)."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(_json_bytes(data))
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk: the old file stays whole
        raise


def load_json(path: str | os.PathLike) -> Any:
    return read_json(path)


class RunDir:
    def __init__(self, path: str | os.PathLike, manifest: Manifest | dict[str, Any]):
        self.path = Path(path)
        self.state = manifest if isinstance(manifest, Manifest) else \
            Manifest.from_dict(manifest, self.path)
        self._lock = threading.Lock()
        self._files: dict[str, int] = {}  # table -> fd opened O_APPEND
        self._full = False  # a write met ENOSPC: append only while has_room()
        self._lost_saved = 0.0
        self.unsaved: str | None = None  # why the last save_manifest() failed

    @property
    def manifest(self) -> dict[str, Any]:
        """The manifest as its JSON (a snapshot for readers: change ``state`` instead)."""
        return self.state.to_dict()

    @classmethod
    def create(cls, store: str | os.PathLike, *, name: str | None = None,
               matrix: dict[str, Any] | None = None, fingerprint: bool | dict = True,
               **info: Any) -> RunDir:
        """A new run directory. ``fingerprint``: True collects versions + host info
        (xcbench.store.fingerprint.run_fingerprint, ~1 s), a dict is stored as given, False: {}."""
        if fingerprint is True:
            fingerprint = run_fingerprint()
        now = _dt.datetime.now(_dt.UTC)
        name = name or now.strftime("%Y%m%dT%H%M%SZ")
        path = check_store(store) / name
        n = 1
        while path.exists():
            n += 1
            path = Path(store) / f"{name}-{n}"
        (path / "records").mkdir(parents=True)
        manifest = Manifest.from_dict(
            {"schema_version": SCHEMA_VERSION, "tables_version": TABLES_VERSION, "run_id": path.name, "start": now.isoformat(),
             "end": None, "status": "running", "matrix": matrix, "cells": {},
             "fingerprint": fingerprint or {}, **info}, path)
        run = cls(path, manifest)
        run.save_manifest()
        reserve.make(path)
        return run

    @classmethod
    def open(cls, path: str | os.PathLike) -> RunDir:
        """Open a run dir (or its manifest.json); an older schema is upgraded in memory."""
        path = Path(path)
        if path.name == "manifest.json":
            path = path.parent
        if not (path / "manifest.json").exists():
            raise XcbError(f"{path}: not a run directory (no manifest.json)")
        return cls(path, Manifest.from_dict(load_json(path / "manifest.json"), path))

    def resume(self) -> None:
        """Make a stopped run ready to go on: its derived Parquet files go (finalize() rewrites
        them), the records of cells that did not finish are superseded, status is running."""
        for pq in self.path.glob("*.parquet"):
            pq.unlink()
        self.supersede_partial()
        self.state.status = "running"
        self.state.resumed = [*(self.state.resumed or []), time.time()]
        self.save_manifest()
        reserve.make(self.path)

    def supersede_partial(self) -> None:
        """Records of cells that did not finish move to records/superseded/: kept, not analysed.
        A torn line (a hard kill mid-write) is dropped, with a warning. Each table is rewritten
        atomically (tmp + rename): a kill during the resume loses nothing either."""
        redo = {cid for cid, c in self.state.cells.items() if not c.done}
        old = self.path / "records" / "superseded"
        for jl in sorted((self.path / "records").glob("*.jsonl")):
            keep, moved, torn = split_lines(jl, lambda rec: rec.get("cell_id") in redo)
            if torn:
                self.warn(f"records/{jl.name}: {torn} torn line(s) dropped (a hard kill mid-write)")
            if not moved and not torn:
                continue
            if moved:
                old.mkdir(exist_ok=True)
                append_lines(old / jl.name, moved)
            rewrite_lines(jl, keep)

    def replace_table(self, table: str, records: Iterable[dict[str, Any]]) -> None:
        """records/<table>.jsonl holds exactly ``records`` from now on, and so does the table's
        Parquet file once the run is finalized (the verdicts, written after the run ended)."""
        with self._lock:
            fd = self._files.pop(table, None)
            if fd is not None:
                os.close(fd)
            (self.path / "records" / f"{table}.jsonl").unlink(missing_ok=True)
        self.append(table, records)
        if self.status != "running":
            self.close()
            jl = self.path / "records" / f"{table}.jsonl"
            if jl.exists():
                self._to_parquet(jl)
            else:
                (self.path / f"{table}.parquet").unlink(missing_ok=True)

    def warn(self, message: str) -> None:
        """A warning for the run's user (printed by `xcbench run`, kept in the manifest)."""
        self.state.warn(message)

    @property
    def run_id(self) -> str:
        """The directory name: what a user types, even for a copied or renamed run."""
        return self.path.name

    @property
    def cells(self) -> dict[str, CellState]:
        return self.state.cells

    @property
    def status(self) -> str:
        return self.state.status

    def save_manifest(self) -> bool:
        """Write manifest.json; False when it could not be. On a full disk it goes into the
        room the run's reserve slots hold (xcbench.store.reserve), which no other writer can
        take. When even that fails the old one stays whole and the state is kept in memory for
        the next save. Never raises: a run that cannot say it ended stays resumable (its
        manifest on disk still says where it was), and ``unsaved`` says why."""
        path = self.path / "manifest.json"
        with self._lock:
            data = redact(self.state.to_dict())
            try:
                write_json(path, data)
                self.unsaved = None
                return True
            except OSError as e:
                error = e
                if e.errno in (errno.ENOSPC, errno.EDQUOT):
                    self._full = True
                    try:
                        reserve.write_into(self.path, path, _json_bytes(data))
                        self.unsaved = None
                        return True
                    except OSError as again:
                        error = again
            self.unsaved = f"{type(error).__name__}: [Errno {error.errno}] {error.strerror or error}"
            log.warning("%s: manifest not saved (%s); kept in memory", self.path, self.unsaved)
            return False

    def append(self, table: str, records: Iterable[dict[str, Any]]) -> None:
        """Append records to ``records/<table>.jsonl``, handed to the OS at once (a crash of
        xcbench loses none). Writing never raises: rows that cannot be written (disk full, I/O
        error) are counted in the manifest's ``lost_rows`` and the run goes on measuring."""
        rows = list(records)
        data = scrub_known("".join(json.dumps(r, default=str) + "\n" for r in rows)).encode()
        if not data:
            return
        with self._lock:
            try:
                if self._full and not self.has_room():
                    raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (its last "
                                  f"{RESERVE >> 10} KiB are left free)")
                fd = self._files.get(table)
                if fd is None:
                    fd = self._files[table] = open_append(self.path / "records" / f"{table}.jsonl")
                write_all(fd, data)
                return
            except OSError as e:
                error = e
        self._lost(table, len(rows), error)

    def has_room(self, need: int = 0) -> bool:
        """Free space in the store above the reserve kept for the manifest and the report."""
        try:
            st = os.statvfs(self.path)
        except OSError:
            return False
        return st.f_bavail * st.f_frsize > RESERVE + need

    def _lost(self, table: str, n: int, error: OSError) -> None:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            self._full = True  # appends stop short of the reserve; the manifest uses its slots
        why = f"{type(error).__name__}: [Errno {error.errno}] {error.strerror or error}"
        first = self.state.lost(table, n, why)
        if first:
            log.warning("%s: rows of %s cannot be written (%s); counting them as lost",
                        self.path, table, why)
        now = time.monotonic()
        if first or now - self._lost_saved > 5:  # say it on disk, without a rewrite per row
            self._lost_saved = now
            with contextlib.suppress(OSError):
                self.save_manifest()

    def raw_path(self, *parts: str) -> Path:
        """A path under raw/ (parents created), for fio JSON, logs, rendered configs."""
        p = self.path.joinpath("raw", *parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def set_cell(self, cell_id: str, **info: Any) -> None:
        """Merge ``info`` (status, error, settings, fingerprint ...) into manifest['cells'][id].
        A status change stamps ``start`` (running) or ``end`` (a final status)."""
        status = info.get("status")
        if status is not None and status not in CELL_STATUSES:
            raise XcbError(f"cell {cell_id}: status: {status!r} is not one of "
                           f"{', '.join(CELL_STATUSES)}")
        cell = self.state.cell(cell_id)
        if status == "running":
            cell.start = cell.start or _now()
        elif status not in (None, "pending"):
            info.setdefault("end", _now())
        cell.update(info)
        self.save_manifest()

    def register_cells(self, cells: Iterable[Any]) -> None:
        """Record every cell of the matrix (xcbench.cell.Cell) as pending: id, label, settings."""
        for c in cells:
            self.state.cell(c.id).update(
                {"label": c.label, "backend": c.backend, "settings": c.settings(),
                 "status": "pending"})
        self.save_manifest()

    def set_cell_fingerprint(self, cell_id: str, **parts: Any) -> dict[str, Any]:
        """Merge fingerprint parts (layout=, pool=, configs=, ...) into the cell's fingerprint
        and recompute its digest (xcbench.store.fingerprint.cell_fingerprint)."""
        old = dict(self.state.cell(cell_id).fingerprint or {})
        old.pop("digest", None)
        old.update(parts)
        fp = cell_fingerprint(**old)
        self.set_cell(cell_id, fingerprint=fp)
        return fp

    def close(self) -> None:
        with self._lock:
            for fd in self._files.values():
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._files.clear()

    def finalize(self, status: str = "complete") -> None:
        """Close the JSONL files, write one Parquet file per table, stamp the manifest.
        Cells left pending/running are marked 'interrupted' when the run did not complete."""
        self.close()
        for jl in sorted((self.path / "records").glob("*.jsonl")):
            self._to_parquet(jl)
        if status != "complete":
            for cell in self.state.cells.values():
                if cell.status in ("pending", "running"):
                    cell.status = "interrupted"
        self.state.end = _now()
        self.state.status = status
        if self.state.lost_rows:
            self.warn(self.state.lost_summary() or "")
        self.save_manifest()
        reserve.release(self.path)  # the run is written; a resume makes them again
        if self._full:  # the manifest may be a padded slot: compact again where there is room
            with contextlib.suppress(OSError):
                write_json(self.path / "manifest.json", redact(self.state.to_dict()))
                self.unsaved = None

    def _to_parquet(self, jl: Path) -> None:
        """<table>.parquet from records/<table>.jsonl. Derived data: without it the JSONL is read
        (table()), so a full disk is a warning, no crash."""
        pq = self.path / f"{jl.stem}.parquet"
        try:
            if self._full and not self.has_room(jl.stat().st_size):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            read_jsonl(jl).to_parquet(pq, index=False)
        except OSError as e:
            pq.unlink(missing_ok=True)
            self.warn(f"{pq.name} not written ({e}); the records stay in records/{jl.name}")

    def has_table(self, name: str) -> bool:
        jl = self.path / "records" / f"{name}.jsonl"
        return (self.path / f"{name}.parquet").exists() or (jl.exists() and jl.stat().st_size > 0)

    def table(self, name: str, columns: list[str] | None = None):
        """A table as a DataFrame: the Parquet file if finalized, else the JSONL so far.
        Declared columns (xcbench.store.tables) a producer left out are added as NA, and rows of
        an older tables' version come in today's shape (xcbench.store.upgrade.update_table)."""
        import pandas as pd

        pq = self.path / f"{name}.parquet"
        jl = self.path / "records" / f"{name}.jsonl"
        if pq.exists():
            import pyarrow as pa
            try:
                if columns is not None:
                    import pyarrow.parquet as papq
                    have = set(papq.read_schema(pq).names)
                    stored = columns_to_read(name, columns, self.state.tables_version)
                    df = pd.read_parquet(pq, columns=[c for c in stored if c in have])
                else:
                    df = pd.read_parquet(pq)
            except (pa.ArrowException, OSError) as e:  # truncated or not Parquet at all
                raise XcbError(f"{pq}: not a readable Parquet table "
                               f"({' '.join(str(e).split())[:120]})") from None
        elif jl.exists() and jl.stat().st_size:
            df = read_jsonl(jl)
        else:
            df = pd.DataFrame()
        for col in (columns if columns is not None else TABLES.get(name, ())):
            if col not in df.columns:
                df[col] = pd.Series(pd.NA, index=df.index, dtype="object")
        if self.state.tables_version < TABLES_VERSION:
            df = update_table(name, df, self.state.tables_version, self.manifest)
        return df[list(columns)] if columns is not None else df


def upgrade_manifest(manifest: dict[str, Any], path: Path) -> dict[str, Any]:
    """Bring an older manifest up to SCHEMA_VERSION, in memory (xcbench.store.upgrade)."""
    return update_manifest(manifest, path)


