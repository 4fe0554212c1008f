"""The report's first screen: the run's context in one line and a grid of cells × levels (rate,
verdict, the one-line reason; the full reason folded), built from analysis.report.glance's rows."""

from __future__ import annotations

import math
from typing import Any

from xcbench.analysis.report import glance
from xcbench.analysis.verdicts import between_run
from xcbench.figures.numbers import is_finite
from xcbench.figures.units import fmt_num, format_size

GIB = float(1 << 30)
TARGET_BYTES_PER_S = 100e9 / 8  # the site's target the design names (100 Gb/s); plans size for others
LOOPBACK = ("127.", "::1", "localhost", "local")


def _loopback(addr: Any) -> bool:
    s = "" if addr is None or not isinstance(addr, str) else addr
    return not s or s.startswith(LOOPBACK)


def baseline_text(rd: Any) -> str:
    """'47.3 Gb/s iperf3 over loopback (one host, 4 streams, 5 s)' or 'not measured'."""
    bytes_per_s, _ = rd.network
    if not is_finite(bytes_per_s):
        return "network baseline: not measured"
    b = rd.baseline
    best = b.loc[b["bits_per_second"].astype(float).idxmax()] if "bits_per_second" in b and len(b) else None
    over = ""
    if best is not None:
        pair = (best.get("client"), best.get("gateway"))
        where = ("loopback, one host: no network link" if all(_loopback(x) for x in pair)
                 else f"{pair[0]} → {pair[1]}")
        extra = [f"{int(best['streams'])} streams" if is_finite(best.get("streams")) else "",
                 f"{fmt_num(best['seconds'])} s" if is_finite(best.get("seconds")) else ""]
        extra_s = ", ".join(x for x in extra if x)
        over = f" over {where}" + (f", {extra_s}" if extra_s else "")
    return f"network baseline {glance.gbps(bytes_per_s)}: iperf3{over}"


def context(rd: Any) -> dict[str, Any]:
    """The run's context in one line: machine, cores, file size, matrix, baseline, target."""
    m = rd.manifest
    host = ((m.get("fingerprint") or {}).get("host")) or {}
    cells = rd.cells
    sizes = sorted({int(x) for x in cells["file_size"].dropna()}) if "file_size" in cells else []
    files = sorted({int(x) for x in cells["files"].dropna()}) if "files" in cells else []
    levels = sorted({int(x) for x in rd.points["concurrency"].dropna()}) if len(rd.points) else []
    mat = m.get("matrix") or {}
    name = mat.get("name") if isinstance(mat, dict) else str(mat)
    machine = []
    if host.get("hostname"):
        machine.append(f"host {host['hostname']}")
    cores = host.get("cpus_usable") or host.get("cpus") or (rd.cores if is_finite(rd.cores) else None)
    if cores:
        machine.append(f"{fmt_num(cores)} cores")
    if host.get("mem_bytes"):
        machine.append(f"{fmt_num(host['mem_bytes'] / GIB)} GiB")
    hosts = (m.get("hosts") or {}) if isinstance(m.get("hosts"), dict) else {}
    machine.append("every role on this one machine" if not hosts else f"{len(hosts)} hosts")
    parts = [", ".join(machine),
             "files " + "/".join(format_size(s) for s in sizes) + (f" × {'/'.join(map(str, files))} per level"
                                                                  if files else "") if sizes else "",
             f"matrix {name or '–'}: {len(cells)} cells × levels {', '.join(map(str, levels)) or '–'}",
             baseline_text(rd), f"target {glance.gbps(TARGET_BYTES_PER_S)}",
             between_run.legend(m) or ""]  # an assumed between-run term, said on the first screen
    return {"line": " · ".join(p for p in parts if p), "run": rd.run_id,
            "calibrate": f"xcbench plan --calibrate {rd.run.path}"}


def grid(table: list[dict[str, Any]]) -> dict[str, Any]:
    """{columns: [{level, direction, label}], rows: [{cell, cell_id, backend, points: [row|None]}]}
    in the closing table's order; a column per level (and direction where reads were run)."""
    reads = any(r["direction"] != "write" for r in table)
    cols = sorted({(float(r["concurrency"]), r["direction"]) for r in table},
                  key=lambda c: (c[1] != "write", c[0]))
    columns = [{"level": c, "direction": d, "label": f"c={fmt_num(c)}" + (f" {d}" if reads else "")}
               for c, d in cols]
    rows: dict[str, dict[str, Any]] = {}
    for r in table:
        row = rows.setdefault(r["cell_id"], {"cell": r["cell"], "cell_id": r["cell_id"],
                                             "backend": r["backend"], "points": [None] * len(cols)})
        row["points"][cols.index((float(r["concurrency"]), r["direction"]))] = {
            **r, "rate_text": glance.rate_text(r).rstrip("†"),
            "whole": not r["steady"], "unsteady": not r["steady"],
            "gib_text": fmt_num(r["rate_gibps"]) if r["rate_gibps"] is not None else "–",
            "beats_text": "; ".join(b["text"] for b in r["beats"]),
            "bar": _bar(r["rate_bytes_per_s"], table)}
    return {"columns": columns, "rows": list(rows.values()), "counts": glance.counts(table),
            "any_whole": any(not r["steady"] for r in table),
            "any_co": any(r.get("co_limits") for r in table), "any_near": any(r.get("near") for r in table),
            "any_beat": any(r.get("beats") for r in table)}


def _bar(rate: float | None, table: list[dict[str, Any]]) -> int:
    """Width (0..100 %) of the rate bar behind a grid cell: the rate against the run's fastest."""
    top = max((r["rate_bytes_per_s"] or 0 for r in table), default=0)
    if rate is None or not top or not math.isfinite(rate):
        return 0
    return max(1, round(100 * rate / top))


def beaten_by_cell(table: list[dict[str, Any]], direction: str = "write",
                   ceilings: tuple[str, ...] = ("storage-bandwidth",)) -> dict[Any, list[str]]:
    """{cell_id: [...], (cell_id, fio job): [...]}: 'c=4: the chain did 113 % of fio bandwidth
    1.92 Gb/s' for each fio ceiling the chain beat, to be said where the probe figure appears."""
    out: dict[Any, list[str]] = {}
    for r in table:
        if r["direction"] != direction:
            continue
        for b in r["beats"]:
            if b["ceiling"] in ceilings:
                said = f"c={r['concurrency']}: the chain did {b['text']}"
                out.setdefault(r["cell_id"], []).append(said)
                if b.get("job"):
                    out.setdefault((r["cell_id"], str(b["job"])), []).append(said)
    return out
