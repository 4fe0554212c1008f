"""The network known-answer scenario: a client host whose link is shaped well
below what the gateway and its storage do here; the verdict must be ``network`` at every level.

What it makes, on emulated hosts (xcbench.hosts.emulate; unique names, bridge and free /24 per
run, so it coexists with others' hosts on a shared machine):

- a client host ``nc<tag>`` and a gateway host ``ng<tag>`` (gateway and redirector; a tmpfs
  cell, so storage is out of the way), the campaign driven from the client host;
- first an **unshaped** run: the same tmpfs cell and levels over the same hosts, link unshaped.
  Its slowest level's steady rate U is what the chain does through the hosts here at least;
- then the client host's link is shaped (tc tbf, both ways) to ``FRACTION`` x U, a fraction
  stated here and derived from U measured now, never tuned to make the verdict come out: the
  rule (analysis.verdicts.link_use: a level moving >= 85 % of its link's shaped rate) must hold for it;
- the **shaped** run: every level, with the iperf3 baseline from the client host to the gateway
  host over the shaped link (the network verdict from the link does not need it; it should
  agree, and both figures are in the checks' notes).

Each level's check carries the link's measured bytes/s against its shaped rate (evidence
``links``, ``link_use``). The hosts are removed after each run however it ends.

It registers itself (xcbench.selftest.SCENARIO_MODULES) in place of the "not yet" placeholder
of xcbench.selftest.scenarios, as a scenario with runs of its own (``own_run``): no cell of the
uncapped run, no cluster (tmpfs). Where it cannot run (not root, no tc/iperf3/xrootd) it is
listed as "not yet" with the reason. Quick: 2 levels (~1 min for both runs here); full: 3.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from xcbench.ceph.cluster import Cluster
from xcbench.errors import XcbError
from xcbench.hosts import load_inventory
from xcbench.hosts.emulate import down, free_network, up
from xcbench.hosts.emulate import why_not as hosts_why_not
from xcbench.matrix import load_matrix
from xcbench.run.runner import RunOptions
from xcbench.selftest import registry
from xcbench.selftest.capping import run_concluded
from xcbench.selftest.judging import roles_short, run_verdicts
from xcbench.selftest.scenarios import FULL, QUICK, Check

NAME = "network"
WHAT = "the client host's link shaped (tc tbf) to a fraction of the unshaped chain's rate"
# the shaped rate: this share of the chain's slowest steady rate over the unshaped hosts. Well
# below it, because each transfer pauses a fixed time per file (open, checksum, delete) and per
# chunk (one in flight), which a fast link turns into idle share: at 0.25 x (924 Mb/s here) two
# transfers moved only 82-95 % of the link second by second, four a flat 96 %
FRACTION = 0.1
TELEMETRY = "host:0.5,roles:0.5,gateway,links"
# iperf3 over the shaped link: a few points, in the direction the campaign pushes (write)
BASELINE = {"streams": (1, 4), "seconds": 2, "directions": ("write",)}
Log = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def why_not() -> str | None:
    """Why the scenario cannot run here (None: it can)."""
    return hosts_why_not("xrootd", "cmsd", "iperf3")


def levels_of(quick: bool) -> dict[str, Any]:
    """The self-test's levels and time rule (xcbench.selftest.scenarios QUICK/FULL: several 1 s
    link samples in each steady window), with files of 64 MiB: the gap between one file and the
    next (open, checksum, delete) leaves the link idle for a moment, which a scenario about the
    link keeps small."""
    sizes = QUICK if quick else FULL
    return {"levels": tuple(sizes.levels), "file_size": "64M", "files": sizes.files,
            "campaign": sizes.campaign()}


def hosts_doc(bridge: str, net: Any, hosts: dict[str, tuple[list[str], int, str | None]]) -> dict[str, Any]:
    """An inventory of emulated hosts on a bridge of ``net``'s: {name: (roles, which address of
    the network, the link's tc rate or None: unshaped)}; the bridge takes the first address."""
    addr = list(net.hosts())
    out: dict[str, Any] = {}
    for name, (roles, n, rate) in hosts.items():
        out[name] = {"roles": roles, "transport": "netns", "address": str(addr[n]),
                     **({"link": {"rate": rate}} if rate else {})}
    return {"bridge": {"name": bridge, "address": f"{addr[0]}/{net.prefixlen}"}, "hosts": out}


def inventory_doc(tag: str, rate: str | None, net: Any) -> dict[str, Any]:
    """The scenario's two emulated hosts; ``rate``: the client link's tc rate (None: unshaped)."""
    return hosts_doc(f"xcbn{tag}", net, {f"nc{tag}": (["client"], 10, rate),
                                         f"ng{tag}": (["gateway", "redirector"], 20, None)})


@contextlib.contextmanager
def emulated(doc: dict[str, Any], workdir: Path, name: str) -> Iterator[Any]:
    """The hosts of ``doc`` up for the block, then down (everything the record lists).

    Recorded in the default state dir: the ``links`` telemetry device reads the links of the
    hosts recorded there while telemetry.build() passes it no inventory (analysis.verdicts.link_use then
    keeps only the run's own client hosts, from the manifest)."""
    path = workdir / f"{name}-hosts.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    inv = load_inventory(path)
    up(inv)
    try:
        yield inv
    finally:
        down(None, inv)


def matrix_doc(name: str, levels: tuple[int, ...], sizes: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "description": "xcbench selftest: network",
            "defaults": {"origins": [1], "modes": ["push"], "concurrency": list(levels),
                         "file_size": sizes["file_size"], "files": sizes["files"], "repeats": 1,
                         "gateway": {"async": False, "buffers_maxbsz": "16M"},
                         "campaign": sizes["campaign"]},
            "backends": {"tmpfs": {"size": ["2G"]}}}


def _run(doc: dict[str, Any], name: str, cluster: Cluster | None, out: Path, workdir: Path, inv: Any,
         baseline: bool) -> Any:
    path = workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    matrix = load_matrix(path, cluster)
    opts = RunOptions(store=out, name=name, baseline=baseline, probes=False, report=False,
                      progress=False, telemetry=TELEMETRY, hosts=inv,
                      extra={"baseline": dict(BASELINE)} if baseline else {})
    return run_concluded(matrix, cluster, opts)


def level_verdicts(run: Any) -> dict[int, dict[str, Any]]:
    """{level: {verdict, reason, evidence}} of a run of one cell (judging.run_verdicts)."""
    return {lv: v for (_, lv), v in run_verdicts(run).items()}


def record(result: dict[str, Any], key: str, run: Any, t0: float) -> None:
    """A scenario's run under ``key`` in its result: the run's path and its seconds since ``t0``."""
    result["runs"][key] = str(run.path)
    result["seconds"][key] = round(time.monotonic() - t0, 1)


def _failed(run: Any) -> str:
    bad = [f"{cid}: {c.error or c.status}" for cid, c in run.cells.items()
           if c.status not in ("complete", "degraded")]
    return "; ".join(bad) or "no verdict"


def iperf3_bits_per_s(run: Any) -> float:
    """The best iperf3 rate of the run's baseline (bits/s; NaN: none)."""
    df = run.table("baseline")
    if not len(df) or "bits_per_second" not in df:
        return math.nan
    vals = [float(v) for v in df["bits_per_second"] if isinstance(v, (int, float)) and v == v]
    return max(vals) if vals else math.nan


def link_note(ev: dict[str, Any], iperf3_bits_per_s: float, figures: dict[str, Any] | None = None) -> str:
    """'unshaped chain >= 4485 Mb/s, shaped to 448mbit (0.1 x); link nc1: 417.1 Mb/s of 448.0
    Mb/s shaped (93 %, 5 samples); iperf3 over the shaped link 429.5 Mb/s'."""
    f = figures or {}
    parts = [f"unshaped chain >= {f['unshaped_bytes_per_s'] * 8 / 1e6:.0f} Mb/s (slowest level), "
             f"link shaped to {f['shaped_rate']} ({f['fraction']:g} x)"] if f.get("shaped_rate") else []
    for host, x in sorted((ev.get("links") or {}).items()):
        moved = max(v for v in (x.get("tx") or 0, x.get("rx") or 0))
        lim = x.get("limit")
        use = x.get("use")
        parts.append(f"link {host}: {moved * 8 / 1e6:.1f} Mb/s of "
                     + (f"{lim * 8 / 1e6:.1f} Mb/s shaped" if lim else "an unshaped link")
                     + (f" ({use * 100:.0f} %" if isinstance(use, (int, float)) else " (")
                     + f", {x.get('samples')} samples)")
    if not ev.get("links"):
        parts.append("no link evidence")
    if math.isfinite(iperf3_bits_per_s):
        parts.append(f"iperf3 over the shaped link {iperf3_bits_per_s / 1e6:.1f} Mb/s")
    return "; ".join(parts)


def run_network(cluster: Cluster | None, *, quick: bool = False, out: Path = Path("results"),
                workdir: Path | None = None, stamp: str | None = None, fraction: float = FRACTION,
                log: Log = _stderr) -> dict[str, Any]:
    """Run the scenario; {"checks": [Check...], "runs": {name: path}, "seconds": {...},
    "figures": {unshaped_bytes_per_s, shaped_rate, shaped_bytes_per_s, iperf3_bits_per_s, levels}}."""
    why = why_not()
    if why:
        raise XcbError(f"selftest: network: {why}")
    stamp = stamp or time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    workdir = workdir or out / f"selftest-{stamp}"
    workdir.mkdir(parents=True, exist_ok=True)
    sizes = levels_of(quick)
    levels = sizes["levels"]
    tag = f"{os.getpid() % 100000}"
    result: dict[str, Any] = {"checks": [], "runs": {}, "seconds": {}, "figures": {}}
    # 1. the chain over the unshaped hosts at every level: the slowest is what a link must be below
    def hosts_run(key: str, rate: str | None, say: Callable[[Any], str]) -> Any:
        """The cell at every level over the hosts (the client's link at ``rate``), recorded."""
        name, t0 = f"selftest-{stamp}-{key}", time.monotonic()
        with emulated(inventory_doc(tag, rate, free_network()), workdir, name) as inv:
            log(say(inv))
            run = _run(matrix_doc(name, levels, sizes), name, cluster, out, workdir, inv, rate is not None)
        record(result, key, run, t0)
        return run
    run = hosts_run("network-unshaped", None, lambda inv: f"selftest: network: unshaped run over hosts "
                    f"{', '.join(h.name for h in inv.hosts)} at c={list(levels)}")
    got_rates = {lv: (v.get("evidence") or {}).get("rate") for lv, v in level_verdicts(run).items()}
    result["figures"]["unshaped_levels_bytes_per_s"] = got_rates
    rates = {lv: float(r) for lv, r in got_rates.items() if isinstance(r, (int, float)) and r > 0}
    if set(rates) != set(levels):
        why = f"the unshaped run measured no steady rate at some level ({_failed(run)})"
        result["checks"] = [Check(NAME, "tmpfs", "-", lv, ("network",), "not run", why, False)
                            for lv in levels]
        return result
    unshaped = min(rates.values())
    mbit = max(1, int(unshaped * 8 * fraction / 1e6))
    rate = f"{mbit}mbit"
    result["figures"].update(unshaped_bytes_per_s=unshaped, fraction=fraction, shaped_rate=rate,
                             shaped_bytes_per_s=mbit * 1e6 / 8)
    # 2. the same cell, every level, the client host's link shaped to fraction x unshaped
    run = hosts_run("network", rate, lambda inv: f"selftest: network: the chain did >= "
                    f"{unshaped * 8 / 1e6:.0f} Mb/s unshaped; client link shaped to {rate} "
                    f"({fraction} x), levels c={list(levels)}")
    bits_per_s = iperf3_bits_per_s(run)
    result["figures"]["iperf3_bits_per_s"] = bits_per_s
    got_all = level_verdicts(run)
    cell_id = next(iter(run.cells), "-")
    for lv in levels:
        v = got_all.get(lv)
        if v is None:
            result["checks"].append(Check(NAME, "tmpfs", cell_id, lv, ("network",), "missing",
                                          f"no verdict: {_failed(run)}", False))
            continue
        ev = v["evidence"]
        has_links = any(isinstance(x.get("use"), (int, float)) for x in (ev.get("links") or {}).values())
        ok = v["verdict"] == "network" and has_links
        result["figures"].setdefault("levels", {})[lv] = {
            "verdict": v["verdict"], "rate_bytes_per_s": ev.get("rate"), "link_use": ev.get("link_use"),
            "links": ev.get("links")}
        result["checks"].append(Check(NAME, "tmpfs", cell_id, lv, ("network",), v["verdict"],
                                      v["reason"], ok, note=link_note(ev, bits_per_s, result["figures"]),
                                      roles=roles_short(ev), evidence=ev))
    return result


def register_scenario() -> None:
    """Take the place of the "not yet" placeholder in the self-test's registry (when it has
    one: xcbench.selftest.registry), run by :func:`run_network` in a run of its own."""
    fields = getattr(registry.Scenario, "__dataclass_fields__", {})
    if "own_run" not in fields:
        return
    registry.register(registry.Scenario(NAME, WHAT, ("network",), (), own_run=run_network,
                                        needs=why_not()), replace=True)


register_scenario()
