"""The run manifest as typed state: Manifest and CellState (versions and upgrade: xcbench.store.upgrade).

On disk it stays the JSON of xcbench.store.rundir's docstring (report and analysis read it as a dict:
RunDir.manifest); in the code it is these dataclasses (RunDir.state). Keys this version does not
know are kept in ``extra`` and written back unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.store.upgrade import SCHEMA_VERSION, check_versions, update_manifest

CELL_STATUSES = ("pending", "running", "complete", "degraded", "failed", "skipped", "interrupted")
DONE = ("complete", "degraded")  # cell states --resume does not run again


def _split(cls: type, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    names = {f.name for f in fields(cls)} - {"extra"}
    return ({k: v for k, v in data.items() if k in names},
            {k: v for k, v in data.items() if k not in names})


def _drop_none(d: dict[str, Any], keep: tuple[str, ...] = ()) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None or k in keep}


@dataclass
class CellState:
    """A cell's entry in the manifest: what it is, how far it got, what was found."""
    label: str = ""
    backend: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    status: str = "pending"
    error: str | None = None
    start: str | None = None
    end: str | None = None
    fingerprint: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # target, verify, pool, seconds, ...

    @property
    def done(self) -> bool:
        return self.status in DONE

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CellState:
        known, extra = _split(cls, data)
        return cls(**known, extra=extra)

    def update(self, info: dict[str, Any]) -> None:
        known, extra = _split(type(self), info)
        for k, v in known.items():
            setattr(self, k, v)
        self.extra.update(extra)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        return {**_drop_none(d), **self.extra}


@dataclass
class LostRows:
    """Rows of one table that could not be written (disk full, I/O error): how many, why, when."""
    rows: int = 0
    error: str = ""
    first: str | None = None  # UTC ISO times of the first and the last loss
    last: str | None = None

    @classmethod
    def from_dict(cls, data: Any) -> LostRows:
        d = data if isinstance(data, dict) else {}
        return cls(rows=int(d.get("rows") or 0), error=str(d.get("error") or ""),
                   first=d.get("first"), last=d.get("last"))

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "error": self.error, "first": self.first, "last": self.last}


@dataclass
class Manifest:
    """manifest.json of a run (schema SCHEMA_VERSION)."""
    run_id: str
    schema_version: int = SCHEMA_VERSION
    tables_version: int = 1  # the rows' shape on disk (a manifest without one: 1)
    start: str | None = None
    end: str | None = None
    status: str = "running"
    matrix: dict[str, Any] | None = None
    cells: dict[str, CellState] = field(default_factory=dict)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] | None = None
    cluster: dict[str, Any] | None = None
    warnings: list[str] | None = None
    resumed: list[float] | None = None
    baseline_done: bool | None = None
    report: str | None = None
    report_md: str | None = None
    upgraded_from: int | None = None
    lost_rows: dict[str, LostRows] | None = None  # table -> what could not be written
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, path: Path) -> Manifest:
        """Check a manifest read from ``path``: refuse a newer schema, upgrade an older one."""
        where = f"{path}/manifest.json"
        if not isinstance(data, dict):
            raise XcbError(f"{where}: not a run manifest (expected a JSON object)")
        check_versions(data, where)
        if data.get("schema_version", 0) < SCHEMA_VERSION:
            data = update_manifest(data, path)
        cells = data.get("cells") or {}
        if not isinstance(cells, dict) or not all(isinstance(c, dict) for c in cells.values()):
            raise XcbError(f"{where}: cells: not a mapping of cell records")
        for key in ("matrix", "fingerprint", "options", "cluster"):
            if data.get(key) is not None and not isinstance(data[key], dict):
                raise XcbError(f"{where}: {key}: not a mapping")
        known, extra = _split(cls, data)
        known["cells"] = {cid: CellState.from_dict(c) for cid, c in (known.get("cells") or {}).items()}
        if isinstance(known.get("lost_rows"), dict):
            known["lost_rows"] = {t: LostRows.from_dict(v) for t, v in known["lost_rows"].items()}
        else:
            known.pop("lost_rows", None)
        known.setdefault("run_id", path.name)
        known["fingerprint"] = known.get("fingerprint") or {}
        return cls(**known, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)
                             if f.name not in ("extra", "cells", "lost_rows")}
        if self.lost_rows:
            d["lost_rows"] = {t: v.to_dict() for t, v in self.lost_rows.items()}
        d = _drop_none(d, keep=("start", "end", "matrix"))
        d["cells"] = {cid: c.to_dict() for cid, c in self.cells.items()}
        return {**d, **self.extra}

    def cell(self, cell_id: str) -> CellState:
        return self.cells.setdefault(cell_id, CellState())

    def warn(self, message: str) -> None:
        self.warnings = [*(self.warnings or []), message]

    def lost(self, table: str, rows: int, error: str) -> bool:
        """Count ``rows`` of ``table`` as lost; True for the table's first loss."""
        now = datetime.now(UTC).isoformat()
        if self.lost_rows is None:
            self.lost_rows = {}
        entry = self.lost_rows.get(table)
        first = entry is None
        if entry is None:
            entry = self.lost_rows[table] = LostRows(first=now)
        entry.rows += rows
        entry.error, entry.last = error, now
        return first

    def lost_summary(self) -> str | None:
        """One line naming what was lost, or None."""
        if not self.lost_rows:
            return None
        return "records lost: " + "; ".join(f"{t}: {v.rows} rows ({v.error})"
                                            for t, v in sorted(self.lost_rows.items()))
