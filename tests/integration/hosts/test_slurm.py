"""Nodes from Slurm, for real: munged, slurmctld and three slurmds, each in an emulated host of its
own (tests/support/slurm.py), one of them on a link shaped to 20 Mbit/s (the inventory's
``link.rate``); a run whose client hosts are the nodes of an allocation xcbench asks for, its
campaign agents job steps, the gateway on this machine at the bridge address.

Default suite (short: 4 MiB files, 3-6 s levels, Slurm up once for the module):
- a tmpfs and a CephFS cell, clients on three nodes through srun, two levels: every level's
  merged rate is the nodes' bytes (their own streams, moved by each node's measured clock
  offset) over the merged window, each node's bytes are its verified transfers' (counted once),
  every node has its transfers and its link samples, the verdict names the shaped node at every
  level its link caps (and at no other), and it caps at one level at least; the manifest has the
  job, its nodes and its steps; nothing of it is left;
- every step under ``cpus_per_task`` (Slurm's task/cgroup here): a busy step uses at most its
  cores and runs only on its CPUs, and its agent reports that limit (``node.cpu.limit_cores``);
- the coordinator killed with -9 mid-level, the origin on a node and every step under
  ``cpus_per_task: 1`` (the origin's xrootd and the agents are each held to one core), its
  gateway agent killed too (as Slurm's SIGKILL after KillWait would: it cannot clean up), then
  the next command: within 30 s squeue has none of the run's steps nor its allocation, no process
  of the run is left on any node, and no file of the run in any node's scratch (the tmpfs, the
  agent's dirs) nor in the node's own state home (each node has one: tests/support/slurm.py);
  the same after SIGTERM, where the run itself removes what its killed agent left;
- faults, each one line (exit 2): no Slurm here, a partition that does not exist, an allocation
  that never starts (squeue's reason, within its timeout).
Slow (`make slow`): the full run (16 MiB files, 10-20 s levels, iperf3 through steps); a node
dying mid-level; `confirm` through the same allocation kind, made and taken.

The machine is shared: names carry this process's id, the network is a free 10.2xx.y.0/24.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.support.emulated import emulated_hosts
from tests.support.slurm import node_home, slurm_cluster, why_no_slurm
from tests.support.waits import until
from xcbench.hosts.emulate import why_not
from xcbench.system import statedir
from xcbench.system.scratch import tagged

TAG = f"{os.getpid() % 10000}"
SHAPED = "20mbit"


def _why_not() -> str:
    return why_not("xrootd") or why_no_slurm()


pytestmark = [pytest.mark.integration, pytest.mark.skipif(bool(_why_not()), reason=_why_not() or "-")]


@pytest.fixture(scope="module")
def site(workdir):
    """Three emulated hosts (the last on a shaped link) with a slurmd each, slurmctld and munged
    on this machine; SLURM_CONF set for the module. All of it gone after."""
    from xcbench.hosts.emulate import free_network
    net = list(free_network().hosts())
    names = [f"n{TAG}{x}" for x in "abc"]
    data = {"bridge": {"name": f"xcbs{TAG}", "address": f"{net[0]}/24"},
            "hosts": {n: {"roles": ["client"], "transport": "netns", "address": str(net[10 + i])}
                      for i, n in enumerate(names)}}
    data["hosts"][names[2]]["link"] = {"rate": SHAPED}
    before = os.environ.get("SLURM_CONF")
    with emulated_hosts(workdir, data, "nodes.yaml") as (_, inv):
        with slurm_cluster(workdir / "slurm", inv) as sc:
            print(f"\nSlurm up: munged {sc.start_s['munged']:.2f} s, slurmctld "
                  f"{sc.start_s['slurmctld']:.2f} s, 3 slurmd {sc.start_s['slurmd']:.2f} s")
            os.environ.update(sc.env)
            try:
                yield sc, inv
            finally:
                if before is None:
                    os.environ.pop("SLURM_CONF", None)
                else:
                    os.environ["SLURM_CONF"] = before
    assert not (workdir / "slurm" / "state").exists()


def _files(d: Path, name: str, slurm: dict, backends: dict, duration: dict,
           concurrency: list[int], size: str = "4M") -> tuple[Path, Path]:
    m = {"name": f"slurm-{TAG}-{name}",
         "defaults": {"origins": [1], "modes": ["push"], "concurrency": concurrency,
                      "file_size": size, "files": 12, "repeats": 1,
                      "campaign": {"duration": duration,
                                   "steady": {"rule": "autoterm", "window": "3s", "points": 3,
                                              "tolerance": "50%"}}},
         "backends": backends}
    (d / f"{name}.yaml").write_text(yaml.safe_dump(m))
    (d / f"{name}-slurm.yaml").write_text(yaml.safe_dump({"slurm": slurm}))
    return d / f"{name}.yaml", d / f"{name}-slurm.yaml"


def _xcbench(*args: str, env: dict | None = None, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xcbench", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, **kw)


def _squeue(*args: str) -> list[str]:
    out = subprocess.run(["squeue", "-h", *args], capture_output=True, text=True, timeout=30)
    return [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]


def _node_pids(sc, inv) -> dict[str, list[str]]:
    """Every process in each node's network namespace but its slurmd: what a run left there."""
    out = {}
    for h in inv.netns_hosts:
        pids = subprocess.run(["ip", "netns", "pids", h.netns], capture_output=True, text=True,
                              timeout=30).stdout.split()
        keep = {str(sc.slurmd[h.name].pid)} if h.name in sc.slurmd else set()
        left = []
        for p in pids:
            if p in keep or not Path(f"/proc/{p}").exists():
                continue
            try:
                cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            except OSError:
                continue
            if cmd and "slurmd -D -N" not in cmd:  # nsenter's child: the slurmd itself
                left.append(f"{p} {cmd[:80]}")
        out[h.name] = left
    return out


def _node_procs(inv, word: str) -> dict[str, list[int]]:
    """{node: pids in its network namespace whose command line has ``word``}."""
    out: dict[str, list[int]] = {}
    for h in inv.netns_hosts:
        pids = subprocess.run(["ip", "netns", "pids", h.netns], capture_output=True, text=True,
                              timeout=30).stdout.split()
        for p in pids:
            try:
                cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if word in cmd:
                out.setdefault(h.name, []).append(int(p))
    return out


def _leftovers(sc, inv, tag: str) -> dict[str, list[str]]:
    """What a run left in the nodes' scratch (the dirs named with its scratch tag: the nodes
    share this machine's file system, so the test looks at them directly) and in each node's
    own state home (records of its commands)."""
    left = {"scratch": [str(p) for p in tagged(tag)]}
    for h in inv.netns_hosts:
        home = node_home(sc.dir, h.name)
        left[h.name] = [str(f) for f in home.rglob("*.json")] if home.is_dir() else []
    return {k: v for k, v in left.items() if v}


def _bytes_in(spans: list[tuple[float, float, float]], w0: float, w1: float) -> float:
    """Bytes of (start, end, bytes) buckets inside [w0, w1], each spread evenly over its span."""
    got = 0.0
    for a, b, n in spans:
        lo, hi = max(a, w0), min(b, w1)
        if hi > lo and b > a:
            got += n * (hi - lo) / (b - a)
    return got


def _node_spans(raw: Path, campaign: str, node: str, offset: float) -> list[tuple[float, float, float]]:
    """A node's own 1 s buckets from its raw stream, moved onto this machine's clock."""
    rows = [r for line in (raw / f"{campaign}.{node}.jsonl").read_text().splitlines() if line.strip()
            for m in [json.loads(line)] if m.get("table") == "timeline" for r in m["rows"]]
    rows.sort(key=lambda r: r["wall"])
    spans, prev = [], None
    for r in rows:
        start = (r["wall"] - r["t"]) if prev is None else prev
        spans.append((start - offset, r["wall"] - offset, float(r["bytes"])))
        prev = r["wall"]
    return spans


# short: the default suite's; full (`make slow`): 16 MiB files, levels of 10-20 s, with the
# iperf3 baseline and the fio probes (iperf3's client on each node through a step)
VARIANTS = {"short": {"size": "4M", "duration": {"min": "3s", "max": "6s"},
                      "flags": ["--no-baseline", "--no-probes", "--telemetry", "host,roles"]},
            "full": {"size": "16M", "duration": {"min": "10s", "max": "20s"},
                     "flags": ["--baseline-streams", "1", "--baseline-seconds", "2"]}}


@pytest.mark.parametrize("variant", ["short", pytest.param("full", marks=pytest.mark.slow)])
def test_run_from_three_nodes_through_srun(site, workdir, ceph_cluster, variant):
    from xcbench.analysis.verdicts.rules import NEAR
    from xcbench.analysis.verdicts.run_data import RunData
    from xcbench.store.rundir import RunDir
    sc, inv = site
    nodes = [h.name for h in inv.netns_hosts]
    shaped = nodes[2]
    v = VARIANTS[variant]
    matrix, hosts = _files(workdir, f"two-cells-{variant}", {"nodes": 3, "time": "30"},
                           {"tmpfs": {"size": ["512M"]},
                            "cephfs": {"layouts": [{"stripe_unit": "4M", "stripe_count": 1,
                                                    "object_size": "4M"}], "pools": ["replicated"]}},
                           v["duration"], [3, 9], v["size"])
    out = workdir / f"results-{variant}"
    t0 = time.monotonic()
    res = _xcbench("run", str(matrix), "--hosts", str(hosts), "--store", str(out), *v["flags"],
                   "--no-report", "--ceph-conf", str(ceph_cluster.conf))
    print(f"\nrun: {time.monotonic() - t0:.1f} s")
    assert res.returncode == 0, res.stderr[-3000:]
    run = RunDir.open(next(out.iterdir()))
    assert [c.status for c in run.cells.values()] == ["complete", "complete"], res.stderr[-2000:]

    # the manifest: the job, its nodes, the steps; every node's clock at start and end
    h = json.loads((run.path / "manifest.json").read_text())["hosts"]
    job = h["slurm"]
    assert job["ours"] and job["nodes"] == nodes and job["job_id"].isdigit()
    words = {s["what"] for s in job["steps"]}
    assert {"campaign-agent", "sh", "xcbench"} <= words, words  # agents, clock checks, versions
    assert {s["node"] for s in job["steps"] if s["what"] == "campaign-agent"} == set(nodes)
    assert all(s["name"].startswith(job["step_prefix"]) for s in job["steps"])
    assert set(h["clock"]) == set(h["clock_end"]) == {*nodes, "coordinator"}
    assert {n: h["hosts"][n]["transport"] for n in nodes} == dict.fromkeys(nodes, "slurm")

    rd = RunData(run.path)
    tr = run.table("transfers")
    assert set(tr["file_state"]) == {"FINISHED"} and (tr["checksum_source"] == tr["checksum_dest"]).all()
    samples = run.table("samples")
    link = samples[(samples["sampler"] == "node") & (samples["metric"] == "link.tx_bytes.rate")]
    verdicts = run.table("verdicts")
    capped: list[tuple[str, int]] = []
    evidence: list[dict] = []
    for cell_id in run.cells:
        raw = run.path / "raw" / "agents" / cell_id
        hosts_of_cell = {json.loads(x)["host"] if isinstance(x, str) else x["host"]
                         for x in link[link["cell_id"] == cell_id]["labels"]}
        assert hosts_of_cell == set(nodes), hosts_of_cell  # every node's link sampled
        for conc in (3, 9):
            p = rd.point(cell_id, conc)
            camp = f"{cell_id}-c{conc}-r0"
            g = tr[tr["campaign_id"] == camp]
            assert set(g["host"]) == set(nodes), (camp, set(g["host"]))  # every node has its rows
            (w0, w1), = p["windows"]
            per_node = {n: _node_spans(raw, camp, n, h["clock"][n]["offset_s"]) for n in nodes}
            # the merged rate: the nodes' own bytes over the merged window, nothing twice
            in_window = sum(_bytes_in(s, w0, w1) for s in per_node.values())
            assert math.isclose(p["rate"], in_window / (w1 - w0), rel_tol=1e-6), (p["rate"], in_window)
            for n, spans in per_node.items():  # a node's bytes are its verified transfers'
                assert sum(b for _, _, b in spans) == g[g["host"] == n]["transferred"].sum(), n
            v = verdicts[(verdicts["cell_id"] == cell_id) & (verdicts["concurrency"] == conc)]
            reason = str(v["reason"].iloc[0])
            print(f"{run.cells[cell_id].label} c={conc}: {p['rate'] * 8 / 1e9:.2f} Gb/s = "
                  f"{in_window / 1e6:.1f} MB over {w1 - w0:.1f} s from "
                  + ", ".join(f"{n} {_bytes_in(s, w0, w1) / 1e6:.1f} MB" for n, s in per_node.items())
                  + f"; {v['verdict'].iloc[0]}: {reason[:160]}")
            # the verdict names the shaped node exactly where its link caps: >= NEAR of its shaped
            # rate over the level's window (each node's link figures are in the evidence)
            ev = json.loads(v["evidence"].iloc[0] or "{}")
            use = ((ev.get("links") or {}).get(shaped) or {}).get("use")
            named = v["verdict"].iloc[0] == "network" and f"client host {shaped}'s link" in reason
            why = _link_evidence(samples, tr, shaped, cell_id, camp, (w0, w1), v, ev, per_node)
            evidence.append(why)
            assert isinstance(use, float), why  # its link's figures, per node
            assert named == (use >= NEAR), why
            capped += [(run.cells[cell_id].label, conc)] if named else []
    # 20 Mbit/s is far below what the gateway takes: the shaped link caps somewhere (on a quiet
    # box at every tmpfs level; into CephFS on a box whose CPU is full each file's close, flushed
    # to the OSDs, can leave even that link idle, and a starved agent can too: the evidence says)
    assert capped, evidence
    print(f"the shaped node {shaped} capped and was named at {capped}")
    if variant == "full":  # iperf3 from each node to the gateway's host, through steps
        base = run.table("baseline")
        got = {r.client for r in base.itertuples() if r.bits_per_second}
        assert got == {h.address for h in inv.netns_hosts}, base
    # whole nodes (no cpus_per_task: --exclusive): each agent may use its node's CPUs, and says so
    lim = samples[(samples["sampler"] == "node") & (samples["metric"] == "node.cpu.limit_cores")]
    assert {(json.loads(x) if isinstance(x, str) else x)["host"] for x in lim["labels"]} == set(nodes)
    assert set(lim["value"]) == {float(os.cpu_count() or 1)}, lim
    assert not _squeue("-s") and not _squeue()  # every step and the allocation gone
    assert not any(_node_pids(sc, inv).values()), _node_pids(sc, inv)
    assert not _leftovers(sc, inv, job["scratch_tag"])  # nor a file in a node's scratch


def _link_evidence(samples, tr, node: str, cell_id: str, camp: str, window: tuple[float, float],
                   v, ev: dict, per_node: dict) -> dict:
    """Everything a failing link check needs to be diagnosed: the verdict, every node's link
    figures, the node's own samples around the window (its link's rate, its CPU), its transfers
    of the level and the load of this machine."""
    w0, w1 = window
    mine = samples[(samples["sampler"] == "node") & (samples["cell_id"] == cell_id)
                   & samples["wall"].between(w0 - 3, w1 + 1)]
    mine = mine[[(json.loads(x) if isinstance(x, str) else x).get("host") == node
                 for x in mine["labels"]]]
    series = {m: [(round(r.wall - w0, 2), None if r.value is None else round(float(r.value), 3))
                  for r in mine[mine["metric"] == m].itertuples()]
              for m in ("link.tx_bytes.rate", "node.cpu.busy", "node.cpu.client_cores")}
    g = tr[(tr["campaign_id"] == camp) & (tr["host"] == node)]
    return {"level": camp, "window_s": round(w1 - w0, 2), "verdict": v["verdict"].iloc[0],
            "reason": str(v["reason"].iloc[0])[:300], "links": ev.get("links"),
            f"{node} samples (s from the window's start)": series,
            f"{node} transfers (start, end, s from the window's start)":
                [(round(a - w0, 2), round(b - w0, 2)) for a, b in zip(g["start_time"], g["finish_time"], strict=True)],
            "bytes in the window": {n: round(_bytes_in(sp, w0, w1)) for n, sp in per_node.items()},
            "loadavg": os.getloadavg()}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "term"])
def test_coordinator_killed_mid_level_then_the_next_command(site, workdir, sig):
    from xcbench.system.limits import cpu_limit
    sc, inv = site
    gw, clients = inv.netns_hosts[0].name, [h.name for h in inv.netns_hosts[1:]]
    # the origin on a node (a gateway agent's step: its xrootd, tmpfs and dirs there), every step
    # under cpus_per_task 1 (the origin as US-CMS's were, under a CPU limit)
    matrix, hosts = _files(workdir, f"killed-{sig.name}",
                           {"nodes": 3, "time": "30", "gateways": 1, "cpus_per_task": 1},
                           {"tmpfs": {"size": ["256M"]}}, {"min": "120s", "max": "180s"}, [3])
    before = set(_mounts())  # a machine's earlier runs are not this one's
    p = subprocess.Popen([sys.executable, "-m", "xcbench", "run", str(matrix), "--hosts", str(hosts),
                          "--store", str(workdir / f"killed-{sig.name}"), "--no-baseline",
                          "--no-probes", "--no-report", "--telemetry", "none"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    agent: list[int] = []
    try:
        assert until(lambda: sum("campaign-agent" in s for s in _squeue("-s", "-o", "%j")) == 2, 120), \
            p.stderr.read() if p.poll() is not None else "the agents' steps never all started"
        time.sleep(1)  # mid-level: the agents are moving bytes
        steps = _squeue("-s", "-o", "%i %j")
        assert any("gateway-agent" in s for s in steps), steps
        prefix = steps[0].split()[1].split("-gateway-agent")[0].split("-campaign-agent")[0] + "-"
        left = _node_pids(sc, inv)
        assert all(left.values()) and any("xrootd" in x for x in left[gw]), left
        (run,) = (workdir / f"killed-{sig.name}").iterdir()
        (cell,) = json.loads((run / "manifest.json").read_text())["cells"]
        made = [m for m in _mounts() if f"xcb-tmpfs-{cell}-" in m and m not in before]  # the gateway's tmpfs
        assert made, _mounts()
        (entry,) = [e for e in json.loads((statedir.home() / "slurm" / f"{p.pid}.json").read_text())
                    ["jobs"] if e.get("nodes")]  # what the run recorded before its first step
        tag = entry["scratch"]
        files = _leftovers(sc, inv, tag)
        assert files.get("scratch") and files.get(gw), files  # the gateway agent's dirs, its record
        # each step held to its one core: the origin's xrootd and the client agents, as they run
        held = {n: [cpu_limit(x) for x in pids]
                for n, pids in {**_node_procs(inv, "campaign-agent"), **_node_procs(inv, "xrootd")}.items()}
        assert set(held) == {gw, *clients}, held
        for n, lims in held.items():
            assert all(lim.cores == 1.0 and f"/slurm_{n}/uid_{os.geteuid()}/job_{entry['job']}/step_"
                       in lim.source for lim in lims), (n, lims)
        # the gateway agent stopped, then killed with the coordinator (as Slurm's SIGKILL after
        # KillWait would kill it): it cannot remove what it made, the next command must
        agent = [x for x in _node_procs(inv, "gateway-agent").get(gw, []) if "python" in _cmd(x)]
        assert agent, _node_procs(inv, "gateway-agent")
        for x in agent:
            os.kill(x, signal.SIGSTOP)
    finally:
        p.send_signal(sig)
        for x in agent:
            with contextlib.suppress(ProcessLookupError):
                os.kill(x, signal.SIGKILL)
        p.wait(timeout=120)
    err = p.stderr.read()
    if sig == signal.SIGTERM:  # it stops everything itself: interrupted, resumable, and it
        assert p.returncode == 130, err  # removed what its killed agent left on the node
        assert "removed what the run's agents left on their nodes (" in err, err
        # what it measured is kept: each client node's agent reported its limit, its step's cpuset
        from xcbench.store.rundir import RunDir
        smp = RunDir.open(run).table("samples")
        lim = smp[(smp["sampler"] == "node") & (smp["metric"] == "node.cpu.limit_cores")]
        got = {(x := json.loads(lb) if isinstance(lb, str) else lb)["host"]: (v, x["source"])
               for lb, v in zip(lim["labels"], lim["value"], strict=True)}
        assert set(got) == set(clients), got
        assert all(v == 1.0 and re.match(rf"cpuset \d+ at /sys/fs/cgroup/cpuset/slurm_{n}/uid_", src)
                   for n, (v, src) in got.items()), got
    t0 = time.monotonic()
    nxt = _xcbench("run", str(workdir / "no-such-matrix.yaml"))  # any command: it cleans first
    assert nxt.returncode == 2 and "no such file" in nxt.stderr.splitlines()[-1], nxt.stderr
    if sig == signal.SIGTERM:
        assert len(nxt.stderr.splitlines()) == 1, nxt.stderr  # nothing was left to clean
    else:  # the node-clean steps of the next command did it (each node's state home is its own;
        # the nodes share this machine's /var/tmp: whichever node's step came first removed the dirs)
        assert "removed what the run made on its nodes (" in nxt.stderr, nxt.stderr
    ok = until(lambda: not any(prefix in s for s in _squeue("-s", "-o", "%j"))
               and not any(prefix.rstrip("-") in s for s in _squeue("-o", "%j"))
               and not any(_node_pids(sc, inv).values())
               and not set(made) & set(_mounts()) and not _leftovers(sc, inv, tag),
               30 - (time.monotonic() - t0), step=0.2)
    print(f"\n{sig.name} mid-level: steps, allocation, the nodes' processes and files gone "
          f"{time.monotonic() - t0:.1f} s after the next command started; the run said "
          f"{[ln for ln in err.splitlines() if 'nodes' in ln][:1]}, the next command "
          f"{nxt.stderr.splitlines()[:2]}")
    assert ok, (_squeue("-s", "-o", "%i %j"), _squeue("-o", "%i %j %T"), _node_pids(sc, inv),
                set(made) & set(_mounts()), _leftovers(sc, inv, tag))
    assert not (statedir.home() / "slurm" / f"{p.pid}.json").exists()  # its record, done


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _mounts() -> list[str]:
    return [ln.split()[1] for ln in Path("/proc/self/mounts").read_text().splitlines()]


# on a node, in a step: three busy children for 2 s; the cores they used, the CPUs they ran on
# and may run on, the limit this process has (and its agent's sampler would report)
BUSY_STEP = r"""
import json, os, subprocess, time
from xcbench.scaleout.node_sampler import NodeSampler
from xcbench.system.limits import cpu_limit
def stat(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12]), int(f[36])  # utime + stime (ticks), the CPU it last ran on
def allowed(pid):
    return next(ln.split(":")[1].strip() for ln in open(f"/proc/{pid}/status")
                if ln.startswith("Cpus_allowed_list"))
kids = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(3)]
t0, c0 = time.monotonic(), sum(stat(k.pid)[0] for k in kids)
time.sleep(2)
t1, c1 = time.monotonic(), sum(stat(k.pid)[0] for k in kids)
ran, may = sorted({stat(k.pid)[1] for k in kids}), sorted({allowed(k.pid) for k in kids})
for k in kids:
    k.kill()
    k.wait()
lim = cpu_limit(os.getpid())
row = next(r for r in NodeSampler("n", "127.0.0.1").sample(time.time(), time.monotonic())
           if r["metric"] == "node.cpu.limit_cores")
print(json.dumps({"used": (c1 - c0) / os.sysconf("SC_CLK_TCK") / (t1 - t0), "ran": ran, "may": may,
                  "limit": [lim.cores, lim.source], "sampled": [row["value"], row["labels"]["source"]]}))
"""


def test_cpus_per_task_holds_each_step_to_its_cores(site, workdir):
    """Every step of a run under the section's cpus_per_task (1 here, of a node's 2): a busy step
    uses at most its one core and runs only on it, and what the agent reports as its limit is
    that cpuset, the step's own (xcbench.system.limits, as for every role)."""
    from concurrent.futures import ThreadPoolExecutor

    from xcbench.hosts import parse_inventory, transport_for
    from xcbench.hosts.slurm import Record, make, release, with_nodes
    from xcbench.system import proc
    sc, inv = site
    req = parse_inventory({"slurm": {"nodes": 3, "time": "10", "cpus_per_task": 1}}, "t.yaml").slurm
    procs = proc.ProcessSet(record=False)
    alloc = make(req, Record(workdir / "cpus-rec"), procs)
    try:
        nodes = [h for h in with_nodes(parse_inventory({"slurm": {}}, "t.yaml"), alloc).hosts
                 if h.transport == "slurm"]
        with ThreadPoolExecutor(len(nodes)) as ex:
            outs = list(ex.map(lambda h: transport_for(h).run([sys.executable, "-c", BUSY_STEP],
                                                              timeout=120), nodes))
    finally:
        release(alloc, procs)
        procs.stop_all()
    for h, out in zip(nodes, outs, strict=True):
        got = json.loads(out.stdout.splitlines()[-1])
        print(f"\n{h.name}: 3 busy children used {got['used']:.2f} cores, ran on CPU {got['ran']} "
              f"(may: {got['may']}); limit {got['limit']}")
        assert got["used"] <= 1.05, got  # three busy processes, one core (ticks: +-1 %)
        (cpus,) = got["may"]
        assert len(cpus.split(",")) == 1 and "-" not in cpus and {str(c) for c in got["ran"]} <= {cpus}, got
        cores, source = got["limit"]
        assert cores == 1.0 and source.startswith(f"cpuset {cpus} at /sys/fs/cgroup/cpuset/slurm_{h.name}/"
                                                  f"uid_{os.geteuid()}/job_{alloc.job_id}/step_"), got
        assert got["sampled"] == got["limit"], got  # node.cpu.limit_cores and its source


def test_faults_are_one_line(site, workdir, tmp_path):
    sc, inv = site
    backends = {"tmpfs": {"size": ["64M"]}}
    dur = {"min": "2s", "max": "3s"}

    def one_line(slurm: dict, env: dict | None = None) -> str:
        matrix, hosts = _files(workdir, "fault", slurm, backends, dur, [1])
        store = tmp_path / "never"
        res = _xcbench("run", str(matrix), "--hosts", str(hosts), "--store", str(store), env=env,
                       timeout=120)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1, res.stderr
        assert not store.exists()  # nothing ran
        return lines[0]

    line = one_line({"partition": "nope"})
    assert line.endswith(f"slurm: partition: 'nope' is not a partition of this cluster (sinfo lists "
                         f"{sc.partition})"), line
    t0 = time.monotonic()
    line = one_line({"nodes": 5, "start_timeout": "3s"})
    assert "slurm: the allocation (partition " in line and "did not start within 3 s: squeue says " \
        "PENDING, reason PartitionNodeLimit; cancelled" in line, line
    assert time.monotonic() - t0 < 30 and not _squeue()  # the pending request cancelled
    empty = tmp_path / "bin"
    empty.mkdir()
    line = one_line({"nodes": 1}, env={"PATH": str(empty)})
    assert line.startswith("xcbench: error: no Slurm here: srun, salloc, squeue, sinfo, scontrol, "
                           "scancel not found"), line


@pytest.mark.slow
def test_a_node_dying_mid_level_fails_its_share_alone(site, workdir):
    from xcbench.store.rundir import RunDir
    sc, inv = site
    victim = inv.netns_hosts[1]
    others = {h.name for h in inv.netns_hosts} - {victim.name}
    matrix, hosts = _files(workdir, "dies", {"nodes": 3, "time": "30"}, {"tmpfs": {"size": ["256M"]}},
                           {"min": "45s", "max": "60s"}, [3, 6])
    out = workdir / "dies-out"
    p = subprocess.Popen([sys.executable, "-m", "xcbench", "run", str(matrix), "--hosts", str(hosts),
                          "--store", str(out), "--no-baseline", "--no-probes", "--no-report"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # mid-level: once the victim has sent finished transfers (its raw stream has them)
        assert until(lambda: any('"table": "transfers"' in f.read_text() for f in
                                 out.glob(f"*/raw/agents/*/*.{victim.name}.jsonl")), 120)
        t_kill = time.time()
        assert sc.kill_node(victim.netns)
        _, err = p.communicate(timeout=900)
    finally:
        if p.poll() is None:
            p.kill()
        sc.start_slurmd(victim)
        sc.resume(victim.name)
    assert p.returncode == 0, err[-3000:]
    said = [ln for ln in err.splitlines() if victim.name in ln]
    assert len(said) == 1 and f"client host {victim.name} lost mid-level" in said[0], err[-3000:]
    run = RunDir.open(next(out.iterdir()))
    ((cid, cell),) = run.cells.items()
    assert cell.status == "complete", cell.error
    cp = {int(r.concurrency): json.loads(r.settings) for r in run.table("campaigns").itertuples()}
    assert set(cp[3]["lost"]) == {victim.name} and set(cp[3]["hosts"]) == others
    assert set(cp[6]["hosts"]) == others and not cp[6].get("lost")  # not asked again
    tr = run.table("transfers")
    kept = tr[(tr["concurrency"] == 3) & (tr["host"] == victim.name)]
    assert len(kept) and set(kept["file_state"]) == {"FINISHED"}  # its rows before it died, kept
    assert set(tr[tr["concurrency"] == 6]["host"]) == others
    lost_at = max(kept["finish_time"])
    print(f"\n{victim.name} killed mid-level; its last transfer ended {lost_at - t_kill:+.1f} s "
          f"from the kill; {said[0]}")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["make", "take"])
def test_confirm_replays_through_the_same_allocation_kind(site, workdir, kind):
    sc, inv = site
    matrix, hosts = _files(workdir, f"confirm-{kind}", {"nodes": 3, "time": "30"},
                           {"tmpfs": {"size": ["256M"]}}, {"min": "3s", "max": "5s"}, [3])
    env: dict[str, str] = {}
    if kind == "take":  # an allocation of the operator's, xcbench run inside it
        name = f"xcbtest-{TAG}"
        subprocess.run(["salloc", "--no-shell", "-N", "3", "-J", name, "-t", "30"], check=True,
                       capture_output=True, timeout=60)
        env["SLURM_JOB_ID"] = _squeue("-n", name, "-o", "%i")[0]
    try:
        store = workdir / f"confirm-{kind}"
        res = _xcbench("run", str(matrix), "--hosts", "slurm" if kind == "take" else str(hosts),
                       "--store", str(store), "--no-baseline", "--no-probes", "--no-report", env=env)
        assert res.returncode == 0, res.stderr[-2000:]
        run = next(store.iterdir())
        first = json.loads((run / "manifest.json").read_text())["hosts"]["slurm"]
        assert first["ours"] == (kind == "make")
        if kind == "take":
            assert first["job_id"] == env["SLURM_JOB_ID"]
            bare = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_ID"}
            nope = subprocess.run([sys.executable, "-m", "xcbench", "confirm", str(run), "--test",
                                   "concurrency", "--pairs", "2"], capture_output=True, text=True,
                                  timeout=120, env=bare)
            assert nope.returncode == 2 and "replay it inside one too" in nope.stderr.strip(), nope.stderr
        res = _xcbench("confirm", str(run), "--test", "concurrency", "--pairs", "2", env=env)
        assert res.returncode in (0, 1), res.stderr[-2000:]  # confirmed/inconclusive, or refuted
        replays = sorted((run / "confirm").iterdir())
        assert len(replays) == 4  # A-B-B-A
        jobs = {json.loads((r / "manifest.json").read_text())["hosts"]["slurm"]["job_id"] for r in replays}
        kinds = {json.loads((r / "manifest.json").read_text())["hosts"]["slurm"]["ours"] for r in replays}
        assert kinds == {kind == "make"} and len(jobs) == 1
        assert (jobs == {env["SLURM_JOB_ID"]}) if kind == "take" else (jobs != {first["job_id"]})
        print(f"\nconfirm ({kind}): replays in job {jobs.pop()}: {res.stdout.strip()[-300:]}")
    finally:
        if env:
            subprocess.run(["scancel", env["SLURM_JOB_ID"]], timeout=30)
    assert until(lambda: not _squeue(), 30)
