"""xcbench baseline: the host TCP audit (fasterdata) and iperf3 at 1-32 streams, both ways."""

from __future__ import annotations

import json

from xcbench.commands import argcheck
from xcbench.errors import XcbError
from xcbench.network import tcpaudit
from xcbench.network.baseline import MAX_STREAMS, SECONDS, STREAMS, sweep


def add_parser(sub):
    p = sub.add_parser("baseline", help="network baseline: host TCP audit + iperf3 streams sweep",
                       description="Audit the hosts' TCP settings and sweep iperf3 streams between "
                       "client and gateway hosts: the network ceiling the verdicts compare with.")
    p.add_argument("--audit", action="store_true",
                   help="only audit the host's TCP settings against ESnet fasterdata (no traffic)")
    p.add_argument("--tune-tcp", action="store_true",
                   help="set fasterdata's values for the sweep, put the old ones back after (root)")
    p.add_argument("--pair", action="append", metavar="CLIENT,GATEWAY",
                   help="client and gateway addresses (repeatable; default 127.0.0.1,127.0.0.1)")
    p.add_argument("--streams", default=",".join(map(str, STREAMS)),
                   help=f"parallel streams per point (default {','.join(map(str, STREAMS))})")
    p.add_argument("--seconds", type=int, default=SECONDS, help=f"seconds per point (default {SECONDS})")
    p.add_argument("--target-gbps", type=float,
                   help="size the buffer recommendations for this rate (default: the NIC speed)")
    p.add_argument("--json", action="store_true", help="print the audit and rows as JSON")
    return p


def _pairs(values: list[str] | None) -> list[tuple[str, str]]:
    pairs = []
    for v in values or ["127.0.0.1,127.0.0.1"]:
        parts = [x.strip() for x in v.split(",")]
        if len(parts) != 2 or not all(parts):
            raise XcbError(f"--pair: {v!r} is not CLIENT,GATEWAY")
        pairs.append((parts[0], parts[1]))
    return pairs


def print_audit(result: dict) -> None:
    print(f"TCP audit against {result['source']}")
    print(f"buffer tier: {result['tier_gbps']} Gb/s ({result['tier_how']})")
    for c in result["checks"]:
        mark = {True: "ok  ", False: "LOW ", None: "n/a "}[c["ok"]]
        line = f"  {mark} {c['key']} = {c['value'] if c['value'] is not None else '?'}"
        if c["recommended"]:
            line += f"  (fasterdata: {c['recommended']})"
        if c["note"]:
            line += f"  [{c['note']}]"
        print(line)
        if c["fix"] and c["ok"] is False:
            print(f"         fix: {c['fix']}")


def print_rows(rows: list[dict]) -> None:
    by: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        by.setdefault((r["client"], r["gateway"], r["streams"]), {})[r["direction"]] = r
    print(f"{'client -> gateway':<32} {'streams':>7} {'ingress/write Gb/s':>19} "
          f"{'egress/read Gb/s':>17} {'retr w/r':>10}")
    def gbps(r: dict | None) -> str:
        return "–" if not r or not r["bits_per_second"] else f"{r['bits_per_second'] / 1e9:.2f}"
    for (client, gateway, n), d in by.items():
        retr = "/".join(str((d.get(x) or {}).get("retransmits", "–")) for x in ("write", "read"))
        print(f"{client + ' -> ' + gateway:<32} {n:>7} {gbps(d.get('write')):>19} {gbps(d.get('read')):>17} {retr:>10}")
    for r in rows:
        if r["error"]:
            print(f"point {r['streams']} streams {r['direction']}: {r['error']}")


def main(args) -> int:
    pairs = _pairs(args.pair)
    streams = argcheck.int_list("--streams", args.streams, 1, MAX_STREAMS)
    if args.seconds < 1:
        raise XcbError(f"--seconds: {args.seconds} must be >= 1")
    addresses = sorted({a for p in pairs for a in p})
    result = tcpaudit.audit(addresses, target_gbps=args.target_gbps)
    if args.audit:
        if args.tune_tcp:
            raise XcbError("--audit only reads: drop --tune-tcp, or drop --audit to tune for a sweep")
        if args.json:
            print(json.dumps({"audit": result, "findings": tcpaudit.findings(result)}, indent=2))
        else:
            print_audit(result)
        return 0
    if args.tune_tcp and __import__("os").geteuid() != 0:
        raise XcbError("--tune-tcp: setting sysctls needs root")
    ctx = tcpaudit.TcpTuning(result) if args.tune_tcp else None
    if ctx is not None:
        with ctx:
            applied = dict(ctx.changed)
            rows = sweep(pairs, streams=streams, seconds=args.seconds)
    else:
        applied, rows = {}, sweep(pairs, streams=streams, seconds=args.seconds)
    if args.json:
        print(json.dumps({"audit": result, "tuned": applied, "rows": rows}, indent=2, default=str))
        return 0
    print_audit(result)
    for key, (old, new) in applied.items():
        print(f"tuned for the sweep: {key} {old} -> {new} (restored)")
    print_rows(rows)
    return 0 if any(r["bits_per_second"] for r in rows) else 1
