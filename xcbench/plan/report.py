"""Plan output: text (terminal), JSON (the plan dict), HTML and Markdown (analysis/templates/plan.*.j2
through the shared report machinery, xcbench.analysis.report.render). Every figure carries its formula
and inputs; the assumptions are listed with the flag that changes each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from xcbench.analysis.report.render import fig_to_data_uri, new_figure, render, write_report
from xcbench.errors import XcbError
from xcbench.figures.units import fmt_bytes, fmt_capacity, fmt_rate, fmt_value, format_size, gbps
from xcbench.plan.rtt import rtt_lines
from xcbench.system import outfiles

FORMATS = ("text", "json", "html", "md")


def _v(value: Any, unit: str) -> str:
    return "–" if value is None else fmt_value(float(value), unit)


def sizing_rows(plan: dict) -> list[dict]:
    cols = plan["columns"]
    rows = []
    for i, f in enumerate(cols[0]["sizing"]):
        row = {"what": f["label"], "formula": f["formula"]}
        for c in cols:
            g = c["sizing"][i]
            row[c["label"]] = g["text"]
            row[c["label"] + "_inputs"] = "; ".join(f"{k}={v}" for k, v in g["inputs"].items())
        rows.append(row)
    return rows


def ceiling_rows(col: dict, part: str) -> list[dict]:
    binding = col[part]["binding"]
    return [{"resource": c["resource"], "theoretical": _v(c["theoretical"], "rate"),
             "derate": f"{c['derate']:.3g} ({c.get('derate_source', '')})",
             "usable": _v(c["usable"], "rate"), "binds": "◀ binds" if binding.endswith(c["resource"]) else "",
             "formula": c["formula"], "inputs": "; ".join(f"{k}={v}" for k, v in c["inputs"].items())}
            for c in col[part]["ceilings"]]


def figure_rows(col: dict, part: str) -> list[dict]:
    return [{"what": f["label"], "value": f["text"], "formula": f["formula"],
             "inputs": "; ".join(f"{k}={v}" for k, v in f["inputs"].items())}
            for f in col[part]["figures"]]


def budget_rows(col: dict) -> tuple[list[dict], list[dict]]:
    n = int(col["sizing"][0]["value"])
    at = {(b["nic"], b["direction"]): b for b in col["gateway"]["budget_at_target"]}
    rows = [{"what": b["what"], "nic": b["nic"], "direction": b["direction"],
             "per_byte": f"{b['per_byte']:.3g}"} for b in col["gateway"]["budget"]]
    totals = [{"nic": k[0], "direction": k[1], "per_byte": f"{b['per_byte']:.3g}",
               "at_target": f"{gbps(b['rate']):.3g} Gb/s", "of_line_rate": f"{b['fraction'] * 100:.0f} %",
               "gateways": str(n)} for k, b in at.items()]
    return rows, totals


def assumption_rows(plan: dict) -> list[dict]:
    return [{"flag": a["flag"], "value": str(a["value"]) + (" (changed)" if a["changed"] else ""),
             "default": str(a["default"]), "meaning": a["help"]} for a in plan["assumptions"]]


def headline(plan: dict) -> list[str]:
    t = plan["target"]
    lines = [f"target {t['name']}: {t['rate_text']}, write fraction {t['write_fraction']:g}, "
             f"files {fmt_bytes(t['file_size'])}"]
    if t["description"]:
        lines.append(t["description"])
    if t.get("preset"):
        lines.append(f"preset used: {t['preset']}" + (f" (source: {t['source']})" if t.get("source") else ""))
    if t["volume_per_year"]:
        lines.append(f"volume {fmt_capacity(t['volume_per_year'])} per year = an average ingest of "
                     f"{t['average_rate_text']}")
    c, g = plan["cluster"], plan["gateway_spec"]
    cl = (f", cluster network {c['cluster_nics']} x {gbps(c['cluster_nic_speed']):g} Gb/s"
          if c["cluster_nics"] else ", no separate cluster network")
    if c.get("description"):
        lines.append(c["description"])
    lines.append(f"cluster {c['name']} ({c['source']}): {c['hosts']} hosts x {c['drives_per_host']} "
                 f"{c['drive_kind']} {fmt_capacity(c['drive_size'])}, {c['nics']} x "
                 f"{gbps(c['nic_speed']):g} Gb/s public{cl}, {c['protection']}, "
                 f"object {format_size(c['object_size'])}, op {format_size(c['op_size'])}")
    internal = (f" + {g['internal_nics']} x {gbps(g['internal_nic_speed']):g} Gb/s to Ceph"
                if g["internal_nics"] else "")
    lines.append(f"gateway ({g['source']}): {g['nics']} x {gbps(g['nic_speed']):g} Gb/s{internal}, "
                 f"{g['cores']} cores, checksum {g['checksum']}, {g['mode']}, "
                 f"{g['origins_per_host']} origin(s) per host")
    if plan.get("calibration"):
        lines.append(f"calibrated from {', '.join(plan['calibration']['runs'])}")
    for n in plan.get("carried_over") or ():
        lines.append(f"extrapolated: {n}")
    return lines


WIDTH = 100  # the text plan's width when neither $COLUMNS nor a terminal says (a file, a pipe)
_width = [WIDTH]  # the width render_text lays out for (tables and lines fit it)


def width() -> int:
    """$COLUMNS, else the terminal's, else WIDTH."""
    import os
    import shutil
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) >= 40:
        return int(cols)
    return shutil.get_terminal_size((WIDTH, 24)).columns


def _table(rows: list[dict], cols: list[tuple[str, str]]) -> list[str]:
    """Columns padded to their widest cell; a table wider than the plan's width wraps its widest
    column's cells onto lines of their own under the row (the other columns kept)."""
    import textwrap
    text = [[str(r.get(k, "")) for k, _ in cols] for r in rows]
    widths = [max(len(h), *(len(x[i]) for x in text)) for i, (_, h) in enumerate(cols)]
    room = _width[0] - 2 - 2 * (len(cols) - 1)
    wrap_at = None
    if sum(widths) > room and widths:
        wrap_at = max(range(len(cols)), key=lambda i: widths[i])
        widths[wrap_at] = max(len(cols[wrap_at][1]), 12, room - (sum(widths) - widths[wrap_at]))
    out = ["  " + "  ".join(h.ljust(w) for (_, h), w in zip(cols, widths, strict=True))]
    for x in text:
        cells = [textwrap.wrap(v, widths[i], break_on_hyphens=False) or [""] if i == wrap_at else [v]
                 for i, v in enumerate(x)]
        for j in range(max(len(c) for c in cells)):
            out.append("  " + "  ".join((c[j] if j < len(c) else "").ljust(w)
                                        for c, w in zip(cells, widths, strict=True)))
    return [ln.rstrip() for ln in out]


def _fit(lines: list[str], width: int) -> list[str]:
    """Every line within ``width``: a longer one folded at spaces, its continuation indented under
    its first word (a word longer than the line stays whole)."""
    import textwrap
    out = []
    for ln in lines:
        if len(ln) <= width:
            out.append(ln)
            continue
        lead = " " * (len(ln) - len(ln.lstrip()))
        out += textwrap.wrap(ln.strip(), width, initial_indent=lead, subsequent_indent=lead + "    ",
                             break_long_words=False, break_on_hyphens=False)
    return out


def published_rows(plan: dict, html: bool = False) -> list[dict]:
    """Text: plain strings; HTML: the rule, source location and binding as tooltips (a narrow table)."""
    out = []
    for r in plan.get("published") or ():
        row = {**r, "holds_text": r["status"]}
        if html:
            row.update(what={"text": r["what"], "title": r["where"]},
                       usable_text={"text": r["usable_text"], "title": f"binding: {r['binding']}"},
                       holds_text={"text": r["status"], "title": r["rule"],
                                   "cls": "ok" if r["holds"] else "bad"})
        out.append(row)
    return out


def reference_lines(plan: dict) -> list[str]:
    """The published reference beside the model: write model, published figures, the site's
    network arithmetic, extrapolation chains, gateway cores (text form)."""
    wp = plan["write_path"]
    L = ["", f"WRITE MODEL: {wp['model']} -- {wp['why']}"]
    if plan.get("published"):
        L += ["", f"PUBLISHED FIGURES beside the model (source: {plan['published_source']})"]
        L += _table(published_rows(plan), [("what", "published figure"), ("published", "published"),
                                           ("theoretical_text", "model theoretical"),
                                           ("usable_text", "model usable"), ("ratio_text", "model/pub"),
                                           ("holds_text", "check")])
        for r in plan["published"]:
            L.append(f"  - {r['what']}: {r['rule']}: {r['status']}" + (f" (binding: {r['binding']})"))
            if r["model_difference"]:
                L.append(f"    model difference: {r['model_difference']}")
    sn = plan.get("site_network")
    if sn:
        L += ["", "NETWORK: the site's arithmetic beside the model's (writes)",
              f"  site rule of thumb: {sn['site_text']}  = {sn['site_rule']}",
              f"  model (theoretical): {sn['model_text']}  = {sn['model_rule']}", f"  {sn['sentence']}"]
    for ex in plan.get("extrapolation") or ():
        L += ["", f"EXTRAPOLATION ({ex['label']}): efficiency carried over, one line per factor"]
        L += _table(ex["lines"], [("factor", "factor"), ("value", "value"), ("from", "from")])
    ref = plan["gateway_reference"]
    L += ["", "GATEWAY CORES from measured CPU per GB (cores = per-gateway rate x s/GB / --cpu-utilisation)"]
    if plan.get("gateway_cpu_measured"):
        L += _table(plan["gateway_cores"], [("checksum", "checksum"), ("mode", "mode"), ("security", "security"),
                                            ("s_per_gb_text", "core-s/GB"), ("cores_text", "cores/gateway"),
                                            ("cores_100g_text", "cores at 100 Gb/s"), ("from", "from")])
    else:
        L.append("  no gateway CPU measured (a run's campaigns.gateway_cpu_s_per_gb, or --gateway-cpu)")
    L += [f"  reference: {ref['figures']}; {ref['derived']}", f"  ({ref['source']})"]
    L += sizing_lines(plan.get("gateway_sizing"))
    L += rtt_lines(plan.get("rtt"), _table)
    return L


def sizing_lines(sz: dict | None) -> list[str]:
    """Gateways and cores for the target from each measured CPU per GB (xcbench.plan.gateway_cores.sizing)."""
    if not sz:
        return []
    L = ["", f"GATEWAYS FOR {sz['rate_gbps']:.4g} Gb/s from CPU per GB (cores = rate x s/GB / "
             f"--cpu-utilisation {sz['cpu_utilisation']:g}; gateways of {sz['cores_per_gateway']} cores, "
             "CPU only)"]
    L += _table(sz["rows"], [("what", "figure"), ("s_per_gb_text", "core-s/GB"), ("cores", "cores"),
                             ("gateways", "gateways"), ("from", "from")])
    L.append(f"  {sz['reference']}")
    if sz["cells"]:
        L.append(f"  cells used: {'; '.join(sz['cells'])}")
    L += [f"  warning: {w}" for w in sz["warnings"]]
    return L


def answer(plan: dict) -> list[str]:
    """The plan's answer, first: for each column (datasheet, calibrated) the gateways, storage
    hosts and OSDs the target needs, and whether the spec'd cluster carries it."""
    labels = [c["label"] for c in plan["columns"]]
    t = plan["target"]
    L = [f"xcbench plan: {t['name']} at {t['rate_text']}: what it needs"]
    L += _table(sizing_rows(plan), [("what", "figure"), *((lab, lab) for lab in labels)])
    for w in (plan.get("gateway_sizing") or {}).get("warnings") or ():
        L.append(f"  warning: {w}")
    L.append("  (the formula and inputs of each figure: FIGURE INPUTS below)")
    return L


def render_text(plan: dict, width_: int | None = None) -> str:
    """The text plan, its answer first, every line within ``width_`` (default: :func:`width`)."""
    _width[0] = width_ or width()
    labels = [c["label"] for c in plan["columns"]]
    L = answer(plan)
    L += ["", "TARGET AND SPECS", *("  " + x for x in headline(plan))]
    L += reference_lines(plan)
    for col in plan["columns"]:
        L += ["", f"STORAGE CEILINGS ({col['label']}), external rate; binds: {col['storage']['binding']}"]
        L += _table(ceiling_rows(col, "storage"), [("resource", "resource"), ("theoretical", "theoretical"),
                                                   ("derate", "derate"), ("usable", "usable"), ("binds", "")])
        L += [f"  {f['what']}: {f['value']}  = {f['formula']}  [{f['inputs']}]" for f in figure_rows(col, "storage")]
        L += ["", f"GATEWAY CEILINGS ({col['label']}), per gateway; binds: {col['gateway']['binding']}"]
        L += _table(ceiling_rows(col, "gateway"), [("resource", "resource"), ("theoretical", "theoretical"),
                                                   ("derate", "derate"), ("usable", "usable"), ("binds", "")])
        rows, totals = budget_rows(col)
        L += ["", f"GATEWAY NIC BUDGET ({col['label']}): bytes on the gateway NICs per external byte"]
        L += _table(rows, [("what", "what"), ("nic", "nic"), ("direction", "dir"), ("per_byte", "per byte")])
        L += ["  per gateway at the target rate, spread over all gateways:"]
        L += _table(totals, [("nic", "nic"), ("direction", "dir"), ("per_byte", "per byte"),
                             ("at_target", "at target"), ("of_line_rate", "of line rate"), ("gateways", "gateways")])
        notes = col["storage"]["notes"] + col["gateway"]["notes"]
        if notes:
            L += ["", f"NOTES ({col['label']})", *(f"  - {n}" for n in notes)]
    cal = plan.get("calibration")
    if cal:
        L += ["", f"CALIBRATION: {', '.join(cal['runs'])}"]
        if cal["curve"]:
            L += ["  per-gateway rate vs concurrency:"]
            L += _table([{**c, "rate_text": fmt_rate(c["rate"])} for c in cal["curve"]],
                        [("run", "run"), ("label", "cell"), ("backend", "backend"), ("origins", "origins"),
                         ("mode", "mode"), ("concurrency", "conc"), ("rate_text", "rate"),
                         ("rate_from", "rate from")])
        L += [f"  - {n}" for n in cal["notes"]]
    L += ["", "FIGURE INPUTS"]
    for r in sizing_rows(plan):
        L.append(f"  {r['what']} = {r['formula']}")
        for lab in labels:
            L.append(f"    [{lab}]: {r[lab]}  <- {r[lab + '_inputs']}")
    L += ["", "ASSUMPTIONS (each changeable by its flag; spec fields by --set cluster.X=V / gateway.X=V)"]
    L += _table(assumption_rows(plan), [("flag", "flag"), ("value", "value"), ("meaning", "meaning")])
    L += ["", "MODEL", *(f"  - {n}" for n in plan["model_notes"])]
    return "\n".join(_fit(L, _width[0])) + "\n"


def plot(plan: dict) -> str:
    """PNG data URI: gateways and OSDs needed vs target rate, datasheet and calibrated."""
    fig, (ax1, ax2) = new_figure(10.0, 3.8, ncols=2)
    xs = [r["rate_gbps"] for r in plan["sweep"]]
    for c, style in zip(plan["columns"], ("-", "--"), strict=False):
        lab = c["label"]
        ax1.step(xs, [r[f"gateways_{lab}"] for r in plan["sweep"]], style, where="post", label=lab)
        ax2.step(xs, [r[f"osds_{lab}"] for r in plan["sweep"]], style, where="post", label=lab)
    for ax in (ax1, ax2):
        ax.axvline(plan["target"]["rate_gbps"], color="k", lw=0.8, ls=":")
        for name, g in plan["presets"].items():
            if xs[0] <= g <= xs[-1] and name != plan["target"]["name"]:
                ax.axvline(g, color="grey", lw=0.6, ls=":")
                ax.text(g, 0.02, f" {name}", rotation=90, fontsize=7, va="bottom", color="grey",
                        transform=ax.get_xaxis_transform())
        ax.set_xlabel("target rate (Gb/s, 1e9 bit/s)")
        ax.legend(loc="upper left")
    ax1.set_ylabel("gateways needed (incl. spares)")
    ax2.set_ylabel("OSDs needed for the rate")
    ax1.set_title("gateways vs target")
    ax2.set_title("OSDs vs target")
    return fig_to_data_uri(fig)


def report_context(plan: dict) -> dict:
    labels = [c["label"] for c in plan["columns"]]
    cols_sizing = [{"key": "what", "label": "figure", "num": False},
                   *({"key": lab, "label": lab, "num": True} for lab in labels),
                   {"key": "formula", "label": "formula", "num": False},
                   *({"key": lab + "_inputs", "label": f"inputs ({lab})", "num": False} for lab in labels)]
    details = []
    for col in plan["columns"]:
        rows, totals = budget_rows(col)
        details.append({"label": col["label"], "storage_binding": col["storage"]["binding"],
                        "gateway_binding": col["gateway"]["binding"],
                        "storage_ceilings": ceiling_rows(col, "storage"),
                        "gateway_ceilings": ceiling_rows(col, "gateway"),
                        "storage_figures": figure_rows(col, "storage"),
                        "gateway_figures": figure_rows(col, "gateway"),
                        "budget": rows, "budget_totals": totals,
                        "notes": col["storage"]["notes"] + col["gateway"]["notes"]})
    C = lambda *ks: [{"key": k, "label": h, "num": n} for k, h, n in ks]  # noqa: E731
    cal = plan.get("calibration") or {}
    return {
        "title": f"xcbench plan: {plan['target']['name']} at {plan['target']['rate_text']}",
        "headline": headline(plan), "sizing_columns": cols_sizing, "sizing": sizing_rows(plan),
        "details": details, "plot": plot(plan),
        "ceiling_columns": C(("resource", "resource", False), ("theoretical", "theoretical", True),
                             ("derate", "derate", False), ("usable", "usable", True), ("binds", "", False),
                             ("formula", "formula", False), ("inputs", "inputs", False)),
        "figure_columns": C(("what", "figure", False), ("value", "value", True), ("formula", "formula", False),
                            ("inputs", "inputs", False)),
        "budget_columns": C(("what", "what", False), ("nic", "NIC", False), ("direction", "direction", False),
                            ("per_byte", "bytes per external byte", True)),
        "total_columns": C(("nic", "NIC", False), ("direction", "direction", False),
                           ("per_byte", "per external byte", True), ("at_target", "per gateway at target", True),
                           ("of_line_rate", "of line rate", True), ("gateways", "gateways", True)),
        "assumption_columns": C(("flag", "flag", False), ("value", "value", False),
                                ("default", "default", False), ("meaning", "meaning", False)),
        "assumptions": assumption_rows(plan), "model_notes": plan["model_notes"],
        "curve_columns": C(("run", "run", False), ("label", "cell", False), ("backend", "backend", False),
                           ("pool", "pool", False), ("origins", "origins", True), ("mode", "mode", False),
                           ("concurrency", "concurrency", True), ("rate_text", "rate", True),
                           ("rate_from", "rate from", False), ("repeats", "repeats", True)),
        "curve": [{**c, "rate_text": fmt_rate(c["rate"])} for c in cal.get("curve", [])],
        "calibration": cal or None,
        "write_path": plan["write_path"], "published": published_rows(plan, html=True),
        "published_source": plan.get("published_source"),
        "published_columns": C(("what", "published figure", False), ("published", "published", True),
                               ("theoretical_text", "model theoretical", True),
                               ("usable_text", "model usable (planned)", True), ("ratio_text", "model / published", True),
                               ("holds_text", "check (hover: the rule)", False)),
        "site_network": plan.get("site_network"), "extrapolation": plan.get("extrapolation") or [],
        "chain_columns": C(("factor", "factor", False), ("value", "value", True), ("from", "from", False)),
        "gateway_cores": plan["gateway_cores"] if plan.get("gateway_cpu_measured") else [],
        "cores_columns": C(("checksum", "checksum", False), ("mode", "mode", False), ("security", "security", False),
                           ("s_per_gb_text", "core-s/GB", True), ("cores_text", "cores per gateway", True),
                           ("cores_100g_text", "cores at 100 Gb/s", True), ("from", "from", False)),
        "gateway_reference": plan["gateway_reference"],
        # gateways and cores for the target per measured CPU/GB, and RTT on paper (text blocks)
        "sizing_text": "\n".join(ln for ln in sizing_lines(plan.get("gateway_sizing"))
                                 + rtt_lines(plan.get("rtt"), _table) if ln),
    }


def render_plan(plan: dict, fmt: str = "text", out: str | Path | None = None) -> str:
    """The plan in ``fmt``; written to ``out`` when given (Markdown images go beside it)."""
    if fmt not in FORMATS:
        raise XcbError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if fmt == "text":
        text = render_text(plan)
    elif fmt == "json":
        text = json.dumps(plan, indent=2, sort_keys=True) + "\n"
    else:
        text = render("plan", report_context(plan), fmt)
        if out is not None:
            write_report(text, out, fmt)
            return text
    if out is not None:
        outfiles.write(out, text)  # by descriptor from / (xcbench.system.outfiles)
    return text
