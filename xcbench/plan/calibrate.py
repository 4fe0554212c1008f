"""Calibrated mode: replace datasheet numbers by what a run measured.

From runs in the result store (xcbench.store.rundir.RunDir):
- per-gateway rate vs concurrency: the steady-window rate of each (cell, concurrency) from
  xcbench.analysis (its stated rule), else the ``campaigns`` rate (median over repeats); the
  gateway ceiling comes from tmpfs cells (no storage behind the gateway) when there are some;
- per-OSD IOPS and bandwidth: ``probes`` (fio against the pool), pool rate x shards (or raw
  ratio) / OSDs -- a lower bound when the fio client, not the OSDs, was the limit;
- EC amplification: ``samples`` pool.bytes_used / pool.stored,
  labels {"pool": ...}, growth over the run, else the final ratio; without them (k+m)/k, said so;
- the network baseline: ``baseline`` (iperf3);
- gateway CPU per GB per cell, mode and checksum kind: ``campaigns.gateway_cpu_s_per_gb``
  (xcbench.plan.gateway_cores says how the checksum kind is found).
An efficiency (achieved / theoretical) needs the measured cluster's own spec (--calibrate-spec);
for the gateway the iperf3 baseline serves as its theoretical when no gateway spec is given.

**Fit for sizing.** A run sizes only from levels capped by what it measured: a run whose levels
were mostly host-cpu with every role on one box measured the box, not the path
(analysis.verdicts.experiment_next.fit_for_sizing), and :func:`unfit` says why in one line
(`plan --calibrate` refuses it, exit 2, unless --force). The per-gateway rate is taken only from
a level whose verdict is gateway: a level capped by anything else (the host's CPU, the storage,
the concurrency) is no gateway's ceiling, and without one the gateway stays on the datasheet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xcbench.analysis.verdicts.attribution import verdicts_of
from xcbench.analysis.verdicts.experiment_next import fit_for_sizing, one_box
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.errors import XcbError
from xcbench.figures.units import fmt_rate, size_or_none
from xcbench.plan.calibration_facts import find_int, sample_labels
from xcbench.plan.gateway import GatewayInputs, gateway_model
from xcbench.plan.gateway_cores import gateway_cpu_rows, pick_gateway_cpu
from xcbench.plan.rate_per_core import add_rate_per_core
from xcbench.plan.spec import Assumptions, ClusterSpec, GatewaySpec, Protection
from xcbench.plan.storage import StorageInputs, storage_model
from xcbench.store.rundir import RunDir

SMALL_BS, LARGE_BS = 64 << 10, 1 << 20
# raw (on the OSDs) and logical bytes of a pool: CephSampler's `df detail` names
RAW_METRICS = ("pool.bytes_used",)
STORED_METRICS = ("pool.stored",)


@dataclass
class Calibration:
    runs: list[str]
    curve: list[dict] = field(default_factory=list)  # per-gateway rate vs concurrency
    gateway_rate: float | None = None
    gateway_from: str = ""
    # per pool label: write_iops/read_iops/write_bw/read_bw per OSD -> {"value", "from"}
    osd: dict[str, dict[str, dict]] = field(default_factory=dict)
    amplification: dict[str, dict] = field(default_factory=dict)  # protection label -> ...
    pool_write: dict[str, dict] = field(default_factory=dict)  # label -> best large write (client B/s)
    baseline: float | None = None  # bytes/s (iperf3)
    num_osds: int | None = None
    gateway_cpu: list[dict] = field(default_factory=list)  # checksum, mode, s_per_gb, from
    rate_per_core: list[dict] = field(default_factory=list)  # the cores sweep (plan.rate_per_core)
    notes: list[str] = field(default_factory=list)
    notes_osds: bool = False

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict
        return asdict(self)


def load_calibration(runs: list[RunData | str | Path], num_osds: int | None = None) -> Calibration:
    """The calibration from ``runs``: each the command's one load of a run (RunData), or its
    directory."""
    cal = Calibration(runs=[str(r.run.path if isinstance(r, RunData) else r) for r in runs])
    for given in runs:
        rd = given if isinstance(given, RunData) else _load(given)
        run = rd.run
        n = num_osds or find_int(run.manifest, ("num_osds",)) or _osds_in_samples(run)
        if n:
            cal.num_osds = cal.num_osds or n
        if n and not cal.notes_osds:
            how = ("--calibrate-osds" if num_osds else "the manifest" if find_int(run.manifest, ("num_osds",))
                   else "distinct osd labels in the telemetry")
            cal.notes.append(f"{n} OSDs in the measured cluster (from {how})")
            cal.notes_osds = True
        pools = {cid: c.pool for cid, c in rd.cell_objects.items() if c.pool}  # the cells' own
        _campaigns(cal, rd, pools)
        _amplification(cal, run, pools)
        _probes(cal, run, pools, n)
        bl = run.table("baseline")
        if len(bl) and "bits_per_second" in bl:
            best = float(bl["bits_per_second"].max()) / 8
            cal.baseline = max(cal.baseline or 0.0, best) or None
    cal.curve.sort(key=lambda c: (c["run"], c["backend"] != "tmpfs", c["label"], c["concurrency"]))
    if not cal.curve:
        cal.notes.append("no campaign rows in the run(s): the gateway stays on datasheet numbers")
    return cal


def _load(path: str | Path) -> RunData:
    if not (Path(path) / "manifest.json").exists():
        raise XcbError(f"--calibrate {path}: not a run directory (no manifest.json)")
    return RunData(path)


def _verdicts(rd: RunData) -> dict[tuple[str, int], str]:
    """{(cell id, concurrency): verdict} of the run's write points (its stored verdicts, else
    attributed now: analysis.verdicts.attribution.verdicts_of)."""
    df = verdicts_of(rd)
    if not len(df):
        return {}
    if "direction" in df:
        df = df[df["direction"].fillna("write") != "read"]
    return {(str(c), int(lv)): str(v) for c, lv, v in zip(df["cell_id"], df["concurrency"], df["verdict"],
                                                          strict=True)}


def unfit(run: RunData | str | Path) -> str | None:
    """Why a run is not fit for sizing, in one line, or None (fit)."""
    rd = run if isinstance(run, RunData) else _load(run)
    path = rd.run.path
    rows = [{"verdict": v} for v in _verdicts(rd).values()]
    if not rows:  # no level (a probes-only run): nothing sized from levels; no gateway rate either
        return None
    if fit_for_sizing(rows, one_box(rd.manifest)):
        return None
    host = sum(r["verdict"] == "host-cpu" for r in rows)
    return (f"--calibrate {path}: not fit for sizing: {host} of {len(rows)} levels host-cpu with every "
            "role on one box (the box's CPU capped them, not the gateway or the storage); run with "
            "roles on hosts of their own (--hosts), or --force to size from it anyway")


def _osds_in_samples(run: RunDir) -> int | None:
    """Distinct ``osd`` labels in the telemetry (`osd perf` reports every OSD of the cluster)."""
    df = run.table("samples")
    if not len(df) or "metric" not in df:
        return None
    osd = df[df["metric"].astype(str).str.startswith("osd.")]["labels"].map(lambda v: sample_labels(v).get("osd"))
    n = osd.dropna().astype(str).nunique()
    return int(n) or None


def _steady_rates(cal: Calibration, rd: RunData) -> dict[tuple[str, int], float]:
    """Steady-window rates per (cell, concurrency) from the analysis (its stated rule), if any."""
    try:
        pts = rd.points
    except Exception as e:  # noqa: BLE001 - the campaign rates still serve; say why
        cal.notes.append(f"{rd.run_id}: no steady-state rates ({type(e).__name__}: {e}); "
                         "whole-campaign rates used")
        return {}
    out = {}
    for r in pts.to_dict("records"):
        if r.get("direction") == "read":  # the plan sizes ingest: write points only
            continue
        rate = float(r.get("rate") or 0)
        if math.isfinite(rate) and rate > 0:
            out[(str(r["cell_id"]), int(r["concurrency"]))] = rate
    return out


def _campaigns(cal: Calibration, rd: RunData, pools: dict[str, Protection]) -> None:
    run, cells = rd.run, rd.cell_objects
    df = run.table("campaigns")
    if not len(df):
        return
    df = df[df["rate"].astype(float) > 0]
    df = df[~df["direction"].isin(["read", "mixed"])]  # ingest: reads do not calibrate a write plan
    steady = _steady_rates(cal, rd) if len(df) else {}
    verdicts = _verdicts(rd)
    for (cid, conc), g in df.groupby(["cell_id", "concurrency"]):
        cell = cells.get(cid)
        prot = pools.get(cid)
        whole = float(g["rate"].astype(float).median())
        st = steady.get((str(cid), int(conc)))
        cal.curve.append({
            "run": run.path.name, "cell_id": cid, "label": cell.label if cell else cid,
            "backend": cell.backend if cell else "?", "pool": prot.label if prot else "-",
            "origins": cell.origins if cell else 1, "cores": cell.cores if cell else None,
            "mode": str(g["mode"].iloc[0]),
            "concurrency": int(conc), "rate": st or whole, "campaign_rate": whole,
            "rate_from": "steady window (figures.steady)" if st else "campaign median over repeats",
            "repeats": len(g), "verdict": verdicts.get((str(cid), int(conc)))})
    if df["gateway_cpu_s_per_gb"].notna().any():
        cal.gateway_cpu += gateway_cpu_rows(run.path.name, df, cells, run.table("verdicts"))
    add_rate_per_core(cal, run, cells, df)  # the cores sweep


def _probes(cal: Calibration, run: RunDir, pools: dict[str, Protection], num_osds: int | None) -> None:
    df = run.table("probes")
    if not len(df):
        return
    if not num_osds:
        cal.notes.append(f"{run.path.name}: number of OSDs unknown (not in the manifest): per-OSD "
                         "numbers skipped; pass --calibrate-osds N")
    # a client/server probe has per-host rows plus fio's aggregate (host 'all'): where the
    # aggregate exists use it alone, else sum the hosts
    if "host" in df:
        has_all = df.groupby(["cell_id", "job"])["host"].transform(lambda h: (h == "all").any())
        df = df[~has_all | (df["host"] == "all")]
    agg = df.groupby(["cell_id", "job"], as_index=False).agg(
        rw=("rw", "first"), bs=("bs", "first"), iops=("iops", "sum"), bw=("bw", "sum"))
    for r in agg.to_dict("records"):
        prot = pools.get(r["cell_id"])
        bs = size_or_none(r["bs"])
        if prot is None or bs is None:
            continue
        rw = str(r["rw"])
        src = f"{run.path.name} cell {r['cell_id']} job {r['job']} ({prot.label}, {rw} bs={bs})"
        write = rw in ("write", "randwrite")
        if not write and rw not in ("read", "randread"):
            continue
        if write and bs >= LARGE_BS:
            best = cal.pool_write.get(prot.label)
            if best is None or float(r["bw"]) > best["rate"]:
                cal.pool_write[prot.label] = {"rate": float(r["bw"]), "from": src}
        if not num_osds:
            continue
        amp = cal.amplification.get(prot.label, {}).get("measured", prot.raw_ratio)
        if bs >= LARGE_BS:
            key, v = ("write_bw", float(r["bw"]) * amp / num_osds) if write else \
                     ("read_bw", float(r["bw"]) / num_osds)
        elif bs <= SMALL_BS:
            key, v = ("write_iops", float(r["iops"]) * prot.shards / num_osds) if write else \
                     ("read_iops", float(r["iops"]) * prot.read_shards / num_osds)
        else:
            continue
        per_pool = cal.osd.setdefault(prot.label, {})
        if v > 0 and v > per_pool.get(key, {}).get("value", 0):
            per_pool[key] = {"value": v, "from": f"{src} over {num_osds} OSDs"}


def _amplification(cal: Calibration, run: RunDir, pools: dict[str, Protection]) -> None:
    df = run.table("samples")
    if not len(df) or "metric" not in df:
        return
    df = df[df["metric"].isin([*RAW_METRICS, *STORED_METRICS])]
    if not len(df):
        return
    prots = {p.name: p for p in pools.values()}
    df = df.assign(pool=df["labels"].map(lambda v: sample_labels(v).get("pool")))
    for pool, g in df.groupby("pool"):
        raw = g[g["metric"].isin(RAW_METRICS)].sort_values("wall")["value"].astype(float)
        stored = g[g["metric"].isin(STORED_METRICS)].sort_values("wall")["value"].astype(float)
        if not len(raw) or not len(stored) or pool not in prots:
            continue
        d_raw, d_st = raw.iloc[-1] - raw.iloc[0], stored.iloc[-1] - stored.iloc[0]
        if d_st > (1 << 20) and d_raw > 0:
            ratio, how = d_raw / d_st, "growth over the run"
        elif stored.iloc[-1] > 0:
            ratio, how = raw.iloc[-1] / stored.iloc[-1], "final ratio"
        else:
            continue
        p = prots[pool]
        cal.amplification[p.label] = {"measured": ratio, "nominal": p.raw_ratio, "pool": pool,
                                      "how": f"{run.path.name}: raw / stored bytes of the pool, {how}"}


# --- turning a calibration into model inputs -------------------------------------------------

def amplification_for(cal: Calibration, prot: Protection) -> tuple[float, str]:
    m = cal.amplification.get(prot.label)
    if m:
        return m["measured"], f"measured on pool {m['pool']} ({m['how']})"
    same = [v for k, v in cal.amplification.items() if k.startswith("ec" if prot.kind == "erasure" else "rep")]
    if same:
        over = sorted(v["measured"] / v["nominal"] for v in same)[len(same) // 2]
        return prot.raw_ratio * over, (f"no {prot.label} pool measured: nominal {prot.raw_ratio:.4g} x "
                                       f"overhead {over:.4g} measured on {', '.join(v['pool'] for v in same)}")
    return prot.raw_ratio, (f"no raw/stored pool samples for {prot.label}: fell back to "
                            f"the nominal {'(k+m)/k' if prot.kind == 'erasure' else 'r'} = {prot.raw_ratio:.4g}")


def storage_inputs(cal: Calibration, spec: ClusterSpec, file_size: int, a: Assumptions,
                   dev_spec: ClusterSpec | None = None) -> StorageInputs:
    amp, amp_note = amplification_for(cal, spec.protection)
    inp = StorageInputs(label="calibrated", amplification=amp, capacity_amplification=amp,
                        notes=[f"raw/logical: {amp_note}"])
    o: dict[str, dict] = {}
    if cal.osd:
        label, o = _pick_pool(cal.osd, spec.protection, key=lambda v: v.get("write_bw", {}).get("value", 0))
        if label != spec.protection.label:
            inp.notes.append(f"per-OSD numbers from the {label} pool (no {spec.protection.label} pool probed)")
    if o:
        inp.measured_drives = True
        inp.ops_per_shard_write = 1.0  # measured shard-op rates already include BlueStore's own ops
        inp.drive_iops = o.get("write_iops", {}).get("value")
        inp.drive_read_iops = o.get("read_iops", {}).get("value") or inp.drive_iops
        inp.drive_bandwidth = o.get("write_bw", {}).get("value")
        inp.drive_read_bandwidth = o.get("read_bw", {}).get("value") or inp.drive_bandwidth
        for k, v in o.items():
            val = fmt_rate(v["value"]) if k.endswith("bw") else f"{v['value']:,.0f} ops/s"
            inp.notes.append(f"per-OSD {k.replace('_', ' ')}: {val} from {v['from']}")
        inp.notes.append("per-OSD numbers of the measured cluster stand in for the planned drives "
                         f"({spec.drive_kind}); if those differ, give --calibrate-spec to carry an "
                         "efficiency over instead")
        missing = [k for k in ("write_iops", "write_bw") if k not in o]
        if missing:
            inp.notes.append(f"not measured, datasheet kept: {', '.join(missing)}")
    if dev_spec is not None and cal.pool_write:
        label, best = _pick_pool(cal.pool_write, spec.protection)
        dev_prot = next(p for p in _protections(cal) if p.label == label)
        dev = replace(dev_spec, protection=dev_prot)
        theo = storage_model(dev, 1.0, 0.0, file_size, a).theoretical
        eff = best["rate"] / theo
        inp.efficiency = eff
        inp.measured_drives = False
        inp.amplification = None  # the efficiency already holds the measured EC cost: rates use nominal
        inp.drive_iops = inp.drive_read_iops = inp.drive_bandwidth = inp.drive_read_bandwidth = None
        inp.ops_per_shard_write = None
        inp.notes.append(f"storage efficiency {eff:.3f} = achieved {fmt_rate(best['rate'])} ({best['from']}) / "
                         f"theoretical {fmt_rate(theo)} of {dev_spec.name} with {label}; carried over to "
                         f"{spec.name}")
        inp.chain = {"achieved": best["rate"], "achieved_from": best["from"], "dev_theoretical": theo,
                     "dev": f"{dev_spec.name} ({label}, datasheet theoretical)", "because": "measured run"}
    elif dev_spec is not None:
        inp.notes.append("no large-block write probe on a pool: storage efficiency not carried over")
    if not o and inp.efficiency is None:
        inp.notes.append("no per-OSD numbers measured: drives stay on datasheet numbers")
    return inp


def _protections(cal: Calibration) -> list[Protection]:
    out = []
    for lab in cal.pool_write:
        if lab.startswith("rep"):
            out.append(Protection("replicated", size=int(lab[3:])))
        else:
            k, m = lab[2:].split("+")
            out.append(Protection("erasure", k=int(k), m=int(m)))
    return out


def _pick_pool(pools: dict[str, dict], prot: Protection, key=lambda v: v["rate"]) -> tuple[str, dict]:
    """The measured pool most like the planned protection: same label, same kind (the best of
    them by ``key``), then any."""
    if prot.label in pools:
        return prot.label, pools[prot.label]
    kind = "ec" if prot.kind == "erasure" else "rep"
    same = [k for k in pools if k.startswith(kind)]
    label = max(same or pools, key=lambda k: key(pools[k]))
    return label, pools[label]


def gateway_inputs(cal: Calibration, g: GatewaySpec, a: Assumptions, *, carry_over: bool = False,
                   dev_gateway: GatewaySpec | None = None) -> GatewayInputs:
    """Measured per-gateway rate; with ``carry_over`` (a --calibrate-spec was given) also the
    efficiency against the measured gateway's spec, or else against the iperf3 baseline."""
    inp = GatewayInputs(label="calibrated")
    cpu = pick_gateway_cpu(cal.gateway_cpu, g.checksum, g.mode, g.security)
    if cpu is not None:
        inp.cpu_s_per_gb = cpu["s_per_gb"]
        inp.notes.append(f"gateway CPU {cpu['s_per_gb']:.3g} core-s/GB measured ({cpu['checksum']}, "
                         f"{cpu['mode']}, security {g.security}; {cpu['from']}) replaces "
                         "core_rate/checksum_rate")
    elif g.security != "none" and cal.gateway_cpu:
        inp.notes.append(f"no gateway CPU measured with security {g.security} "
                         f"({g.checksum}, {g.mode}): run a cell with security: [{g.security}]")
    pts = [c for c in cal.curve if (c["mode"] == "push") == (g.mode == "push")]
    if not pts:
        pts = cal.curve
        if pts:
            inp.notes.append(f"no {g.mode} campaigns measured: using the other mode's")
    pts = [c for c in pts if not c.get("cores")] or pts  # a CPU quota is not the gateway's ceiling
    capped = [c for c in pts if c.get("verdict") == "gateway"]  # a gateway's ceiling: its own cap
    if pts and not capped:
        named = sorted({str(c.get("verdict")) for c in pts})
        inp.notes.append("no level capped by the gateway (verdicts: " + ", ".join(named) + "): no "
                         "per-gateway rate measured; the gateway stays on the datasheet model")
        return inp
    pts = capped
    tm = [c for c in pts if c["backend"] == "tmpfs"]
    if tm:
        pts, what = tm, "tmpfs-backed gateway (gateway ceiling, no storage behind it)"
    elif pts:
        what = "gateway on Ceph (a lower bound: the storage was in the chain)"
    same = [c for c in pts if c["origins"] == g.origins_per_host]
    if pts and same:
        pts = same
    elif pts:
        inp.notes.append(f"no cells with {g.origins_per_host} origin(s) per host measured: "
                         f"using origins={sorted({c['origins'] for c in pts})}")
    if not pts:
        inp.notes.append("no campaigns: per-gateway rate from the datasheet model")
        return inp
    best = max(pts, key=lambda c: c["rate"])
    cal.gateway_rate = best["rate"]
    cal.gateway_from = (f"{what}: {best['run']} cell {best['cell_id']} ({best['label']}) "
                        f"at concurrency {best['concurrency']}, {best['rate_from']}, {best['repeats']} repeat(s)")
    inp.measured_rate = best["rate"]
    inp.notes.append(f"measured per-gateway rate {fmt_rate(best['rate'])} from {cal.gateway_from}")
    theo, how = None, ""
    if not carry_over:
        return inp
    if dev_gateway is not None:
        theo = gateway_model(dev_gateway, 1.0, a).theoretical
        how = f"the measured gateway's spec ({dev_gateway.source}), all writes"
    elif cal.baseline:
        theo, how = cal.baseline, "the iperf3 network baseline of the measured host"
    if not theo or not math.isfinite(theo):
        inp.notes.append("no theoretical rate for the measured gateway (no gateway section in "
                         "--calibrate-spec, no iperf3 baseline): efficiency not carried over")
    else:
        inp.efficiency = best["rate"] / theo
        inp.notes.append(f"gateway efficiency {inp.efficiency:.3f} = measured {fmt_rate(best['rate'])} / "
                         f"theoretical {fmt_rate(theo)} ({how}); carried over to the planned gateway spec")
    return inp

