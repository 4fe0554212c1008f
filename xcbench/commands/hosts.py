"""xcbench hosts up FILE | down [FILE] | status: emulated hosts (network namespaces) on this
machine, as an inventory describes them (xcbench.hosts.emulate)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from xcbench.hosts import emulate, load_inventory


def add_parser(sub):
    p = sub.add_parser("hosts", help="emulated hosts: network namespaces, shaped links, CPU quotas",
                       description="Make, remove or show the emulated hosts of an inventory: network "
                       "namespaces with shaped links and CPU quotas.")
    p.add_argument("--state-dir", dest="state", metavar="DIR",
                   help="where the record of what was made is kept (default: the state home, "
                        "see docs/security.md)")
    # the older spelling keeps working, unlisted
    p.add_argument("--state", dest="state", metavar="DIR", help=argparse.SUPPRESS)
    hs = p.add_subparsers(dest="hosts_cmd", metavar="up|down|status", required=True)
    u = hs.add_parser("up", help="make the inventory's netns hosts (bridge, veths, tc, cgroups)")
    u.add_argument("file", help="the inventory (hosts YAML)")
    d = hs.add_parser("down", help="remove every emulated host recorded (also after a crash)")
    d.add_argument("file", nargs="?", help="only this inventory's hosts")
    s = hs.add_parser("status", help="what is recorded and whether it is there")
    s.add_argument("--json", action="store_true", help="print the record as JSON")
    return p


def main(args) -> int:
    if args.hosts_cmd == "up":
        inv = load_inventory(args.file)
        t0 = time.monotonic()
        rec = emulate.up(inv, args.state, log=lambda s: print(s, flush=True))
        br = rec.data["bridge"]
        print(f"{len(inv.netns_hosts)} emulated hosts up on bridge {br['name']} "
              f"({br['address']}) in {time.monotonic() - t0:.2f} s; record {rec.path}")
        return 0
    if args.hosts_cmd == "down":
        t0 = time.monotonic()
        done, left = emulate.down(args.state, load_inventory(args.file) if args.file else None)
        if left:
            print(f"xcbench: error: hosts down: could not remove {', '.join(left)}",
                  file=sys.stderr)
            return 1
        print(f"hosts down: {len(done)} record(s) removed in {time.monotonic() - t0:.2f} s"
              if done else "hosts down: nothing recorded")
        return 0
    rows = emulate.status(args.state)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    if not rows:
        print("no emulated hosts recorded")
    for r in rows:
        br = r.get("bridge") or {}
        print(f"{r['record']}: bridge {br.get('name')} {br.get('address')}"
              + ("" if r.get("complete") else " (INCOMPLETE: `xcbench hosts down`)"))
        for h in r["hosts"]:
            there = "up" if h["netns"] and h["link"] else "MISSING"
            extra = (f" cores={h['cores']:g}" if h.get("cores") else "") + \
                (f" rate={h['rate_bits_per_s'] / 1e6:g}Mbit/s" if h.get("rate_bits_per_s") else "") + \
                (f" (TIGHTENED to {h['reshaped_bits_per_s'] / 1e6:g}Mbit/s by an experiment: the next "
                 "`xcbench confirm` restores it)" if h.get("reshaped_bits_per_s") else "")
            print(f"  {h['name']:<12} {h['address']:<15} {there}{extra}")
    return 0
