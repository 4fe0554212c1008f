"""xcbench selftest: make bottlenecks whose answer is known, run the real chain, check the verdicts.

Runs on the embedded mini cluster (started if none is running, like `demo`, and taken down
again unless --keep-cluster). Exit 0 if every scenario is attributed right at every level,
1 on any mismatch or when a scenario could not run here ("not run", with its reason) unless
--allow-missing names it, 2 on bad input or when this host cannot make the bottlenecks (no cgroups).
"""

from __future__ import annotations

from pathlib import Path

from xcbench.ceph.cluster import default_state_dir
from xcbench.ceph.mini import MiniCluster
from xcbench.commands import add_store_arg, store_of
from xcbench.errors import XcbError
from xcbench.run.runner import Interrupted
from xcbench.selftest import output
from xcbench.selftest.run_scenarios import FRACTION, plan, run_selftest
from xcbench.selftest.run_scenarios import _stderr as log
from xcbench.selftest.scenarios import SCENARIOS


def add_parser(sub):
    p = sub.add_parser("selftest", help="known-answer scenarios: expected vs attributed verdicts",
                       description="Make known bottlenecks on purpose (cgroup CPU quotas, shaped "
                       "links) and check that each gets its known verdict; exit 1 if any differs.")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--scenario", action="append", metavar="NAME", choices=list(SCENARIOS),
                   help=f"run only these (repeatable; default all: {', '.join(SCENARIOS)})")
    p.add_argument("--allow-missing", action="append", metavar="NAME", choices=list(SCENARIOS),
                   default=[], help="a scenario that cannot run here (not run, with its reason) "
                                    "does not fail the self-test (repeatable)")
    p.add_argument("--quick", action="store_true",
                   help="fewer cells and smaller levels (each scenario a handful of seconds)")
    p.add_argument("--fraction", type=float, default=None,
                   help="a capped role gets this share of the least CPU it used uncapped "
                        "(default 0.5; any value in (0, 0.8] must give the same answers)")
    add_store_arg(p, "result store for the runs")
    p.add_argument("--state-dir", metavar="DIR",
                   help="embedded cluster state (default: the state home's cluster/)")
    p.add_argument("--keep-cluster", action="store_true",
                   help="leave a cluster the selftest started running (default: take it down)")
    return p


def main(args) -> int:
    fraction = FRACTION if args.fraction is None else args.fraction
    if not 0 < fraction <= 0.8:
        raise XcbError(f"selftest: --fraction {fraction}: must be in (0, 0.8] (a cap near the "
                       "role's own use would not bind)")
    # bad input fails here too; only "not yet" scenarios or ones with runs of their own (network:
    # a tmpfs gateway on emulated hosts): no cluster needed
    if all(s.needs or (s.own_run and not s.uses_cluster) for s in plan(args.scenario, args.quick)):
        try:
            result = run_selftest(None, names=args.scenario, quick=args.quick, out=Path(store_of(args)),
                                  fraction=fraction, allow_missing=args.allow_missing, log=log)
        except Interrupted as e:
            log(f"selftest interrupted; what was measured is in {e}")
            return 130
        print(output.as_json(result) if args.json else output.text(result))
        return 0 if result["ok"] else 1
    mini = MiniCluster(default_state_dir(args.state_dir))
    cluster, started = mini.up(log=log)
    log(f"mini cluster {'started' if started else 'already running'}: {cluster.conf}")
    try:
        result = run_selftest(cluster, names=args.scenario, quick=args.quick, out=Path(store_of(args)),
                              fraction=fraction, allow_missing=args.allow_missing, log=log)
    except Interrupted as e:
        log(f"selftest interrupted (cgroups removed); what was measured is in {e}")
        return 130
    finally:
        cluster.close()
        if started and not args.keep_cluster:
            mini.down(log=log)
    print(output.as_json(result) if args.json else output.text(result))
    return 0 if result["ok"] else 1
