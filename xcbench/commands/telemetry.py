"""xcbench telemetry list: the telemetry devices a run can choose, and what each records."""

from __future__ import annotations

import json
import textwrap

from xcbench.telemetry.devices import DEVICES


def add_parser(sub):
    p = sub.add_parser("telemetry", help="list the telemetry devices (for run --telemetry)",
                       description="Telemetry devices: choose them with `xcbench run --telemetry "
                                   "host,gateway` or with intervals, `--telemetry host:0.5,ceph:2`.")
    s = p.add_subparsers(dest="telemetry_command", metavar="ACTION", required=True)
    ls = s.add_parser("list", help="what each device records, its default interval, when it applies")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def main(args) -> int:
    if args.json:
        print(json.dumps([{"name": d.name, "interval": d.interval, "records": d.records,
                           "applies": d.applies} for d in DEVICES.values()], indent=2))
        return 0
    width = max(len(n) for n in DEVICES)
    print(f"{'device':<{width}}  interval  records")
    for d in DEVICES.values():
        lines = textwrap.wrap(f"{d.records}; for {d.applies}", 76)
        print(f"{d.name:<{width}}  {d.interval:>6g} s  {lines[0]}")
        for more in lines[1:]:
            print(f"{'':<{width}}  {'':>8}  {more}")
    return 0
