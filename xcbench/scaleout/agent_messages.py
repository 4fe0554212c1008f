"""What a campaign agent may say, checked before the coordinator acts on it.

A client host is another machine: a compromised one must not make the coordinator (often root)
write outside the run, run out of memory or stop on a traceback. Each message is one of

    {"hello": {...}}  {"error": "..."}  {"end": {...}}  {"table": NAME, "rows": [...]}

with NAME one of :data:`AGENT_TABLES` (it becomes ``records/NAME.jsonl``), rows flat mappings
of that table's columns, numbers where the merge computes with them, strings capped. Anything
else is refused with the reason (:func:`check`), and the coordinator fails that host's share.
"""

from __future__ import annotations

import math
from typing import Any

from xcbench.store.tables import TABLES

AGENT_TABLES = ("transfers", "timeline", "campaigns", "findings", "optimizer",  # the driver's sinks
                "samples")  # its host's link and CPU (xcbench.scaleout.node_sampler)
# the only samples an agent sends (a host must not write the figures other rules read)
SAMPLE_METRICS = frozenset(("link.tx_bytes", "link.tx_bytes.rate", "link.rx_bytes",
                            "link.rx_bytes.rate", "link.limit_bytes", "link.speed_bytes",
                            "node.cpu.busy", "node.cpu.cores", "node.cpu.limit_cores",
                            "node.cpu.client_cores"))
MAX_LABELS = 8  # keys of a sample's labels, each value a string of at most MAX_LABEL characters
MAX_LABEL = 200
KINDS = ("hello", "error", "end", "table")
MAX_ROWS = 50_000  # rows per message: a flush holds one second's transfers
MAX_TEXT = 16 << 10  # characters of one string value (a reason, a campaign's settings JSON)
MAX_ERROR = 2000  # characters of an agent's error line kept
# columns the merge and the analysis compute with: a finite number or null
NUMBERS = frozenset((
    "concurrency", "repeat", "file_index", "retry", "nstreams", "file_size", "transferred",
    "start_time", "finish_time", "tx_duration", "throughput", "t", "wall", "bytes", "rate",
    "active", "done", "failed", "files", "finished", "driver_cpu_cores",
    "driver_cpu_limit_cores", "bytes_read", "bytes_written", "gateway_cpu_s",
    "gateway_cpu_s_per_gb", "source_cpu_s_per_gb", "device_write_iops", "device_write_bytes_per_s",
    "success_rate", "ema", "error_code", "value", "mono"))
# a bucket or a sample without its time cannot be placed
REQUIRED = {"timeline": ("wall", "t"), "samples": ("wall", "metric")}


def check(msg: Any) -> str | None:
    """Why ``msg`` (one decoded line) is not a message an agent may send; None if it is."""
    if not isinstance(msg, dict):
        return "not a JSON object"
    kinds = [k for k in KINDS if k in msg]
    if len(kinds) != 1:
        return f"holds {len(kinds)} of {', '.join(KINDS)} (one expected)"
    kind = kinds[0]
    if kind == "hello":
        h = msg["hello"]
        if not isinstance(h, dict) or not all(_scalar(v) for v in h.values()):
            return "hello: not a mapping of plain values"
        if h.get("clock") is not None and not _number(h["clock"]):
            return "hello: clock: not a number"
        return None
    if kind == "error":
        return None if isinstance(msg["error"], str) else "error: not a string"
    if kind == "end":
        return None if isinstance(msg["end"], dict) else "end: not a mapping"
    return _table(msg["table"], msg.get("rows"))


def _table(table: Any, rows: Any) -> str | None:
    if not isinstance(table, str) or table not in AGENT_TABLES:
        return f"table {str(table)[:40]!r}: not one of {', '.join(AGENT_TABLES)}"
    if not isinstance(rows, list) or len(rows) > MAX_ROWS:
        return f"{table}: rows: not a list of at most {MAX_ROWS:,} rows"
    columns = TABLES[table]
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            return f"{table}: row {i}: not a mapping"
        for k, v in r.items():
            if k not in columns:
                return f"{table}: row {i}: {str(k)[:40]!r}: not a column of {table}"
            if table == "samples" and k in ("labels", "metric"):
                why = _sample_field(k, v)
                if why:
                    return f"{table}: row {i}: {k}: {why}"
                continue
            if not _scalar(v):
                return f"{table}: row {i}: {k}: not a plain value of at most {MAX_TEXT:,} characters"
            if k in NUMBERS and v is not None and not _number(v):
                return f"{table}: row {i}: {k}: not a finite number"
        for k in REQUIRED.get(table, ()):
            if r.get(k) is None:
                return f"{table}: row {i}: {k}: missing"
    return None


def _sample_field(key: str, v: Any) -> str | None:
    if key == "metric":
        return None if v in SAMPLE_METRICS else f"{str(v)[:40]!r} is not a metric an agent sends"
    if not isinstance(v, dict) or len(v) > MAX_LABELS:
        return f"not a mapping of at most {MAX_LABELS} labels"
    if not all(isinstance(k, str) and len(k) <= 40 and isinstance(x, str) and len(x) <= MAX_LABEL
               for k, x in v.items()):
        return f"labels must be strings of at most {MAX_LABEL} characters"
    return None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
        and abs(v) < 1e18


def _scalar(v: Any) -> bool:
    if isinstance(v, str):
        return len(v) <= MAX_TEXT
    return v is None or isinstance(v, bool) or _number(v)


def error_text(msg: dict) -> str:
    """An agent's error as one line of printable text (it ends up in the cell's error and on
    the operator's terminal), capped."""
    text = "".join(c if c.isprintable() else " " for c in str(msg["error"])[:MAX_ERROR])
    return " ".join(text.split())
