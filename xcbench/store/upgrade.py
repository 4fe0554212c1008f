"""The one upgrade of older runs: their manifest and their tables brought to today's shape, in
memory, when a run is opened for reading (as asv's ``Results`` does with ``update_to_*``).

Two versions, both in manifest.json, because the two files change differently:

- ``schema_version`` (SCHEMA_VERSION): the manifest's layout. The manifest is rewritten whole at
  every save, so once read and upgraded it is saved in today's layout.
- ``tables_version`` (TABLES_VERSION): the shape of the rows in records/*.jsonl and *.parquet.
  Those files are appended to and never rewritten, so the version they were written with stays in
  the manifest, and every read of a table brings its rows up from it (:func:`update_table`). A
  manifest without one is version 1. A resumed old run appends today's rows to old ones: each
  step only fills what a row lacks, so today's rows pass through unchanged.

The user's files are never rewritten here. Every reader downstream (RunDir.table, RunData, the
report, compare, plan) sees today's shape only, and a run newer than this code is refused with
one line (upgrade xcbench).

Tables' versions:
  1  runs written before the version was recorded, in any shape up to then: transfers without
     ``throughput`` (the file's size over its duration), transfers, campaigns,
     verdicts and baseline rows without ``direction`` (runs from before reads: writes), campaigns
     without ``security`` (no security then: none), baseline rows naming the gateway ``host`` only,
     timelines without ``t``, ``repeat`` or one of ``bytes``/``rate`` (1-s buckets: equal)
  2  every declared column written by its producer (xcbench.store.tables)
  3  today's: names say their unit (docs/architecture.md#units; a bare ``bps`` had meant bytes/s
     in sample metrics and bits/s in the hosts' links). The step renames what version 2 stored
     (UNITS_RENAMED, COLUMNS_RENAMED: samples' metrics, campaigns' and probes' columns, the
     verdicts' evidence); with it the manifest's schema 3 renames its hosts' link rate
     (LINK_RENAMED), and the report reads ``confirmations.json`` through update_confirmations.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcbench.cell import DIRECTIONS
from xcbench.errors import XcbError

if TYPE_CHECKING:  # pandas is imported where a table is upgraded: the manifest's readers (every
    import pandas as pd  # command, the agents) start without it

SCHEMA_VERSION = 3
TABLES_VERSION = 3

def check_versions(data: dict[str, Any], where: str) -> None:
    """Refuse a manifest whose versions this code does not know (one line each)."""
    for key, current in (("schema_version", SCHEMA_VERSION), ("tables_version", TABLES_VERSION)):
        v = data.get(key, 0 if key == "schema_version" else 1)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise XcbError(f"{where}: {key}: {v!r} is not a version")
        if v > current:
            raise XcbError(f"{where}: {key} {v} is newer than this xcbench understands "
                           f"({current}); upgrade xcbench to read it")


# --- the manifest ------------------------------------------------------------------------------

def manifest_to_1(m: dict[str, Any], path: Path) -> None:
    """The skeleton's fields; very early runs kept cells as a list."""
    m.setdefault("run_id", path.name)
    for key in ("start", "end", "matrix"):
        m.setdefault(key, None)
    m.setdefault("status", "unknown")
    if not isinstance(m.get("cells"), dict):
        m["cells"] = {c["id"]: dict(c) for c in (m.get("cells") or [])
                      if isinstance(c, dict) and "id" in c}


def manifest_to_2(m: dict[str, Any], path: Path) -> None:
    """The run's fingerprint; each cell's status, label and settings."""
    m.setdefault("fingerprint", {})
    for cid, cell in m["cells"].items():
        cell.setdefault("status", "complete" if m["status"] == "complete" else "unknown")
        cell.setdefault("label", cid)
        cell.setdefault("settings", {})


def manifest_to_3(m: dict[str, Any], path: Path) -> None:
    """Names say their unit: the inventory's link rate in the manifest's ``hosts`` (bits/s)."""
    hosts = (m.get("hosts") or {}).get("hosts") if isinstance(m.get("hosts"), dict) else None
    for h in (hosts or {}).values():
        link = h.get("link") if isinstance(h, dict) else None
        if isinstance(link, dict):
            _rename_keys(link, LINK_RENAMED)


MANIFEST_STEPS: dict[int, Callable[[dict[str, Any], Path], None]] = {1: manifest_to_1,
                                                                     2: manifest_to_2,
                                                                     3: manifest_to_3}


def update_manifest(manifest: dict[str, Any], path: Path) -> dict[str, Any]:
    """An older manifest (a dict as read) brought up to SCHEMA_VERSION, in memory; the version
    found is kept as ``upgraded_from``."""
    m = dict(manifest)
    old = m.get("schema_version", 0)
    for n in range(old + 1, SCHEMA_VERSION + 1):
        MANIFEST_STEPS[n](m, path)
    m["schema_version"] = SCHEMA_VERSION
    m["upgraded_from"] = old
    return m


# --- the tables --------------------------------------------------------------------------------

def _fill(df: pd.DataFrame, col: str, value: Any) -> None:
    if col in df:  # a reader may ask for some columns only
        df[col] = df[col].astype(object).where(df[col].notna(), value)


def _cell_direction(manifest: dict[str, Any], cell_id: Any) -> str:
    s = (((manifest.get("cells") or {}).get(cell_id) or {}).get("settings") or {})
    d = s.get("direction")
    return d if d in DIRECTIONS else "write"


def update_to_2(name: str, df: pd.DataFrame, manifest: dict[str, Any]) -> pd.DataFrame:
    """Version 1 -> 2 (the module's list)."""
    import pandas as pd
    if name in ("transfers", "verdicts", "baseline"):
        _fill(df, "direction", "write")
    if name == "transfers" and {"throughput", "file_size", "tx_duration"} <= set(df.columns):
        dur = pd.to_numeric(df["tx_duration"], errors="coerce")
        missing = pd.to_numeric(df["throughput"], errors="coerce").isna() & (dur > 0)
        if missing.any():
            df["throughput"] = df["throughput"].astype(object).where(
                ~missing, pd.to_numeric(df["file_size"], errors="coerce") / dur)
    if name == "baseline" and "gateway" in df and "host" in df:
        df["gateway"] = df["gateway"].astype(object).where(df["gateway"].notna(), df["host"])
    if name == "campaigns" and len(df):
        _fill(df, "security", "none")
        if "direction" in df and "cell_id" in df:
            by_cell = df["cell_id"].map(lambda c: _cell_direction(manifest, c))
            df["direction"] = df["direction"].astype(object).where(df["direction"].notna(), by_cell)
    if name == "timeline" and len(df):
        num = {c: pd.to_numeric(df[c], errors="coerce")
               for c in ("t", "wall", "bytes", "rate", "repeat") if c in df}
        if "t" in num and "wall" in num and num["t"].isna().all() and num["wall"].notna().any():
            df["t"] = num["wall"] - num["wall"].groupby(df["campaign_id"]).transform("min")
        if "rate" in num and "bytes" in num:  # a 1-s bucket: its bytes are its rate
            if num["rate"].isna().all():
                df["rate"] = num["bytes"]
            elif num["bytes"].isna().all():
                df["bytes"] = num["rate"]
        if "repeat" in num and num["repeat"].isna().all():
            df["repeat"] = 0
    return df


# --- version 3: names say their unit (bytes_per_s, bits_per_s) ----------------------------------
# each name version 2 stored -> today's; the step renames only these, so rows written since (a
# resumed run appends today's names to old ones) pass through
UNITS_RENAMED = {
    # samples' metric (the prometheus device: xcbench.telemetry.promqueries, .prometheus)
    "node.nic_rx_bps": "node.nic_rx_bytes_per_s", "node.nic_tx_bps": "node.nic_tx_bytes_per_s",
    "node.nic_speed_bps": "node.nic_speed_bytes_per_s",
    "node.nic_declared_bps": "node.nic_declared_bytes_per_s",
    "node.nic_limit_bps": "node.nic_limit_bytes_per_s",
    "node.disk_read_bps": "node.disk_read_bytes_per_s",
    "node.disk_write_bps": "node.disk_write_bytes_per_s",
    "ceph.osd_write_bps": "ceph.osd_write_bytes_per_s", "ceph.osd_read_bps": "ceph.osd_read_bytes_per_s",
    "ceph.pool_write_bps": "ceph.pool_write_bytes_per_s",
    "ceph.pool_read_bps": "ceph.pool_read_bytes_per_s",
    "live.storage_nic_bps": "live.storage_nic_bytes_per_s",
    # the verdicts' evidence keys (and COLUMNS_RENAMED, as a key, a source's column or its note)
    "fio_device_Bps": "fio_device_bytes_per_s", "network_bps": "network_bytes_per_s",
}
COLUMNS_RENAMED = {"device_write_Bps": "device_write_bytes_per_s"}  # campaigns and probes
LINK_RENAMED = {"rate_bps": "rate_bits_per_s"}  # the manifest's hosts: an inventory's link
CONFIRMATIONS_RENAMED = {"control_Bps": "control_bytes_per_s", "changed_Bps": "changed_bytes_per_s",
                         "Bps": "bytes_per_s"}  # confirmations.json (xcbench.selftest.confirm)
_METRICS = {k: v for k, v in UNITS_RENAMED.items() if "." in k}
_COLUMN_TABLES = ("campaigns", "probes")
_EVIDENCE = {**UNITS_RENAMED, **COLUMNS_RENAMED}
_TOKEN = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, sorted(_EVIDENCE, key=len, reverse=True)))
                    + r")(?!\w)")


def _rename_keys(d: dict[str, Any], renamed: dict[str, str]) -> None:
    for old, new in renamed.items():
        if old in d:
            value = d.pop(old)
            d.setdefault(new, value)


def update_to_3(name: str, df: pd.DataFrame, manifest: dict[str, Any]) -> pd.DataFrame:
    """Version 2 -> 3: UNITS_RENAMED in the metrics, columns and evidence that hold them."""
    if name == "samples" and "metric" in df and len(df):
        old = df["metric"].isin(list(_METRICS))
        if old.any():
            df["metric"] = df["metric"].where(~old, df["metric"].map(_METRICS))
    for col, new in COLUMNS_RENAMED.items() if name in _COLUMN_TABLES else ():
        if col in df:
            df[new] = df[new].where(df[new].notna(), df[col]) if new in df else df[col]
            df = df.drop(columns=col)
    if name == "verdicts" and "evidence" in df and len(df):
        df["evidence"] = df["evidence"].map(
            lambda t: _TOKEN.sub(lambda m: _EVIDENCE[m.group(1)], t) if isinstance(t, str) else t)
    return df


def update_confirmations(doc: dict[str, Any]) -> dict[str, Any]:
    """``confirmations.json`` as xcbench confirm writes it today (its keys renamed in place):
    the file has no version of its own, and a run may be confirmed again by a newer xcbench."""
    rows = doc.get("confirmations") if isinstance(doc, dict) else None
    for x in rows if isinstance(rows, list) else ():
        if isinstance(x, dict):
            _rename_keys(x, CONFIRMATIONS_RENAMED)
            for r in x.get("runs") or ():
                if isinstance(r, dict):
                    _rename_keys(r, CONFIRMATIONS_RENAMED)
    return doc


TABLE_STEPS: dict[int, Callable[[str, pd.DataFrame, dict[str, Any]], pd.DataFrame]] = {
    2: update_to_2, 3: update_to_3}


def columns_to_read(name: str, columns: list[str], version: int) -> list[str]:
    """The stored columns that give ``columns`` of table ``name`` written at ``version``: the
    columns, and the older names of those renamed since."""
    old = [o for o, new in COLUMNS_RENAMED.items() if new in columns] \
        if version < 3 and name in _COLUMN_TABLES else []
    return [*columns, *old]


def update_table(name: str, df: pd.DataFrame, version: int,
                 manifest: dict[str, Any]) -> pd.DataFrame:
    """Rows of table ``name`` written at tables' ``version``, in today's shape (in memory)."""
    for n in range(version + 1, TABLES_VERSION + 1):
        df = TABLE_STEPS[n](name, df, manifest)
    return df
