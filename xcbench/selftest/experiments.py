"""The self-test's runs beyond the uncapped one: a scenario's cells with its role capped, every
role under one quota at half the host (host-cpu), and the EC cells against their twins (ec-overhead).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from xcbench.analysis.verdicts.experiment import judge
from xcbench.ceph.cluster import Cluster
from xcbench.matrix import load_matrix
from xcbench.selftest import intervene, storage_io
from xcbench.selftest.capping import Cap, borrows, mini_pids, run_doc
from xcbench.selftest.judging import (
    cell_ids,
    could_use,
    failed_cells,
    judge_levels,
    least_use,
    most_use,
    run_verdicts,
    uncapped_evidence,
)
from xcbench.selftest.scenarios import CELLS, DECOY, Check, Scenario, host_cores, matrix_yaml
from xcbench.system.blkio import IoGroups
from xcbench.system.cgroups import CpuGroups

Log = Callable[[str], None]


def capped_run(s: Scenario, cores: dict[str, float], name: str, ids: dict[str, str], base: dict,
               sizes: Any, fraction: float, cluster: Cluster | None, out: Path, workdir: Path,
               also: Sequence[tuple[Scenario, tuple[str, ...]]] = (),
               uncapped: Path | None = None) -> tuple[list[Check], str]:
    """One run of the scenario's cells with its role capped, judged level by level; ``also``:
    other scenarios (and their cells, a part of these) judged on the same run; ``uncapped``: the
    uncapped run, whose probes and baseline this run takes where the cap leaves them as they were
    (capping.borrows)."""
    assert s.cap is not None
    doc = matrix_yaml([CELLS[k] for k in cores], sizes, name)
    mtx_path = workdir / f"{name}.yaml"
    mtx_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    cap_ids = cell_ids(load_matrix(mtx_path, cluster))
    osd_pids = mini_pids(cluster) if s.cap == "osd" else None
    with CpuGroups(None, run=f"selftest{os.getpid()}-{s.name}") as groups, \
            IoGroups(None, run=f"selftest{os.getpid()}-{s.name}") as io_groups:
        capped = Cap(s.cap, {cap_ids[k]: c for k, c in cores.items()}, groups, osd_pids,
                     io=s.io, dev=storage_io.device(cluster) if s.io else None, io_groups=io_groups,
                     borrow=uncapped if borrows(s.cap, s.io) else None)
        run, _ = run_doc(doc, name, cluster, out, workdir, cap=capped)
    got, failed = run_verdicts(run), failed_cells(run)
    checks: list[Check] = []
    for key, c in cores.items():
        if s.io:  # what the device did against its throttle, level by level (the expectation)
            for (cid, lv), v in got.items():
                if cid == cap_ids[key]:
                    storage_io.add_device(v["evidence"], s, c, capped.device.get(cid, {}).get(lv))
    if s.io:
        storage_io.add_twins(got)
    for sc, key in [(s, k) for k in cores] + [(r, k) for r, keys in also for k in keys if k in cores]:
        c = cores[key]
        use = least_use(base, ids[key], s.cap, sizes.levels)
        cap = {"role": s.cap, "cores": c, "fraction": fraction, "uncapped_least_cores": use,
               **{k: v for k, v in capped.applied.get(cap_ids[key], {}).items() if k == "group"}}
        if s.io:
            cap.update(io=s.io, limit=c, uncapped_least=storage_io.least_of(
                s, list(uncapped_evidence(base, ids[key], sizes.levels).values())))
        if s.decoy:
            cap.update(fraction=DECOY, uncapped_most_cores=most_use(base, ids[key], s.cap, sizes.levels),
                       could_use_cores=could_use(base, ids[key], s.cap, sizes.levels, float(host_cores()),
                                                 bool(getattr(cluster, "embedded", False))))
        checks += judge_levels(sc, key, cap_ids[key], sizes.levels, got, failed, cap,
                               uncapped_evidence(base, ids[key], sizes.levels))
    return checks, str(run.path)


def half_host(scenarios: list[Scenario], checks: list[Check], base: dict, ids: dict[str, str],
              sizes: Any, quick: bool,
              cluster: Cluster | None, out: Path, workdir: Path, name: str, log: Log) -> str:
    """The scenarios' cells run again with every role under one quota at half the host; each
    of their checks then holds only with the rate fallen in proportion (intervene.apply)."""
    keys = sorted({k for s in scenarios for k in s.cells_of(quick)}, key=list(CELLS).index)
    doc = matrix_yaml([CELLS[k] for k in keys], sizes, name)
    path = workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    cap_ids = cell_ids(load_matrix(path, cluster))
    embedded = bool(getattr(cluster, "embedded", False))
    names, host = intervene.roles(embedded), float(host_cores())
    by_key = {k: intervene.quota(host, intervene.used([(base.get((ids[k], lv)) or {}).get("evidence")
                                                      for lv in sizes.levels], names)) for k in keys}
    log(f"selftest: host-cpu by intervention: {names} under one quota of "
        + ", ".join(f"{k} {c:g}" for k, c in by_key.items()) + " cores")
    with CpuGroups(None, run=f"selftest{os.getpid()}-half-host") as groups:
        cap = Cap(names, {cap_ids[k]: c for k, c in by_key.items()}, groups,
                  mini_pids(cluster) if embedded else None)
        run, _ = run_doc(doc, name, cluster, out, workdir, cap=cap)
    got = run_verdicts(run)
    scen = {s.name for s in scenarios}
    for c in checks:
        if c.scenario in scen and c.cell in cap_ids:
            capped = (got.get((cap_ids[c.cell], c.level)) or {}).get("evidence")
            intervene.apply(c, capped, (base.get((c.cell_id, c.level)) or {}).get("evidence"),
                            by_key[c.cell], host)
    return str(run.path)


def ec_twin(scenarios: list[Scenario], checks: list[Check], base: dict, ids: dict[str, str], sizes: Any,
            quick: bool, cluster: Cluster | None, out: Path, workdir: Path, name: str, log: Log) -> str:
    """The EC cells and their twins run again, EC first (the uncapped run had the twin first):
    A-B-B-A; each EC check's right verdicts then come from that experiment (intervene.ec_expect),
    not from the rule's own EC ratio."""
    keys = [k for s in scenarios for k in s.cells_of(quick)]
    order = list(dict.fromkeys([*keys, *(w for k in keys for w in CELLS[k].with_)]))
    log(f"selftest: EC by intervention: {', '.join(order)} again, EC first")
    run, matrix = run_doc(matrix_yaml([CELLS[k] for k in order], sizes, name), name, cluster, out, workdir)
    again, now = run_verdicts(run), cell_ids(matrix)
    names = {s.name: s for s in scenarios}
    for c in checks:
        s = names.get(c.scenario)
        if s is None or not CELLS[c.cell].with_:
            continue
        twin = CELLS[c.cell].with_[0]
        ev = (base.get((c.cell_id, c.level)) or {}).get("evidence") or {}
        pairs = intervene.ec_pairs(base, {(ids[k], lv): v for (cid, lv), v in again.items()
                                          for k in (c.cell, twin) if now.get(k) == cid},
                                   c.cell_id, ids[twin], c.level)
        pred = intervene.ec_prediction(ev, (base.get((ids[twin], c.level)) or {}).get("evidence"))
        res: dict[str, Any] = judge("tighten", pred, pairs) if pred else \
            {"outcome": "inconclusive", "why": "no EC cost predicted", "ratio": None, "high": None}
        c.expected, note = intervene.ec_expect(res, ev)
        extra_ok, extra_note = s.extra(ev) if s.extra else (True, "")
        c.ok = c.verdict in c.expected and extra_ok
        c.note = "; ".join(x for x in (note, extra_note) if x)
        c.cause = {"role": "pool", "intervention": "EC against its twin, interleaved", "predicted": pred,
                   "ratio": res.get("ratio"), "outcome": res["outcome"], "ok": c.ok, "note": c.note,
                   "slowdown": 1 / res["ratio"] if res.get("ratio") else None,
                   "slowdown_low": 1 / res["high"] if res.get("high") else None, "at_quota": True}
    return str(run.path)
