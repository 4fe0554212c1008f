"""`xcbench run` with an inventory on emulated hosts: 2 client hosts,
2 gateway hosts with one origin each behind a cmsd (on the first), a small time-based matrix.

Checked: every transfer verified (adler32 at source and destination, all FINISHED); both client
hosts and both origins carried load; the merged 1 s timeline is contiguous (no gap, no overlap
where the hosts start and stop) and holds exactly the hosts' bytes; clock offsets and RTTs are in
the manifest; iperf3 ran from each client host to each gateway host; no agent is left; `hosts
down` leaves no namespace, veth, qdisc or cgroup. Versions are checked before anything starts,
and a bad `hosts:` in a matrix is one line, exit 2.

The machine is shared: names carry this process's id and the network is a free 10.2xx.y.0/24.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.emulated import emulated_hosts
from tests.support.sshd import sshd_alias, wait_answers, why_no_sshd
from xcbench.hosts.emulate import why_not
from xcbench.system import proc

TAG = f"{os.getpid() % 10000}"
CONCURRENCY = [1, 3]


def _why_not() -> str:
    return why_not("xrootd", "cmsd", "iperf3") or ""


pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(_why_not()), reason=_why_not() or "-")]


def _leftovers(inv) -> list[str]:
    """Namespaces, links (veth, bridge, with their qdiscs) and cgroups of ``inv`` still there."""
    from xcbench.system.cgroups import detect
    left = []
    ns = proc.run(["ip", "netns", "list"]).stdout.split()
    links = proc.run(["ip", "-o", "link", "show"]).stdout
    qdiscs = proc.run(["tc", "qdisc", "show"]).stdout
    base = detect().base
    for h in inv.hosts:
        left += [f"netns {h.netns}"] if h.netns in ns else []
        left += [f"link {h.veth}"] if f" {h.veth}@" in links or f" {h.veth}:" in links else []
        left += [f"qdisc on {h.veth}"] if f"dev {h.veth} " in qdiscs else []
        left += [f"cgroup {h.cgroup}"] if (base / h.cgroup).exists() else []
    left += [f"bridge {inv.bridge.name}"] if f" {inv.bridge.name}:" in links else []
    return left


@pytest.fixture(scope="module")
def hosts_file(workdir):
    """2 client hosts (one with a shaped link) and 2 gateway hosts, up; down after, and
    nothing of them left."""
    from xcbench.hosts.emulate import free_network
    net = list(free_network().hosts())
    data = {"bridge": {"name": f"xcbr{TAG}", "address": f"{net[0]}/24"},
            "hosts": {f"ca{TAG}": {"roles": ["client"], "transport": "netns",
                                   "address": str(net[10]), "cores": 1.0},
                      f"cb{TAG}": {"roles": ["client"], "transport": "netns",
                                   "address": str(net[11]), "link": {"rate": "2gbit"}},
                      f"ga{TAG}": {"roles": ["gateway", "redirector"], "transport": "netns",
                                   "address": str(net[20]), "cores": 0.5},
                      f"gb{TAG}": {"roles": ["gateway"], "transport": "netns",
                                   "address": str(net[21]), "cores": 0.5}}}
    with emulated_hosts(workdir, data) as (path, inv):
        yield path, inv
    assert not _leftovers(inv), _leftovers(inv)


@pytest.fixture(scope="module")
def ssh_hosts(hosts_file, workdir):
    """The same hosts, client host cb reached over ssh: an sshd in its namespace (throwaway keys,
    a private ssh_config alias, as a user's ~/.ssh/config does it); stopped after."""
    if why := why_no_sshd():
        pytest.skip(why)
    from xcbench.hosts import load_inventory, transport_for
    path, inv = hosts_file
    cb = inv.clients[1]
    d = workdir / "ssh"
    with sshd_alias(cb, d, "cb-alias") as cfg:
        data = yaml.safe_load(path.read_text())
        data["hosts"][cb.name] = {"roles": ["client"], "transport": "ssh", "ssh": "cb-alias",
                                  "ssh_options": ["-F", str(cfg)], "address": cb.address,
                                  "xcbench": [sys.executable, "-m", "xcbench"]}
        ssh_path = d / "hosts-ssh.yaml"
        ssh_path.write_text(yaml.safe_dump(data))
        ssh_inv = load_inventory(ssh_path)
        wait_answers(transport_for(ssh_inv.clients[1]), d / "sshd.log")
        yield ssh_inv


def _matrix(workdir: Path, hosts: str | dict | None = None, backends: dict | None = None) -> Path:
    m = {"name": f"hosts-{TAG}",
         "defaults": {"origins": [2], "modes": ["push"], "concurrency": CONCURRENCY,
                      "file_size": "2M", "files": 12, "repeats": 1,
                      # 4 s levels: 4 merged 1-s buckets, both client hosts and origins at c=3
                      "campaign": {"duration": {"min": "4s", "max": "10s"},
                                   "steady": {"rule": "autoterm", "window": "4s", "points": 2,
                                              "tolerance": "50%"}}},
         "backends": backends or {"tmpfs": {"size": ["256M"]}}}
    if hosts is not None:
        m["hosts"] = hosts
    path = workdir / f"matrix-{len(list(workdir.glob('matrix-*')))}.yaml"
    path.write_text(yaml.safe_dump(m))
    return path


def _agents() -> list[int]:
    """Campaign agents left on this machine, but not those of another state home (another
    user's or session's xcbench on a shared machine: its own agents, its own business)."""
    import os

    import psutil
    home = os.environ.get("XCBENCH_HOME")
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if "campaign-agent" in cmd and "xcbench" in " ".join(cmd):
            try:
                theirs = p.environ().get("XCBENCH_HOME")
            except psutil.Error:  # gone, or not ours to read: counted
                theirs = None
            if theirs is None or theirs == home:
                out.append(p.pid)
    return out


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_bad_hosts_in_a_matrix_is_one_line_exit_2(workdir):
    bad = _matrix(workdir, {"hosts": {"c1": {"roles": ["client"], "transport": "netns",
                                             "address": "10.77.0.11", "cores": -1}}})
    out = subprocess.run([sys.executable, "-m", "xcbench", "run", str(bad), "--store",
                          str(workdir / "bad")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "hosts: host c1: cores" in lines[0], out.stderr
    assert not (workdir / "bad").exists()


def test_versions_checked_first(hosts_file):
    from xcbench.hosts.checks import check_versions
    path, inv = hosts_file
    found = check_versions(inv)
    assert set(found) == {h.name for h in inv.hosts}


@pytest.fixture(scope="module")
def bridge_site(hosts_file, workdir):
    return workdir, hosts_file[1].bridge.ip


def test_run_from_two_client_hosts_into_two_gateway_hosts(hosts_file, workdir):
    from xcbench.hosts.matrix_section import inventory_for
    from xcbench.matrix import load_matrix
    path, inv = hosts_file
    matrix = load_matrix(_matrix(workdir, str(path)))  # the inventory through the matrix's key
    inv2 = inventory_for(None, matrix.raw, matrix.path)
    assert [h.name for h in inv2.clients] == [h.name for h in inv.clients]
    _run_and_check(matrix, inv2, None, workdir / "results", baseline=True)


def test_cli_run_with_hosts_into_rados(hosts_file, workdir, bridge_cluster):
    """`xcbench run MATRIX --hosts FILE` into RADOS through the bridge cluster: versions checked,
    then the run, exit 0, and the same checks as the tmpfs run above (one run covers the command
    line and RADOS over hosts: a run each cost `make test` 18 s more)."""
    path, inv = hosts_file
    out = workdir / "results-cli"
    backends = {"rados": {"layouts": [{"stripe_unit": "4M", "stripe_count": 1,
                                       "object_size": "4M"}], "pools": [{"replicated": 1}]}}
    res = subprocess.run([sys.executable, "-m", "xcbench", "run", str(_matrix(workdir, None, backends)),
                          "--hosts", str(path), "--store", str(out), "--no-baseline", "--no-probes",
                          "--no-report", "--ceph-conf", str(bridge_cluster.conf)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    from xcbench.store.rundir import RunDir
    _check(RunDir.open(next(out.iterdir())), inv, baseline=False, backend="rados")


# slow (make slow): the ssh transport itself is tested in test_hosts_ssh.py in the default suite
@pytest.mark.slow
def test_run_with_a_client_host_over_ssh(ssh_hosts, workdir):
    from xcbench.hosts.checks import check_versions
    from xcbench.matrix import load_matrix
    assert ssh_hosts.clients[1].transport == "ssh"
    check_versions(ssh_hosts)
    _run_and_check(load_matrix(_matrix(workdir)), ssh_hosts, None, workdir / "results-ssh",
                   baseline=True)


def _run_and_check(matrix, inv, cluster, out: Path, *, baseline: bool) -> None:
    from xcbench.run.runner import RunOptions, run_matrix
    from xcbench.store.rundir import RunDir
    # one stream count: what is checked is that iperf3 ran over every client -> gateway pair, both
    # ways, through the hosts' transports; the stream sweep is network/test_baseline.py's
    opts = RunOptions(store=out, probes=False, report=False, progress=False, hosts=inv,
                      baseline=baseline, extra={"baseline": {"streams": [1], "seconds": 1}})
    run = run_matrix(matrix, cluster, opts)
    _check(RunDir.open(run.path), inv, baseline=baseline, backend=matrix.cells[0].backend)


def _check(run, inv, *, baseline: bool, backend: str) -> None:
    """What a run from the inventory's hosts must have recorded."""
    cells = list(run.cells.values())
    assert [c.status for c in cells] == ["complete"], [(c.status, c.error) for c in cells]
    clients = [h.name for h in inv.clients]

    # clock offsets and RTTs of every host, in the manifest
    manifest = json.loads((run.path / "manifest.json").read_text())
    clock = manifest["hosts"]["clock"]
    assert set(clock) == {h.name for h in inv.hosts}
    assert all(abs(v["offset_s"]) < 1.0 and 0 < v["rtt_s"] < 1.0 for v in clock.values()), clock

    # iperf3 from each client host to each gateway host
    if baseline:
        base = run.table("baseline")
        pairs = {(r.client, r.gateway) for r in base.itertuples() if r.bits_per_second}
        assert pairs == {(c.address, g.address) for c in inv.clients for g in inv.gateways}, base
        print("\n" + "; ".join(f"iperf3 {r.client} -> {r.gateway} P{r.streams} {r.direction}: "
                               f"{r.bits_per_second / 1e9:.2f} Gb/s" for r in base.itertuples()))

    # every transfer verified; both client hosts carried the c=3 level
    tr = run.table("transfers")
    assert len(tr) and set(tr["file_state"]) == {"FINISHED"}, tr["reason"].dropna().unique()
    assert (tr["checksum_source"] == tr["checksum_dest"]).all()
    by_host = tr[tr["concurrency"] == 3].groupby("host")["transferred"].sum()
    assert set(by_host.index) == set(clients) and (by_host > 0).all(), by_host
    assert set(tr[tr["concurrency"] == 1]["host"]) == {clients[0]}  # 1 slot: one host runs
    assert tr["transfer_id"].is_unique

    # both origins got files: each origin's own xrd.report says bytes came in (the files
    # themselves are gone: each one is deleted once verified, so a level can cycle them)
    cell_id = next(iter(manifest["cells"]))
    origins = manifest["cells"][cell_id]["origins"]
    assert [o["host"] for o in origins] == [h.name for h in inv.gateways], origins
    sm = run.table("samples")
    sm = sm[sm["metric"] == "xrd.link.in"]
    got: dict[str, float] = {}
    for r in sm.itertuples():
        lab = json.loads(r.labels) if isinstance(r.labels, str) else r.labels
        if lab.get("pgm") == "xrootd":
            got[lab["gateway"]] = got.get(lab["gateway"], 0.0) + float(r.value)
    names = {o["origin"] for o in origins}
    assert names <= set(got) and all(got[n] > 0 for n in names), (got, origins)

    # one CAMPAIGN row per level; the merged timeline: contiguous, the hosts' bytes exactly
    cp = run.table("campaigns")
    assert sorted(cp["concurrency"]) == CONCURRENCY
    tl = run.table("timeline")
    raw = run.path / "raw" / "agents" / cell_id
    for row in cp.itertuples():
        s = json.loads(row.settings)
        g = tl[tl["campaign_id"] == row.campaign_id].sort_values("t")
        t = g["t"].tolist()
        assert t[:-1] == [float(k + 1) for k in range(len(t) - 1)], t
        assert 0 < t[-1] - (t[-2] if len(t) > 1 else 0) <= 1.0
        host_bytes = {}
        for h in s["hosts"]:
            lines = _jsonl(raw / f"{row.campaign_id}.{h}.jsonl")
            host_bytes[h] = sum(r["bytes"] for m in lines if m.get("table") == "timeline"
                                for r in m["rows"])
        assert int(g["bytes"].sum()) == sum(host_bytes.values()) == s["timeline"]["hosts_bytes"]
        assert row.bytes == sum(s["hosts"][h]["campaign"]["bytes"] for h in s["hosts"])
        assert s["level"]["decided_by"] == "coordinator" and s["level"]["t_end"] >= 4
        assert set(s["hosts"]) == (set(clients) if row.concurrency == 3 else {clients[0]})
        print(f"\n{backend} ({'/'.join(h.transport for h in inv.clients)}) "
              f"c={row.concurrency}: merged {int(g['bytes'].sum())} B in {len(g)} buckets "
              f"= sum of hosts {host_bytes}; level {s['level']['ended_by']} at "
              f"{s['level']['t_end']} s; " + "; ".join(
                  f"{h}: {v['slots']} slots, {v['campaign']['rate'] / 2**20:.1f} MiB/s, "
                  f"offset {v['clock_offset_s'] * 1e6:.0f} us, rtt {v['rtt_s'] * 1e6:.0f} us"
                  for h, v in s["hosts"].items()))
    assert not _agents()
