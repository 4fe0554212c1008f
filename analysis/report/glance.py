"""The answer at a glance: one row per cell × level × direction with the steady rate, the verdict,
a one-line reason quoting the figure that decided it, and the ceilings the chain beat.

Shared by the closing table of ``xcbench run``/``demo``/``report --format text``, their
``--json``, the first screen of the HTML report and the Markdown summary, so all four say the
same thing. The verdict's name and its reason come from the verdict record (analysis.verdicts.attribution):
a record may carry its own short reason (``short``); otherwise the short line is built from the
evidence of the verdicts known here, and for any other verdict name from the first clause of the
record's reason. Nothing here decides a verdict.
"""

from __future__ import annotations

import json
from typing import Any

from xcbench.analysis.report import closing_text
from xcbench.analysis.verdicts import between_run, experiment_next
from xcbench.analysis.verdicts.attribution import verdicts_of
from xcbench.analysis.verdicts.experiment_choice import cpu_to_give
from xcbench.cell import BACKENDS
from xcbench.figures.numbers import is_finite
from xcbench.figures.units import fmt_gbps, fmt_num, gbps_num

GIB = float(1 << 30)
WIDTH = 72  # a short reason fits one terminal line beside the rate and the verdict
# what each measured ceiling is called where the chain beat it
CEILINGS = {"storage-bandwidth": "fio bandwidth", "storage-iops": "fio IOPS",
            "gateway": "tmpfs gateway", "network": "iperf3"}


def gbps(bytes_per_s: Any) -> str:
    """bytes/s -> '6.02 Gb/s' ('–' when missing): the one rate formatter (figures.units)."""
    return fmt_gbps(bytes_per_s)


def _pct(v: float) -> str:
    return f"{v * 100:.0f} %"


def evidence_of(v: Any) -> dict[str, Any]:
    if isinstance(v, dict):
        return v
    try:
        out = json.loads(v) if isinstance(v, str) and v else {}
    except json.JSONDecodeError:
        return {}
    return out if isinstance(out, dict) else {}


def beaten(ev: dict[str, Any]) -> list[dict[str, Any]]:
    """The measured ceilings the chain's rate is above (utilisation > 1): fio, tmpfs gateway,
    iperf3. A chain above its probe says the probe is no ceiling of this path."""
    u = ev.get("utilisation") or {}
    figure = {"storage-bandwidth": ev.get("fio_bw"), "storage-iops": ev.get("fio_iops"),
              "gateway": ev.get("gateway_ceiling"), "network": ev.get("network_bytes_per_s")}
    out = []
    for k, name in CEILINGS.items():
        x = u.get(k)
        if not is_finite(x) or x <= 1.0:
            continue
        if k == "gateway" and is_finite(ev.get("cpu")) and x == ev.get("cpu"):
            continue  # the gateway's utilisation was its CPU share, not the tmpfs ceiling
        fig = figure[k]
        shown = (f"{fmt_num(fig)} IOPS" if k == "storage-iops" else gbps(fig)) if is_finite(fig) else ""
        job = {"storage-bandwidth": ev.get("fio_bw_job"), "storage-iops": ev.get("fio_iops_job")}.get(k)
        out.append({"ceiling": k, "name": name, "utilisation": float(x), "figure": fig, "job": job,
                    "text": f"{_pct(x)} of {name}" + (f" {shown}" if shown else "")})
    return out


NO_CAUSE = "no cause"  # a candidate "inconclusive" is no cause: 'host-cpu (or no cause)'


def near(verdict: str, ev: dict[str, Any]) -> list[str]:
    """The other verdicts this one is within its noise of (analysis.verdicts.borderline's candidates):
    another run may name them (co-limits are named apart)."""
    out = [str(c.get("rule")) for c in ev.get("borderline_candidates") or () if isinstance(c, dict)]
    out = [NO_CAUSE if r == "inconclusive" else r for r in out]  # another run may name none: no cause
    return [r for r in dict.fromkeys(out) if r and r != verdict and r not in co_limits(verdict, ev)]


def co_limits(verdict: str, ev: dict[str, Any]) -> list[str]:
    """The other rules that hold too (analysis.verdicts.rules.co_limits), in the rules' order."""
    return [str(c) for c in ev.get("co_limits") or () if c and c != verdict]


def verdict_text(verdict: str, co: list[str], near_: list[str]) -> str:
    """'host-cpu & ec-overhead (or storage-bandwidth)': the verdict, its co-limits, and the
    verdicts another run may name instead (borderline)."""
    return closing_text.verdict_text(verdict, co, near_)


def rate_text(r: dict[str, Any]) -> str:
    """The rate in Gb/s as the progress line prints it (figures.units.gbps_num), † when the
    level was not steady (its row's ``steady``: figures.steady.is_steady)."""
    if r.get("rate_bytes_per_s") is None:
        return "–"
    return gbps_num(r["rate_bytes_per_s"]) + ("" if r.get("steady", True) else "†")


def _first_clause(reason: str) -> str:
    s = " ".join(str(reason or "").split())
    for stop in (": ", "; ", ". "):
        i = s.find(stop)
        if 0 < i < WIDTH:
            s = s[:i]
            break
    return s.rstrip(".") if len(s) <= WIDTH else s[:WIDTH - 1].rstrip() + "…"


def _role_line(ev: dict[str, Any]) -> str | None:
    role = ev.get("limited_role")
    x = (ev.get("roles") or {}).get(role) if role else None
    if not x or not is_finite(x.get("cpu")) or not is_finite(x.get("limit")):
        return None
    thr = x.get("throttled")
    t = f", throttled {_pct(thr)}" if is_finite(thr) and thr >= 0.5 else ""
    return f"{role} CPU {fmt_num(x['cpu'])} of {fmt_num(x['limit'])} cores ({_pct(x['cpu'] / x['limit'])}{t})"


def short_reason(verdict: str, reason: str, ev: dict[str, Any], short: Any = None) -> str:
    """At most one line (WIDTH characters) naming the figure that decided ``verdict``."""
    if isinstance(short, str) and short.strip():
        return _fit(short)
    u = ev.get("utilisation") or {}
    io = "read" if ev.get("direction") == "read" else "write"
    line: str | None = None
    if verdict == "network":
        use = ev.get("link_use")
        if is_finite(use) and use >= (ev.get("thresholds") or {}).get("near", 0.85):
            line = f"client link at {_pct(use)} of its shaped rate"
        elif is_finite(u.get("network")):
            line = f"{_pct(u['network'])} of iperf3 {gbps(ev.get('network_bytes_per_s'))}"
    elif ev.get("limited_role") and verdict in ("gateway", "client", "storage-iops", "storage-bandwidth"):
        line = _role_line(ev)
    elif verdict == "storage-iops" and is_finite(u.get("storage-iops")):
        line = f"pool {fmt_num(ev.get(f'pool_{io}_ops'))} op/s, {_pct(u['storage-iops'])} of fio " \
               f"{fmt_num(ev.get('fio_iops'))} IOPS"
    elif verdict == "ec-overhead" and is_finite(ev.get("ec_ratio")):
        line = f"EC at {_pct(ev['ec_ratio'])} of {ev.get('rep_pool') or 'replicated'} " \
               f"({gbps(ev.get('rep_rate'))})"
    elif verdict == "host-cpu" and str((ev.get("deciding") or {}).get("figure", "")).startswith("scaling"):
        d = ev["deciding"]  # the chain's waits and a surely low scaling efficiency decided, not busy cores
        line = f"scaling efficiency {fmt_num(d.get('estimate', d['value']))} (at most {fmt_num(d['value'])} < " \
               f"{fmt_num(d['threshold'])}), the chain's threads wait for CPU"
    elif verdict == "host-cpu" and is_finite(ev.get("host_busy")):
        roles = sorted(((r, x.get("cpu")) for r, x in (ev.get("roles") or {}).items()
                        if r != "probe" and is_finite(x.get("cpu"))), key=lambda rx: -rx[1])[:2]
        line = f"host CPU {_pct(ev['host_busy'])}" \
            + (": " + ", ".join(f"{r} {fmt_num(c, 2)}" for r, c in roles) + " cores" if roles else "")
    elif verdict == "gateway":
        if is_finite(ev.get("gateway_ceiling")) and is_finite(ev.get("rate")) and ev["gateway_ceiling"] > 0:
            line = f"{_pct(ev['rate'] / ev['gateway_ceiling'])} of tmpfs gateway {gbps(ev['gateway_ceiling'])}"
        elif is_finite(ev.get("cpu")):
            line = f"gateway CPU {fmt_num(ev.get('gateway_cores'))} of {fmt_num(ev.get('cores'))} cores"
    elif verdict == "storage-bandwidth" and is_finite(u.get("storage-bandwidth")):
        line = f"{_pct(u['storage-bandwidth'])} of fio {io} {gbps(ev.get('fio_bw'))}"
    elif verdict == "concurrency":
        if is_finite(ev.get("best_higher_rate")) and is_finite(ev.get("rate")) and ev["rate"] > 0:
            line = f"x{fmt_num(ev['best_higher_rate'] / ev['rate'], 2)} faster at " \
                   f"c={fmt_num(ev.get('best_higher_level'))}"
    elif verdict == "client":
        if is_finite(ev.get("starved_frac")) and ev["starved_frac"] >= (ev.get("thresholds") or {}).get("starved", 0.25):
            line = f"slots idle, files queued: {_pct(ev['starved_frac'])} of the time"
        elif is_finite(ev.get("gateway_starved")) and ev["gateway_starved"] >= 0.25:
            line = f"slots idle {_pct(ev['gateway_starved'])} of the time even into tmpfs"
    elif verdict == "inconclusive":
        near = {k: v for k, v in u.items() if is_finite(v) and k not in (ev.get("not_ceilings") or [])}
        if near:
            k, v = max(near.items(), key=lambda kv: kv[1])
            line = f"nearest ceiling {CEILINGS.get(k, k)} at {_pct(v)}"
        elif ev:
            line = "no ceiling measured to compare with"
    return _fit(line) if line else _first_clause(reason)


def _fit(s: str) -> str:
    s = " ".join(s.split())
    return s if len(s) <= WIDTH else s[:WIDTH - 1].rstrip() + "…"


def rows(rd: Any, others: tuple = (), verdicts: Any = None) -> list[dict[str, Any]]:
    """One dict per point of the run (cell × level × direction), cells in the report's order.
    ``verdicts``: the run's VERDICT rows if the caller has them (else stored, or attributed now)."""
    cells, points = rd.cells, rd.points
    if verdicts is None:
        verdicts = verdicts_of(rd, others)
    recs = {}
    for v in verdicts.to_dict("records"):
        recs[(v["cell_id"], float(v["concurrency"]), v["direction"])] = v
    rank = {b: i for i, b in enumerate(BACKENDS)}
    out = []
    for p in points.to_dict("records"):
        cid = p["cell_id"]
        c = cells.loc[cid] if cid in cells.index else None
        d = p["direction"]
        v = recs.get((cid, float(p["concurrency"]), d)) or {}
        ev = evidence_of(v.get("evidence"))
        verdict = str(v.get("verdict") or "inconclusive")
        reason = str(v.get("reason") or "")
        rate = float(p["rate"]) if is_finite(p.get("rate")) else None
        out.append({
            "cell_id": cid, "cell": str(c["label"]) if c is not None else cid,
            "backend": str(c["backend"]) if c is not None else "",
            "concurrency": int(p["concurrency"]) if is_finite(p["concurrency"]) else p["concurrency"],
            "direction": d, "rate_bytes_per_s": rate,
            # plateau | slope: a steady window; whole: none found, the mean over the whole level
            "rate_method": str(p.get("method") or ""),
            "rate_gbps": rate * 8 / 1e9 if rate is not None else None,
            "rate_gibps": rate / GIB if rate is not None else None,
            "verdict": verdict, "co_limits": co_limits(verdict, ev), "near": near(verdict, ev),
            "short_reason": short_reason(verdict, reason, ev, v.get("short")),
            "reason": reason, "beats": beaten(ev),
            # the level reached a steady state (figures.steady.is_steady: not "not steady", not
            # the whole-level fallback): the outputs mark a level that did not
            "steady": bool(p.get("steady", True)),
            # cores other processes held: CPU confirm's host-cpu relief could give the roles
            "cpu_to_give": cpu_to_give(ev, True),
            "_order": (rank.get(str(c["backend"]) if c is not None else "", len(rank)),
                       str(c["label"]) if c is not None else cid, d != "write", float(p["concurrency"])),
        })
    out.sort(key=lambda r: r["_order"])
    for r in out:
        del r["_order"]
    return out


def counts(table: list[dict[str, Any]]) -> dict[str, int]:
    """How many points got each verdict (in order of first appearance)."""
    out: dict[str, int] = {}
    for r in table:
        out[r["verdict"]] = out.get(r["verdict"], 0) + 1
    return out


def as_json(rd: Any, table: list[dict[str, Any]]) -> dict[str, Any]:
    """The closing table as data (``--json``): the run, its points and the verdict counts."""
    return {"run": rd.run_id, "path": str(rd.run.path), "unit": "rate_gbps: 1e9 bit/s",
            "points": table, "verdict_counts": counts(table), "settle": settle(rd, table),
            "fit_for_sizing": fit_for_sizing(rd, table)}


def settle(rd: Any, rows_: list[dict[str, Any]]) -> list[str]:
    """Per inconclusive or borderline level, the experiment that would settle it."""
    return experiment_next.settle(rows_, str(rd.run.path), experiment_next.one_box(rd.manifest))


def fit_for_sizing(rd: Any, rows_: list[dict[str, Any]]) -> bool:
    return experiment_next.fit_for_sizing(rows_, experiment_next.one_box(rd.manifest))


STYLE = {"gateway": "magenta", "storage-bandwidth": "yellow", "storage-iops": "dark_orange",
         "ec-overhead": "cyan", "client": "blue", "concurrency": "bright_blue", "network": "green",
         "host-cpu": "red",
         "inconclusive": "dim"}


def common_words(labels: list[str]) -> list[str]:
    """The words every label has, in the first label's order ("o1 push"): said once in the
    closing table's title instead of in every row. None when that leaves a label empty."""
    if len(set(labels)) < 2:
        return []
    split = [lb.split() for lb in labels]
    common = [w for w in dict.fromkeys(split[0]) if all(w in ws for ws in split[1:])]
    return common if all(set(ws) - set(common) for ws in split) else []


def _without(label: str, words: list[str]) -> str:
    return " ".join(w for w in label.split() if w not in words)


def closing_rows(rows_: list[dict[str, Any]]) -> tuple[str, list[closing_text.Row]]:
    """The words every label shares (said once, in the title) and the table's rows."""
    reads = any(r["direction"] != "write" for r in rows_)
    common = common_words([r["cell"] for r in rows_])
    out = []
    for r in rows_:
        mark = " ▲ " + "; ".join(b["text"] for b in r["beats"]) if r["beats"] else ""
        out.append(closing_text.Row(_without(r["cell"], common), str(r["concurrency"]), rate_text(r),
                                    r["verdict"], list(r.get("co_limits") or []),
                                    list(r.get("near") or []), r["short_reason"] + mark,
                                    r["direction"] if reads else ""))
    return " ".join(common), out


def lines(rd: Any, rows_: list[dict[str, Any]], width: int) -> list[str]:
    """The closing table, its legend (the marks it uses), the verdict counts, whether the run
    is fit for sizing and what would settle each inconclusive or borderline level: the same
    lines on a terminal and in a pipe, at most ``width`` columns."""
    common, body = closing_rows(rows_)
    title = f"what capped each level — run {rd.run_id}" + (f" — {common}" if common else "")
    notes = closing_text.legend(body, any(r["beats"] for r in rows_))
    assumed = between_run.legend(getattr(rd, "manifest", {}))  # a between-run term the run assumed
    notes += [assumed] if assumed else []
    notes.append(f"verdicts: {counts_line(rows_)}")
    if rows_ and not fit_for_sizing(rd, rows_):
        host = sum(r["verdict"] == "host-cpu" for r in rows_)
        notes.append(f"not fit for sizing: {host} of {len(rows_)} levels host-cpu with every role "
                     "on one host (it measured the host, not the path)")
    return closing_text.lay_out(title, body, width, notes=notes, run=str(rd.run.path),
                                settle=[closing_text.split_settle(x, common) for x in settle(rd, rows_)])


def text(rd: Any, rows_: list[dict[str, Any]], width: int) -> str:
    """The closing table as plain text (a log, CI, a file): at most ``width`` columns, no
    trailing spaces."""
    return "\n".join(lines(rd, rows_, width)) + "\n"


def width() -> int:
    """The closing table's width: $COLUMNS, else the terminal's, else 100 (not a terminal)."""
    import os
    import shutil
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) >= 40:
        return int(cols)
    return shutil.get_terminal_size((100, 24)).columns if _is_tty() else 100


def counts_line(rows_: list[dict[str, Any]]) -> str:
    c = counts(rows_)
    return ", ".join(f"{n} {v}" for v, n in c.items()) if c else "no points measured"


def print_table(rd: Any, rows_: list[dict[str, Any]], console=None) -> None:
    """The closing table on ``console`` (default: stdout): the lines of :func:`text`, each
    verdict coloured on a terminal."""
    import sys

    from rich.console import Console
    from rich.text import Text
    if console is None and not _is_tty():
        sys.stdout.write(text(rd, rows_, width()))
        return
    console = console or Console(width=width(), highlight=False)
    start, vw = closing_text.verdict_column(closing_rows(rows_)[1], console.width)
    for ln in lines(rd, rows_, console.width):
        t = Text(ln)
        for v, style in STYLE.items():
            i = ln.find(v, start, start + vw)
            if i >= 0 and ln[i + len(v):i + len(v) + 1] in ("", " "):
                t.stylize(style, i, i + len(v))
        console.print(t, soft_wrap=True)


def _is_tty() -> bool:
    import sys
    return sys.stdout.isatty()
