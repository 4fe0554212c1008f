"""Result store: one directory per run.

    <store>/<run-id>/manifest.json         schema version, matrix, cells, fingerprint, status
    <store>/<run-id>/records/<table>.jsonl appended record by record (flushed: a crash loses none)
    <store>/<run-id>/<table>.parquet       written by finalize() from the JSONL
    <store>/<run-id>/raw/...               raw fio JSON, gateway logs, rendered configs

Table names and columns: xcbench.records.TABLES.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError

SCHEMA_VERSION = 1


def write_json(path: str | os.PathLike, data: Any) -> None:
    """Atomic JSON write (tmp + rename)."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


def load_json(path: str | os.PathLike) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError as e:
        raise XcbError(f"{path}: no such file") from e
    except json.JSONDecodeError as e:
        raise XcbError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from e


class RunDir:
    def __init__(self, path: str | os.PathLike, manifest: dict[str, Any]):
        self.path = Path(path)
        self.manifest = manifest
        self._lock = threading.Lock()
        self._files: dict[str, Any] = {}

    @classmethod
    def create(cls, store: str | os.PathLike, *, name: str | None = None,
               matrix: dict[str, Any] | None = None, **info: Any) -> RunDir:
        now = _dt.datetime.now(_dt.UTC)
        name = name or now.strftime("%Y%m%dT%H%M%SZ")
        path = Path(store) / name
        n = 1
        while path.exists():
            n += 1
            path = Path(store) / f"{name}-{n}"
        (path / "records").mkdir(parents=True)
        manifest = {"schema_version": SCHEMA_VERSION, "run_id": path.name,
                    "start": now.isoformat(), "end": None, "status": "running",
                    "matrix": matrix, "cells": {}, **info}
        run = cls(path, manifest)
        run.save_manifest()
        return run

    @classmethod
    def open(cls, path: str | os.PathLike) -> RunDir:
        path = Path(path)
        manifest = load_json(path / "manifest.json")
        version = manifest.get("schema_version", 0)
        if version > SCHEMA_VERSION:
            raise XcbError(f"{path}/manifest.json: schema_version {version} is newer than this "
                           f"xcbench understands ({SCHEMA_VERSION}); upgrade xcbench")
        return cls(path, manifest)

    def save_manifest(self) -> None:
        with self._lock:
            write_json(self.path / "manifest.json", self.manifest)

    def append(self, table: str, records: Iterable[dict[str, Any]]) -> None:
        """Append records to ``records/<table>.jsonl`` and flush them to the OS at once."""
        lines = "".join(json.dumps(r, default=str) + "\n" for r in records)
        if not lines:
            return
        with self._lock:
            fh = self._files.get(table)
            if fh is None:
                fh = self._files[table] = open(self.path / "records" / f"{table}.jsonl", "a")
            fh.write(lines)
            fh.flush()

    def raw_path(self, *parts: str) -> Path:
        """A path under raw/ (parents created), for fio JSON, logs, rendered configs."""
        p = self.path.joinpath("raw", *parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def set_cell(self, cell_id: str, **info: Any) -> None:
        """Merge ``info`` (status, error, settings, fingerprint ...) into manifest['cells'][id]."""
        self.manifest["cells"].setdefault(cell_id, {}).update(info)
        self.save_manifest()

    def close(self) -> None:
        with self._lock:
            for fh in self._files.values():
                fh.close()
            self._files.clear()

    def finalize(self, status: str = "complete") -> None:
        """Close the JSONL files, write one Parquet file per table, stamp the manifest."""
        import pandas as pd
        self.close()
        for jl in sorted((self.path / "records").glob("*.jsonl")):
            df = pd.read_json(jl, lines=True, dtype=False) if jl.stat().st_size else pd.DataFrame()
            for col in df.columns:  # nested dicts/lists -> JSON text, Parquet-friendly
                if df[col].map(lambda v: isinstance(v, (dict, list))).any():
                    df[col] = df[col].map(lambda v: json.dumps(v) if isinstance(v, (dict, list)) else v)
            df.to_parquet(self.path / f"{jl.stem}.parquet", index=False)
        self.manifest["end"] = _dt.datetime.now(_dt.UTC).isoformat()
        self.manifest["status"] = status
        self.save_manifest()

    def table(self, name: str):
        """A table as a DataFrame: the Parquet file if finalized, else the JSONL so far."""
        import pandas as pd
        pq = self.path / f"{name}.parquet"
        if pq.exists():
            return pd.read_parquet(pq)
        jl = self.path / "records" / f"{name}.jsonl"
        if jl.exists() and jl.stat().st_size:
            return pd.read_json(jl, lines=True, dtype=False)
        from xcbench.records import TABLES
        return pd.DataFrame(columns=list(TABLES.get(name, ())))
