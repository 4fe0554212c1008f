"""Gateways on gateway hosts over ssh, through `xcbench gateway-agent`.

An emulated gateway host (a network namespace with a CPU quota) runs sshd (throwaway keys, a
private ssh_config alias, as test_hosts_ssh does); the inventory reaches it over ssh, so every
part of the gateway (the redirector and each origin) is started there by a gateway agent. An
emulated client host (netns) runs the campaign.

Checked: every transfer verified, every origin carried load (its own xrootd counters), the
level's gateway CPU s/GB came from the agents, the roles device's gateway limit is the host's
quota as the agent read it; after the run and after a `kill -9` of the coordinator nothing is
left on the gateway host (no process in its namespace but sshd, no dir, key file or mount the
agents made); a bad request or another version is one line, exit 2; an XrdCeph key never
appears in a command line nor in the run dir.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests.support.sshsite import SSHD, ssh_site, why_no_ssh_site
from xcbench import __version__
from xcbench.system import proc
from xcbench.system.mounts import mount_table

TAG = f"{os.getpid() % 10000}"

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(why_no_ssh_site()), reason=why_no_ssh_site() or "-")]


@pytest.fixture(scope="module")
def site():
    """Client host c (netns) and gateway host g (netns + sshd, reached over ssh); the agent's
    state home on g is the test's (its records and reaps stay out of the machine's)."""
    with ssh_site("a", TAG) as s:
        yield s


def _matrix(d: Path, backends: dict | None = None, origins: int = 2, seconds=(4, 10),
            security: str = "none") -> Path:
    m = {"name": f"gwagent-{TAG}",
         "defaults": {"origins": [origins], "modes": ["push"], "concurrency": [2],
                      "file_size": "2M", "files": 12, "repeats": 1,
                      "campaign": {"duration": {"min": f"{seconds[0]}s", "max": f"{seconds[1]}s"},
                                   "steady": {"rule": "autoterm", "window": "3s", "points": 3,
                                              "tolerance": "50%"}}},
         "backends": backends or {"tmpfs": {"size": ["128M"]}}}
    if security != "none":
        m["defaults"]["security"] = [security]
    path = d / f"matrix-{len(list(d.glob('matrix-*')))}.yaml"
    path.write_text(yaml.safe_dump(m))
    return path


def _in_netns(netns: str) -> dict[int, str]:
    """{pid: command} of the processes in the gateway host's network namespace but sshd's
    listener and the sessions it serves right now."""
    pids = proc.run(["ip", "netns", "pids", netns], check=False).stdout.split()
    out = {}
    for pid in pids:
        try:
            cmd = " ".join(psutil.Process(int(pid)).cmdline())
        except psutil.Error:
            continue
        if cmd.startswith((SSHD, "sshd:")):
            continue
        out[int(pid)] = cmd
    return out


def _daemons(netns: str) -> int:
    return sum(c.split()[0].rsplit("/", 1)[-1] in ("xrootd", "cmsd")
               for c in _in_netns(netns).values() if c)


def _made(path: Path) -> list[str]:
    """What the agents said they made (the ready lines of the raw streams in or at ``path``)."""
    made = []
    for f in [path] if path.is_file() else path.rglob("agent-*.jsonl"):
        for line in f.read_text().splitlines():
            try:
                msg = json.loads(line)
            except ValueError:  # a line being written: not yet
                continue
            if "ready" in msg:
                made += msg["ready"]["made"]
    return made


def _assert_nothing_left(site, made: list[str], what: str) -> None:
    deadline = time.monotonic() + 20  # the agents stop on their stdin's end
    while _in_netns(site["netns"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _in_netns(site["netns"]) == {}, f"processes left on the gateway host {what}"
    assert made, "the agents said nothing of what they made"
    left = [p for p in made if os.path.lexists(p)]
    assert left == [], f"left on the gateway host {what}: {left}"
    mounts = [str(m) for m, _ in mount_table() if any(str(m).startswith(p) for p in made)]
    assert mounts == [], f"mounts left {what}: {mounts}"
    records = list((site["home"] / "procs").glob("*.json")) if (site["home"] / "procs").exists() else []
    assert records == [], f"agent records left on the gateway host {what}"


def _run(site, matrix: Path, out: Path, cluster=None):
    from xcbench.matrix import load_matrix
    from xcbench.run.runner import RunOptions, run_matrix
    from xcbench.store.rundir import RunDir
    opts = RunOptions(store=out, probes=False, report=False, progress=False, hosts=site["inv"],
                      baseline=False)
    run = run_matrix(load_matrix(matrix, cluster), cluster, opts)
    return RunDir.open(run.path)


def _check_run(site, run, origins: int) -> dict:
    cells = list(run.cells.values())
    tr = run.table("transfers")
    assert [c.status for c in cells] == ["complete"], ([(c.status, c.error) for c in cells],
                                                       tr["reason"].dropna().unique()[:3] if len(tr) else None)
    assert len(tr) and set(tr["file_state"]) == {"FINISHED"}, tr["reason"].dropna().unique()
    assert (tr["checksum_source"] == tr["checksum_dest"]).all()
    manifest = json.loads((run.path / "manifest.json").read_text())
    cell_id = next(iter(manifest["cells"]))
    load = manifest["cells"][cell_id]["origins"]
    # every origin is on the ssh host and carried load (its own xrootd counters: opens, bytes in)
    assert len(load) == origins and all(o["host"] == site["g"].name for o in load), load
    assert all(o["files"] > 0 and o["bytes"] > 0 for o in load), load
    assert all(o["agent"]["host"] == site["g"].name and o["agent"]["version"] == __version__
               and o["agent"]["start_s"] > 0 for o in load), load
    # the level's gateway CPU per GB: measured by the agents, per origin and the redirector
    cp = run.table("campaigns").iloc[0]
    per = json.loads(cp["gateway_cpu_origins"])
    assert cp["gateway_cpu_s"] > 0 and cp["gateway_cpu_s_per_gb"] > 0, cp.to_dict()
    assert {p["origin"] for p in per} == ({f"o{i}" for i in range(1, origins + 1)} | {"redirector"}
                                          if origins > 1 else {"xcb"})
    assert all(p["host"] == site["g"].name and p["cpu_s"] is not None for p in per), per
    # the roles device: the gateway's limit is the host's quota, as its agents read it there
    sm = run.table("samples")
    lim = sm[(sm["metric"] == "role_cpu_limit_cores")]
    lim = lim[[json.loads(x)["role"] == "gateway" if isinstance(x, str) else x["role"] == "gateway"
               for x in lim["labels"]]]
    srcs = {json.loads(x)["source"] if isinstance(x, str) else x["source"] for x in lim["labels"]}
    assert lim["value"].dropna().eq(1.0).all() and len(lim["value"].dropna()), (lim, srcs)
    assert all(s.startswith("gateway agent:") for s in srcs), srcs
    cpu = sm[(sm["metric"] == "role_cpu_cores")]
    assert any((json.loads(x) if isinstance(x, str) else x)["role"] == "gateway" for x in cpu["labels"])
    print(f"\n{cells[0].backend} through ssh gateway agents, {origins} origin(s): "
          f"{cp['bytes'] / 2**20:.0f} MiB at {cp['rate'] / 2**20:.1f} MiB/s, gateway "
          f"{cp['gateway_cpu_s']:.2f} CPU s = {cp['gateway_cpu_s_per_gb']:.2f} s/GB; per origin "
          + ", ".join(f"{p['origin']}: {p['cpu_s']:.2f} s" for p in per)
          + "; agents ready in " + ", ".join(f"{o['agent']['start_s']:.2f} s (daemons "
                                             f"{o['agent']['daemons_start_s']:.2f} s)" for o in load))
    return {"per_gb": float(cp["gateway_cpu_s_per_gb"]), "manifest": manifest}


def test_a_matrix_with_a_gateway_host_over_ssh(site):
    """2 origins and the redirector on the ssh host, each through its agent; nothing left."""
    t0 = time.monotonic()
    run = _run(site, _matrix(site["dir"]), site["dir"] / "results")
    _check_run(site, run, origins=2)
    _assert_nothing_left(site, _made(run.path), "after the run")
    print(f"run with ssh gateway agents: {time.monotonic() - t0:.1f} s")


@pytest.mark.slow  # ~60 s: a CLI run brought up, killed, and its leftovers reaped
def test_kill9_of_the_coordinator_leaves_nothing_on_the_gateway_host(site):
    out = site["dir"] / "results-kill"
    home = site["dir"] / "coordinator-home"
    env = {**os.environ, "XCBENCH_HOME": str(home)}
    p = subprocess.Popen([sys.executable, "-m", "xcbench", "run", str(_matrix(site["dir"], seconds=(30, 40))),
                          "--hosts", str(site["inv_file"]), "--store", str(out), "--no-baseline",
                          "--no-probes", "--no-report", "--telemetry", "none"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120

        def ready_parts() -> list[list[str]]:  # what each agent said it made, once it is ready
            runs = list(out.iterdir()) if out.exists() else []
            scratch = [d for r in runs for d in Path("/var/tmp").glob(f"xcbench-{r.name}-*")]
            return [m for d in scratch for f in d.rglob("agent-*.jsonl")
                    if (m := _made(f))]

        # until the whole gateway serves: the redirector's agent and both origins' said ready
        while not (len(ready_parts()) == 3 and _daemons(site["netns"]) == 6):
            assert p.poll() is None, p.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "the gateway never came up"
            time.sleep(0.1)
        made = [m for part in ready_parts() for m in part]
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        _assert_nothing_left(site, made, "after a kill -9 of the coordinator")
    finally:
        if p.poll() is None:
            p.kill()
        # the coordinator's own leftovers (its tmpfs target, scratch, client agent): the next
        # command on this machine reaps them
        subprocess.run([sys.executable, "-m", "xcbench", "cluster", "status"], env=env,
                       capture_output=True, timeout=120)


def test_bad_request_and_other_version_are_one_line_exit_2(site):
    from xcbench.hosts import transport_for
    t = transport_for(next(h for h in site["inv"].hosts if h.transport == "ssh"))
    argv = [*t.xcbench_argv(), "gateway-agent"]
    good = {"version": __version__, "name": "x", "role": "standalone", "index": 0, "origins": 1,
            "addr": site["g"].address, "target": {"cell_id": "c", "backend": "tmpfs"}}
    for req, says in [("not json\n", "request: not JSON"),
                      (json.dumps({**good, "version": "0.0.1"}) + "\n",
                       f"xcbench {__version__} here, 0.0.1 on the coordinator"),
                      (json.dumps({**good, "target": {"cell_id": "c", "backend": "cephfs"}}) + "\n",
                       "target.backend: 'cephfs'")]:
        res = t.run(argv, input=req, check=False, timeout=60)
        assert res.returncode == 2, (req, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0] and "Traceback" not in res.stderr, (req, res.stderr)
        msgs = [json.loads(x) for x in res.stdout.splitlines()]
        assert msgs[0]["hello"]["version"] == __version__ and says in msgs[-1]["error"], msgs


@pytest.fixture(scope="module")
def bridge_site(site):
    return site["dir"], site["emu"].bridge.ip


def _key_of(cluster) -> str:
    src = cluster.gateway_keyring or cluster._default_keyring(cluster.gateway_id)
    return next(ln.split("=", 1)[1].strip() for ln in Path(src).read_text().splitlines()
                if ln.strip().startswith("key"))


@pytest.mark.slow
def test_rados_through_ssh_gateway_agents_key_never_in_argv_nor_run(site, bridge_cluster):
    key = _key_of(bridge_cluster)
    seen: list[str] = []
    stop = threading.Event()

    def watch() -> None:  # every command line on the machine while the run goes
        while not stop.is_set():
            for q in psutil.process_iter(["cmdline"]):
                if key in " ".join(q.info["cmdline"] or []):
                    seen.append(" ".join(q.info["cmdline"]))
            time.sleep(0.02)

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    backends = {"rados": {"layouts": [{"stripe_unit": "4M", "stripe_count": 1, "object_size": "4M"}],
                          "pools": [{"replicated": 1}]}}
    try:
        run = _run(site, _matrix(site["dir"], backends), site["dir"] / "results-rados", bridge_cluster)
    finally:
        stop.set()
        w.join()
    _check_run(site, run, origins=2)
    assert seen == [], "the gateway key was on a command line"
    for f in run.path.rglob("*"):
        if f.is_file():
            assert key.encode() not in f.read_bytes(), f"the gateway key is in {f}"
    _assert_nothing_left(site, _made(run.path), "after the rados run")


@pytest.mark.slow
def test_cpu_per_gb_from_the_agent_beside_a_local_gateway(site):
    """The same cell, one origin: the gateway on the host as a netns host (measured here) and
    over ssh (measured by its agent). Printed, not asserted against each other (a shared box)."""
    from xcbench.hosts import load_inventory
    ssh = _check_run(site, _run(site, _matrix(site["dir"], origins=1, seconds=(8, 10)),
                                site["dir"] / "results-cmp-ssh"), origins=1)
    netns_site = {**site, "inv": load_inventory(site["dir"] / "emu.yaml")}
    local = _run(netns_site, _matrix(site["dir"], origins=1, seconds=(8, 10)), site["dir"] / "results-cmp-netns")
    cp = local.table("campaigns").iloc[0]
    assert cp["gateway_cpu_s_per_gb"] > 0
    print(f"\ngateway CPU s/GB, one origin, tmpfs push c=2: agent over ssh {ssh['per_gb']:.2f}, "
          f"netns host measured here {cp['gateway_cpu_s_per_gb']:.2f} "
          f"(ratio {ssh['per_gb'] / cp['gateway_cpu_s_per_gb']:.2f})")


@pytest.mark.slow
def test_tls_through_an_ssh_gateway_agent(site):
    """security tls: the agent gets the run's CA over its stdin and signs its host's certificate
    there; the clients reach the gateway over roots:// with the run's CA; the CA's key is never
    on a command line nor in the run dir, and its dir on the host is gone after."""
    seen: list[str] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for q in psutil.process_iter(["cmdline"]):
                if "PRIVATE KEY" in " ".join(q.info["cmdline"] or []):
                    seen.append(" ".join(q.info["cmdline"]))
            time.sleep(0.02)

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    try:
        run = _run(site, _matrix(site["dir"], origins=1, security="tls"), site["dir"] / "results-tls")
    finally:
        stop.set()
        w.join()
    _check_run(site, run, origins=1)
    tr = run.table("transfers")
    assert all(str(u).startswith(("roots://", "https://")) for u in tr["destination"]), tr["destination"][:3]
    assert seen == []
    for f in run.path.rglob("*"):
        if f.is_file():
            assert b"PRIVATE KEY" not in f.read_bytes(), f"a private key in {f}"
    made = _made(run.path)
    assert any(Path(m).name.startswith("xcbsec-") for m in made), made
    _assert_nothing_left(site, made, "after the tls run")


def test_a_killed_agent_leaves_records_the_next_command_there_acts_on(site, tmp_path):
    """kill -9 of the agent itself (its daemons outlive it): what it recorded on the host before
    making it is removed by the next xcbench command there (here: another agent, refused)."""
    from xcbench.backends.base import Target
    from xcbench.gateway.remote import start_remote_gateway
    from xcbench.hosts import transport_for
    target = Target(cell_id="k1", backend="tmpfs", info={"size": 32 << 20})
    procs = proc.ProcessSet(record=False)
    gw = start_remote_gateway(target, workdir=tmp_path, origins=1, hosts=site["inv"], procs=procs)
    try:
        part = gw.parts[0]
        made, pid = part.msgs["ready"]["made"], part.msgs["hello"]["pid"]
        assert _daemons(site["netns"]) == 1 and all(os.path.isdir(m) for m in made)
        assert any(str(m).startswith(made[1]) for m, _ in mount_table())  # its tmpfs
        os.kill(pid, signal.SIGKILL)  # same machine underneath: the agent's pid is visible here
        assert part.done.wait(30)
        assert _daemons(site["netns"]) == 1  # its xrootd is still there, and so is the rest
        t = transport_for(next(h for h in site["inv"].hosts if h.transport == "ssh"))
        res = t.run([*t.xcbench_argv(), "gateway-agent"], input="not json\n", check=False, timeout=120)
        assert res.returncode == 2 and "was killed and left" in res.stderr, res.stderr
        _assert_nothing_left(site, made, "after the next command reaped the killed agent's records")
    finally:
        gw.stop()
        procs.stop_all()
