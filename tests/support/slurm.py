"""A Slurm cluster of its own for the tests: munged (its own key, socket, pid and log in a private
dir, never /etc/munge), slurmctld on this machine and one slurmd per emulated host, each started
in its host's network namespace (``nsenter --net``: ``ip netns exec`` would remount /sys without
/sys/fs/cgroup), with ports, spool, state, log and pid paths of its own (docs/slurm.md).

    with slurm_cluster(d, inv) as sc:       # inv: emulated hosts that are up (hosts/emulate.py)
        sc.env                              # {"SLURM_CONF": ...}: what srun/squeue/... need
        sc.partition, sc.nodes, sc.start_s  # start_s: {"slurmctld": s, "slurmd": s}

Everything it started is stopped after, and the dir's state removed; the node names are the
emulated hosts' names (so per-node verdicts name the host whose link is shaped).

Each step is confined to its CPUs as at a site: ``TaskPlugin=task/cgroup,task/affinity`` with
``ConstrainCores=yes`` on this kernel's cgroup v1 cpuset hierarchy (``cgroup.conf``;
``ProctrackType`` stays linuxproc); Debian's Slurm keeps one tree per node
(``/sys/fs/cgroup/cpuset/slurm_<node>/uid_U/job_J/step_S``), removed after. And each node has a
state home of its own, as a real node does (a TaskProlog sets ``XCBENCH_HOME`` to
``<dir>/home-<node>`` in every task): what an agent records there is that node's to act on,
never this machine's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from xcbench.hosts.transport import NETNS_DIR
from xcbench.system import proc
from xcbench.system.ports import free_ports

DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "squeue", "scancel", "salloc", "sinfo",
           "scontrol", "nsenter")
START_TIMEOUT = 60.0


def why_no_slurm() -> str:
    """Why a Slurm cluster cannot be brought up here ('' when it can)."""
    if os.geteuid() != 0:
        return "a test Slurm cluster needs root (slurmd in network namespaces)"
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        return f"{', '.join(missing)}: not installed (Debian packages slurm-wlm munge: `make setup`)"
    return ""


@dataclass
class SlurmCluster:
    dir: Path
    partition: str
    nodes: list[str]
    env: dict[str, str]
    start_s: dict[str, float] = field(default_factory=dict)
    procs: proc.ProcessSet = field(default_factory=lambda: proc.ProcessSet(record=False))
    slurmd: dict[str, proc.Proc] = field(default_factory=dict)

    def run(self, *argv: str, timeout: float = 30, check: bool = True) -> proc.Completed:
        return proc.run(list(argv), env=self.env, timeout=timeout, check=check)

    def log(self, name: str, n: int = 5) -> str:
        return proc.tail(self.dir / f"{name}.log", n)

    def node_states(self) -> dict[str, str]:
        out = self.run("sinfo", "-h", "-N", "-p", self.partition, "-o", "%N|%T").stdout
        return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)

    def kill_node(self, netns: str) -> list[int]:
        """A node dies: every process in its network namespace (slurmd, slurmstepd, the steps'
        processes) killed at once (SIGKILL); the pids killed."""
        out = proc.run(["ip", "netns", "pids", netns], timeout=30).stdout.split()
        pids = [int(p) for p in out if p.isdigit()]
        for p in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, 9)
        return pids

    def start_slurmd(self, h) -> None:
        """(Re)start the slurmd of emulated host ``h`` in its namespace."""
        old = self.slurmd.pop(h.name, None)
        if old is not None:
            proc.stop(old, timeout=1)
            self.procs.discard(old)
        p = proc.spawn(["nsenter", f"--net={NETNS_DIR / h.netns}", "--", "slurmd", "-D", "-N", h.name],
                       name=f"slurmd-{h.name}", log=self.dir / f"slurmd-{h.name}.out", env=self.env)
        self.procs.add(p)
        self.slurmd[h.name] = p

    def resume(self, node: str, timeout: float = START_TIMEOUT) -> None:
        """A node back in service (idle) after it was down."""
        self.run("scontrol", "update", f"nodename={node}", "state=resume", check=False)
        _wait(f"node {node}", lambda: self.node_states().get(node) == "idle",
              f"{self.node_states()} {self.log('slurmctld')}", timeout)


def _conf(d: Path, cluster: str, ctl_addr: str, ports: list[int], hosts, cpus: int) -> str:
    nodes = "\n".join(f"NodeName={h.name} NodeAddr={h.address} CPUs={cpus} State=UNKNOWN"
                      for h in hosts)
    return f"""\
ClusterName={cluster}
SlurmctldHost={socket.gethostname().split('.')[0]}({ctl_addr})
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d / 'munge.socket'}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d / 'state'}
SlurmdSpoolDir={d / 'spool'}/%n
SlurmctldPidFile={d / 'slurmctld.pid'}
SlurmdPidFile={d / 'slurmd'}-%n.pid
SlurmctldLogFile={d / 'slurmctld.log'}
SlurmdLogFile={d / 'slurmd'}-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/cgroup,task/affinity
TaskProlog={d / 'task-prolog'}
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdTimeout=30
MessageTimeout=10
KillWait=5
InactiveLimit=0
{nodes}
PartitionName={cluster} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


CGROUP_CONF = """\
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
CgroupAutomount=no
ConstrainCores=yes
"""
# each task's XCBENCH_HOME: its node's own state home (slurmstepd reads "export NAME=value")
TASK_PROLOG = '#!/bin/sh\necho "export XCBENCH_HOME={d}/home-$SLURMD_NODENAME"\n'


def node_home(d: Path, node: str) -> Path:
    """The state home the steps on ``node`` have (``XCBENCH_HOME`` from the TaskProlog)."""
    return d / f"home-{node}"


def node_cgroups(node: str, root: Path = Path("/sys/fs/cgroup")) -> list[Path]:
    """Slurm's cgroup dirs of ``node`` (every v1 controller), deepest first."""
    found = [p for top in root.glob(f"*/slurm_{node}") for p in top.rglob("*") if p.is_dir()]
    found += list(root.glob(f"*/slurm_{node}"))
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def _remove_cgroups(nodes: list[str]) -> list[str]:
    """Remove every cgroup Slurm made for ``nodes``: a process a failed test left in one (its
    slurmd is gone: nothing else will stop it) is killed first; what stayed."""
    left = []
    for n in nodes:
        for p in node_cgroups(n):
            for _ in range(50):
                with contextlib.suppress(OSError, ValueError):
                    for pid in (p / "cgroup.procs").read_text().split():
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(int(pid), 9)
                try:
                    p.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)  # a task still leaving it
            else:
                left.append(str(p))
    return left


def _wait(what: str, ok, log: str, timeout: float = START_TIMEOUT) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if ok():
            return time.monotonic() - t0
        time.sleep(0.02)  # fine-grained: these times are measured (benchmarks/bench_slurm.py)
    raise RuntimeError(f"{what} did not come up in {timeout:g} s: {log}")


@contextlib.contextmanager
def slurm_cluster(d: Path, inv, *, cpus: int = 2) -> Iterator[SlurmCluster]:
    """munged, slurmctld on the bridge's address and a slurmd in each emulated host of ``inv``;
    all stopped and their state removed after."""
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o700)
    name = f"xcbq{os.getpid() % 10000}"
    hosts = inv.netns_hosts
    ports = free_ports(2, inv.bridge.ip)
    conf = d / "slurm.conf"
    conf.write_text(_conf(d, name, inv.bridge.ip, ports, hosts, cpus))
    (d / "cgroup.conf").write_text(CGROUP_CONF)
    prolog = d / "task-prolog"
    prolog.write_text(TASK_PROLOG.format(d=d))
    prolog.chmod(0o755)
    (d / "state").mkdir(exist_ok=True)
    for h in hosts:
        (d / "spool" / h.name).mkdir(parents=True, exist_ok=True)
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    env = {"SLURM_CONF": str(conf)}
    sc = SlurmCluster(d, name, [h.name for h in hosts], env)
    try:
        t0 = time.monotonic()
        sc.procs.add(proc.spawn(
            ["munged", "-F", "--force", f"--socket={d / 'munge.socket'}", f"--key-file={key}",
             f"--pid-file={d / 'munged.pid'}", f"--log-file={d / 'munged.log'}",
             f"--seed-file={d / 'munged.seed'}"], name="munged", log=d / "munged.out"))
        _wait("munged", (d / "munge.socket").exists, sc.log("munged"), 20)
        sc.start_s["munged"] = time.monotonic() - t0
        t0 = time.monotonic()
        sc.procs.add(proc.spawn(["slurmctld", "-D", "-i"], name="slurmctld",
                                log=d / "slurmctld.out", env=env))
        _wait("slurmctld", lambda: sc.run("scontrol", "ping", check=False).stdout.count("UP") > 0,
              sc.log("slurmctld"))
        sc.start_s["slurmctld"] = time.monotonic() - t0
        t0 = time.monotonic()
        for h in hosts:
            sc.start_slurmd(h)
        _wait("slurmd", lambda: set(sc.node_states().values()) <= {"idle"}
              and len(sc.node_states()) == len(hosts),
              f"{sc.node_states()} {sc.log('slurmctld')}")
        sc.start_s["slurmd"] = time.monotonic() - t0
        yield sc
    finally:
        with contextlib.suppress(Exception):
            subprocess.run(["scancel", "--partition", name], env={**os.environ, **env},
                           capture_output=True, timeout=30)
        sc.procs.stop_all(timeout=10)
        left = _remove_cgroups([h.name for h in hosts])
        for sub in ("state", "spool", *(f"home-{h.name}" for h in hosts)):
            shutil.rmtree(d / sub, ignore_errors=True)
        if left:
            raise RuntimeError(f"Slurm's cgroups stayed: {left[:5]}")
        for f in d.glob("munge*"):
            f.unlink(missing_ok=True)
