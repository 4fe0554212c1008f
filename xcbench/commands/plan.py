"""xcbench plan: capacity planning and gateway sizing.

    xcbench plan --target ska-aa4
    xcbench plan --rate 100Gb/s --write-fraction 0.8 --file-size 6.5G --cluster-spec site.yaml
    xcbench plan --target hl-lhc-t1 --calibrate results/RUN --calibrate-spec devcluster --format html

The model is described in xcbench/plan/storage.py and gateway.py; every assumption is a flag.
"""

from __future__ import annotations

import sys
from dataclasses import fields
from pathlib import Path

from xcbench.analysis.verdicts.run_data import RunData
from xcbench.errors import XcbError
from xcbench.figures.units import fmt_rate, parse_size
from xcbench.gateway.security import SECURITY_MODES
from xcbench.plan.calibrate import load_calibration, unfit
from xcbench.plan.gateway_cores import parse_gateway_cpu
from xcbench.plan.planner import make_plan
from xcbench.plan.presets import PRESETS, resolve_target
from xcbench.plan.report import render_plan
from xcbench.plan.rtt import buffers, parse_rtts, rtt_section
from xcbench.plan.spec import Assumptions, example_path, examples, load_cluster, load_gateway
from xcbench.store.catalog import resolve_run
from xcbench.store.rundir import RunDir
from xcbench.system import outfiles


def add_parser(sub):
    p = sub.add_parser("plan", help="capacity planning and gateway sizing",
                       description="How many gateways and disks a target rate needs, from datasheets "
                                   "and (with --calibrate) from what a run measured.")
    t = p.add_argument_group("target")
    t.add_argument("--target", choices=sorted(PRESETS), help="a preset target")
    t.add_argument("--rate", help="a custom target rate, e.g. 100Gb/s (bits) or 12.5GB/s (bytes)")
    t.add_argument("--write-fraction", type=float, help="share of the rate written into the site (0..1)")
    t.add_argument("--file-size", help="mean file size, e.g. 6.5G (powers of 1024)")
    t.add_argument("--volume-per-year", help="data stored per year, e.g. 400PB (decimal) or 355PiB")
    s = p.add_argument_group("specs")
    s.add_argument("--cluster-spec", metavar="FILE|EXAMPLE",
                   help="cluster spec YAML, or the name of an example (default: tier1-hdd-ec8+3)")
    s.add_argument("--gateway-spec", metavar="FILE", help="gateway spec YAML (default: the cluster "
                   "spec's gateway section, else built-in defaults: 2 x 25 Gb/s, 32 cores)")
    s.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                   help="override a spec field, e.g. cluster.hosts=80, cluster.protection=ec4+2, "
                        "gateway.speed=100Gb/s (repeatable)")
    s.add_argument("--checksum", choices=("on-the-fly", "read-back"), help="= --set gateway.checksum=...")
    s.add_argument("--mode", choices=("push", "tpc"), help="= --set gateway.mode=...")
    s.add_argument("--origins-per-host", type=int, help="= --set gateway.origins_per_host=...")
    s.add_argument("--security", choices=SECURITY_MODES,
                   help="= --set gateway.security=...: the security mode whose measured gateway "
                        "CPU/GB sizes the gateways (--calibrate; default none)")
    c = p.add_argument_group("calibration")
    c.add_argument("--calibrate", nargs="+", action="extend", default=[], metavar="RUN",
                   help="runs (directory, id in --store, or 'latest') whose measurements replace "
                        "datasheet numbers")
    c.add_argument("--store", metavar="DIR", default=None,
                   help="result store for --calibrate run ids (default: $XCBENCH_STORE or "
                        "./results)")
    c.add_argument("--calibrate-spec", metavar="FILE|EXAMPLE",
                   help="spec of the measured cluster: carry its efficiency (achieved / theoretical) "
                        "over to the planned spec")
    c.add_argument("--calibrate-osds", type=int, help="OSDs of the measured cluster, if the run lacks it")
    c.add_argument("--force", action="store_true",
                   help="size from a --calibrate run that is not fit for sizing (the reason is printed first)")
    c.add_argument("--efficiency", metavar="ACHIEVED/THEORETICAL",
                   help="a published achieved rate over its theoretical, e.g. 24/50 (same unit) or 0.48: "
                        "the planned theoretical is multiplied by it (an 'extrapolated' column)")
    c.add_argument("--because", default="", metavar="TEXT",
                   help="where the --efficiency figures come from, e.g. \"RAL dev cluster, CHEP 2024\"")
    c.add_argument("--gateway-cpu", action="append", default=[], metavar="CHECKSUM/MODE=S",
                   help="gateway CPU seconds per GB measured elsewhere (e.g. benchmarks/bench_campaign.py), "
                        "CHECKSUM none|on-the-fly|read-back, MODE push|tpc, e.g. on-the-fly/push=1.59 (repeatable)")
    r = p.add_argument_group("RTT on paper (this kernel cannot emulate delay)")
    r.add_argument("--rtt", action="append", default=[], metavar="MS[,MS...]",
                   help="round-trip times in ms (US-CMS swept 5-120): per-stream ceiling, streams and "
                        "origins for the target")
    r.add_argument("--tcp-window-max", metavar="SIZE",
                   help="TCP buffer maximum, e.g. 64M (default: a --calibrate run's TCP audit, else "
                        "ESnet fasterdata's tier for the gateway NIC)")
    a = p.add_argument_group("assumptions (printed in every report)")
    for d in Assumptions.describe():
        f = next(x for x in fields(Assumptions) if x.name == d["name"])
        kw = {"choices": d["choices"]} if d["choices"] else {"type": type(f.default)}
        a.add_argument(d["flag"], dest=f"a_{d['name']}", default=f.default, metavar=None if d["choices"]
                       else "N", help=f"{d['help']} (default {f.default})", **kw)
    o = p.add_argument_group("output")
    o.add_argument("--format", choices=("text", "json", "html", "md"), default="text",
                   help="text on stdout (default), json on stdout, or an html/md file (--out)")
    o.add_argument("--json", action="store_const", dest="format", const="json",
                   help="= --format json")
    o.add_argument("--out", help="write here (html/md default: xcbench-plan-<target>.<fmt>)")
    o.add_argument("--list", action="store_true", help="list target presets and example specs, then exit")
    return p


def _spec_path(value: str | None) -> str | None:
    if value is None or Path(value).exists() or value not in examples():
        return value
    return str(example_path(value))


def main(args) -> int:

    if args.list:
        for name, t in PRESETS.items():
            print(f"{name:16s} {fmt_rate(t.rate):28s} {t.description}")
        print("example specs (--cluster-spec NAME):", ", ".join(examples()))
        return 0
    target = resolve_target(args.target, args.rate, args.write_fraction, args.file_size, args.volume_per_year)
    sets = list(args.set)
    for flag, key in (("checksum", "checksum"), ("mode", "mode"), ("origins_per_host", "origins_per_host"),
                      ("security", "security")):
        if getattr(args, flag) is not None:
            sets.append(f"gateway.{key}={getattr(args, flag)}")
    cpath = _spec_path(args.cluster_spec)
    spec, gw_section = load_cluster(cpath, sets)
    gateway = load_gateway(args.gateway_spec, gw_section,
                           spec.source if gw_section else "defaults", sets)
    assumptions = Assumptions(**{f.name: getattr(args, f"a_{f.name}") for f in fields(Assumptions)}).check()
    cal = dev_spec = dev_gw = None
    if args.calibrate_osds is not None and not 1 <= args.calibrate_osds <= 10_000_000:
        raise XcbError("--calibrate-osds: must be >= 1 and <= 10000000")
    args.calibrate = [str(resolve_run(r, args.store).path) for r in args.calibrate]
    loaded: list[RunData | str | Path] = [RunData(p) for p in args.calibrate]  # each run once
    for rd in loaded:  # a run unfit for sizing: one line, exit 2; --force: said first
        why = unfit(rd)
        if why and not args.force:
            raise XcbError(why)
        if why:
            print(f"plan: --force: {why.split(': ', 1)[1]}", file=sys.stderr, flush=True)
    if args.calibrate:
        cal = load_calibration(loaded, args.calibrate_osds)
    if args.calibrate_spec:
        if not args.calibrate:
            raise XcbError("--calibrate-spec: needs --calibrate RUN (the measurements of that cluster)")
        dev_spec, dev_section = load_cluster(_spec_path(args.calibrate_spec))
        dev_gw = load_gateway(None, dev_section, dev_spec.source) if dev_section else None
    eff = parse_efficiency(args.efficiency)
    if args.because and eff is None:
        raise XcbError("--because: goes with --efficiency (where the achieved/theoretical figures come from)")
    plan = make_plan(target, spec, gateway, assumptions, cal, dev_spec, dev_gw,
                     carry_over=bool(args.calibrate_spec), efficiency=eff, because=args.because,
                     gateway_cpu=parse_gateway_cpu(args.gateway_cpu))
    if args.rtt:
        plan["rtt"] = _rtt(args, plan, gateway, cal)
    out = args.out
    if out is None and args.format in ("html", "md"):
        out = f"xcbench-plan-{target.name}.{args.format}"
    if out is not None:
        outfiles.hold(out)
    text = render_plan(plan, args.format, out)
    if out is None:
        sys.stdout.write(text)
    else:
        print(f"plan written to {out}")
    return 0


def _rtt(args, plan: dict, gateway, cal) -> dict:
    rtts = parse_rtts(args.rtt)
    window = None
    if args.tcp_window_max is not None:
        try:
            window = parse_size(args.tcp_window_max)
        except (ValueError, XcbError):
            window = None
        if not window or window <= 0:
            raise XcbError(f"--tcp-window-max {args.tcp_window_max!r}: a size in bytes, e.g. 64M")
    audits = [(Path(r).name, RunDir.open(r).manifest.get("tcp_audit") or {}) for r in args.calibrate]
    per_origin = cal.gateway_rate if cal is not None else None
    return rtt_section(rtts, plan["target"]["rate"], buffers(window, audits, gateway.nic_speed),
                       per_origin, f"measured per gateway: {cal.gateway_from}" if per_origin else "")


def parse_efficiency(value: str | None) -> tuple[float, float] | None:
    """'24/50' -> (24, 50); '0.48' -> (0.48, 1). XcbError names the flag."""
    if value is None:
        return None
    a, slash, b = value.partition("/")
    try:
        ach, theo = float(a), float(b) if slash else 1.0
    except ValueError:
        raise XcbError(f"--efficiency {value!r}: write ACHIEVED/THEORETICAL (e.g. 24/50) or a fraction (0.48)") from None
    import math
    if not (math.isfinite(ach) and math.isfinite(theo) and ach > 0 and theo > 0 and ach <= theo):
        raise XcbError(f"--efficiency {value!r}: needs 0 < achieved <= theoretical")
    return ach, theo
