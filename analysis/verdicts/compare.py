"""Compare two runs cell by cell: % difference of the steady rate, CI overlap, verdict changes.

Cells are matched by id (a hash of their settings: the same cell in two runs has the same id)
and concurrency level. A difference is called *significant* when the 95 % bootstrap CIs do not
overlap and both runs have at least MIN_REPEATS repeats (with two repeats a bootstrap CI is
just the range of the two values: shown, but not trusted for a call).
The cell fingerprints (layout, pool, gateway template inputs, versions) are compared too, since a
difference may come from a changed configuration rather than from the change under test; each
row names the fingerprint fields that changed (``config_fields``).

The regression gate (``slower``, `xcbench compare --fail-if-slower PCT`) names the levels whose
contender rate is below the base's by more than PCT even at the noisy end: the upper confidence
bound of contender / base, from each level's own relative error and each run's between-run term
(analysis.verdicts.between_run) in quadrature, is below 1 - PCT/100.
"""

from __future__ import annotations

import math
from typing import Any

from xcbench.analysis.verdicts import between_run
from xcbench.analysis.verdicts.attribution import verdicts_of
from xcbench.analysis.verdicts.borderline import combined
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.figures.stats import ci_overlap, pct_diff, point_rel_se, ratio_lower_bound
from xcbench.store.fingerprint import fingerprint_diff

MIN_REPEATS = 3


def _verdicts(rd: RunData) -> dict[tuple[str, float, str], str]:
    v = verdicts_of(rd)
    return {(r.cell_id, float(r.concurrency), r.direction): r.verdict for r in v.itertuples()}


def _pair_by_label(base: RunData, contender: RunData) -> dict[str, str]:
    """{contender cell id: base cell id} for cells whose settings changed (so did their id) but
    whose label did not, each label unique and the id in one run only: the same cell, changed
    (e.g. a gateway tunable), which the fingerprint diff then names."""
    bl, cl = base.cells["label"].to_dict(), contender.cells["label"].to_dict()
    b_by: dict[str, list[str]] = {}
    c_by: dict[str, list[str]] = {}
    for ids, by in ((bl, b_by), (cl, c_by)):
        for cid, label in ids.items():
            by.setdefault(label, []).append(cid)
    out = {}
    for label, cids in c_by.items():
        bids = b_by.get(label, [])
        if len(cids) == 1 and len(bids) == 1 and cids[0] not in bl and bids[0] not in cl:
            out[cids[0]] = bids[0]
    return out | _pair_by_settings(base, contender, out)


def _pair_by_settings(base: RunData, contender: RunData, paired: dict[str, str]) -> dict[str, str]:
    """{contender cell id: base cell id} for the cells still unpaired whose settings differ in
    one only (a CPU quota ``cores``, the streams...), each such match unique: the same cell with
    one thing changed on purpose, which ``config_fields`` then names."""
    bs, cs = base.cell_objects, contender.cell_objects
    b_left = {k: v for k, v in bs.items() if k not in cs and k not in paired.values()}
    c_left = {k: v for k, v in cs.items() if k not in bs and k not in paired}
    matches = {cid: [bid for bid, b in b_left.items() if len(b.differs(c)) == 1]
               for cid, c in c_left.items()}
    taken = [b for m in matches.values() for b in m]
    return {cid: m[0] for cid, m in matches.items() if len(m) == 1 and taken.count(m[0]) == 1}


def compare_data(base: RunData, contender: RunData) -> list[dict[str, Any]]:
    pair = _pair_by_label(base, contender)
    bp = {(r["cell_id"], float(r["concurrency"]), r["direction"]): r
          for r in base.points.to_dict("records")}
    cp = {(pair.get(r["cell_id"], r["cell_id"]), float(r["concurrency"]), r["direction"]): r
          for r in contender.points.to_dict("records")}
    bv = _verdicts(base)
    cv = {(pair.get(k[0], k[0]), k[1], k[2]): v for k, v in _verdicts(contender).items()}
    labels = {**contender.cells["label"].to_dict(), **base.cells["label"].to_dict()}
    bfp = {cid: c.get("fingerprint") for cid, c in base.manifest.get("cells", {}).items()}
    cfp = {pair.get(cid, cid): c.get("fingerprint")
           for cid, c in contender.manifest.get("cells", {}).items()}
    bcell = base.cell_objects
    ccell = {pair.get(cid, cid): c for cid, c in contender.cell_objects.items()}
    bterm = between_run.of(base.manifest).get("rate")
    cterm = between_run.of(contender.manifest).get("rate")
    rows = []
    for key in sorted(set(bp) | set(cp), key=lambda k: (labels.get(k[0], k[0]), k[1], k[2])):
        b, c = bp.get(key), cp.get(key)
        nan = math.nan
        brate, crate = (b["rate"] if b else nan), (c["rate"] if c else nan)
        overlap = ci_overlap(b["ci_low"], b["ci_high"], c["ci_low"], c["ci_high"]) if b and c else None
        vb, vc = bv.get(key), cv.get(key)
        fb, fc = bfp.get(key[0]), cfp.get(key[0])
        changed = fingerprint_diff(fb, fc) if fb and fc else []
        cb, cc = bcell.get(key[0]), ccell.get(key[0])
        if cb and cc:  # a setting changed on purpose
            # named once: by the fingerprint's field where it names one below that setting
            # (gateway -> gateway.tunables.buffers_maxbsz), else by the setting (cores)
            said = [k for k in cb.differs(cc) if not any(f.startswith(f"{k}.") for f in changed)]
            changed = [*(f"settings.{k}" for k in said), *changed]
        rows.append({
            "cell_id": key[0], "concurrency": key[1], "direction": key[2],
            "label": labels.get(key[0], key[0]) + ("" if key[2] == "write" else f" ({key[2]}s)"),
            "base_rate": brate, "base_ci": (b["ci_low"], b["ci_high"]) if b else (nan, nan),
            "contender_rate": crate, "contender_ci": (c["ci_low"], c["ci_high"]) if c else (nan, nan),
            "pct": pct_diff(brate, crate), "ci_overlap": overlap,
            "base_n": b["repeats"] if b else 0, "contender_n": c["repeats"] if c else 0,
            "significant": overlap is False and b is not None and c is not None and min(b["repeats"], c["repeats"]) >= MIN_REPEATS,
            "base_verdict": vb, "contender_verdict": vc,
            "verdict_changed": bool(vb and vc and vb != vc),
            "config_changed": bool(changed), "config_fields": changed,
            "only_in": "base" if c is None else ("contender" if b is None else ""),
            "base_rel_se": _rel_se(b, bterm), "contender_rel_se": _rel_se(c, cterm),
        })
    return rows


def _rel_se(p: dict[str, Any] | None, term: float | None) -> float:
    """A level's relative rate error: its own (figures.stats) and its run's between-run term."""
    if p is None:
        return math.nan
    own = point_rel_se(p)
    return combined(own, term) if term is not None or math.isfinite(own) else math.nan


def slower(rows: list[dict[str, Any]], pct: float) -> list[dict[str, Any]]:
    """The rows whose contender fell by more than ``pct`` % beyond noise, each with
    ``fell_at_least``: the smallest fall (a fraction) the noise allows. Unknown errors count
    as none (the plain ratio); a level in one run only is not judged."""
    out = []
    for r in rows:
        b, c = r["base_rate"], r["contender_rate"]
        if r["only_in"] or not (math.isfinite(b) and math.isfinite(c) and b > 0):
            continue
        # the lower bound of base / contender is the upper bound of contender / base, inverted
        lo = ratio_lower_bound(c, r["contender_rel_se"], b, r["base_rel_se"]) if c > 0 else math.inf
        if not lo > 0:
            continue
        fell = 1.0 - 1.0 / lo
        if fell > pct / 100.0:
            out.append({**r, "fell_at_least": fell})
    return out


def versions_changed(base: RunData, contender: RunData) -> dict[str, tuple[Any, Any]]:
    bv = (base.manifest.get("fingerprint") or {}).get("versions") or {}
    cv = (contender.manifest.get("fingerprint") or {}).get("versions") or {}
    return {k: (bv.get(k), cv.get(k)) for k in sorted(set(bv) | set(cv))
            if k != "packages" and bv.get(k) != cv.get(k)}
