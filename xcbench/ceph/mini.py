"""The embedded mini Ceph cluster: mon + mgr + 3 OSDs + MDS on loopback, all state in one dir.

Bring-up follows vstart.sh (see shared/notes/minicluster.md for the measured reasons): private
ceph.conf with cephx and free loopback ports, `paxos propose interval = 0.1` (the 1 s default
makes every osdmap change wait), OSDs made and started in parallel, pools and CephFS created
while the OSDs boot. Daemons run in the foreground (`-f`) in their own sessions, so they outlive
the command that started them; they also write pid files, and `down` (in any later process)
finds them by those pid files *and* by their command line naming this state dir's ceph.conf,
which also catches daemons whose pid file is stale or missing after a crash.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import struct
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from xcbench import proc
from xcbench.ceph import conf as cephconf
from xcbench.ceph import fuse as cephfuse
from xcbench.ceph import pools as cephpools
from xcbench.ceph.cluster import (
    CLUSTER_JSON,
    FS_CLIENT_ID,
    FS_NAME,
    GATEWAY_ID,
    Cluster,
    gateway_key_dir,
    wait_connect,
)
from xcbench.errors import XcbError
from xcbench.net import free_ports

MARKER = "written by xcbench: embedded mini cluster"
BINARIES = ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "monmaptool", "ceph")
OBJECTSTORES = ("bluestore", "memstore")
DAEMON_PROGS = (b"ceph-mon", b"ceph-mgr", b"ceph-osd", b"ceph-mds", b"ceph-fuse")
POOLS = {"replicated": "xcb-rep1", "erasure": "xcb-ec2-1",
         "fs_metadata": "xcb-fs-meta", "fs_data": "xcb-fs-data"}
PG_NUM = {"xcb-rep1": 32, "xcb-ec2-1": 32, "xcb-fs-meta": 16, "xcb-fs-data": 32}
# Health checks that may remain on a one-host throw-away cluster, and why they are harmless.
EXPECTED_WARNINGS = {
    "POOL_NO_REDUNDANCY": "size-1 pools are deliberate on a one-host test cluster",
    "MON_DISK_LOW": "the mon store is tiny; a nearly full disk does not matter for a throw-away cluster",
    "MGR_MODULE_ERROR": "an optional mgr module (e.g. influx) lacks its Python dependency; xcbench does not use it",
}
Log = Callable[[str], None]


def gen_key() -> str:
    """A cephx secret as ceph-authtool --gen-print-key makes it (AES, 16 random bytes)."""
    now = time.time()
    header = struct.pack("<HIIH", 1, int(now), int((now % 1) * 1e9), 16)
    return base64.b64encode(header + os.urandom(16)).decode()


def keyring_text(entity: str, key: str, caps: dict[str, str] | None = None) -> str:
    lines = [f"[{entity}]", f"\tkey = {key}"]
    lines += [f'\tcaps {svc} = "{cap}"' for svc, cap in (caps or {}).items()]
    return "\n".join(lines) + "\n"


def build_conf(state: Path, run_dir: Path, fsid: str, ports: list[int], objectstore: str) -> dict:
    log = state / "log"
    g = {
        "fsid": fsid,
        "mon host": f"[v2:127.0.0.1:{ports[0]},v1:127.0.0.1:{ports[1]}]",
        "public addr": "127.0.0.1",
        "auth cluster required": "cephx", "auth service required": "cephx",
        "auth client required": "cephx",
        "keyring": state / "ceph.$name.keyring",
        "run dir": run_dir, "admin socket": run_dir / "$name.asok", "pid file": run_dir / "$name.pid",
        "log file": log / "$name.log", "mon cluster log file": log / "cluster.log",
        "crash dir": state / "crash",
        "osd pool default size": 1, "osd pool default min size": 1,
        "osd pool default pg num": 8, "osd pool default pgp num": 8,
        "osd pool default pg autoscale mode": "off",
        "osd crush chooseleaf type": 0,  # one host: replicate across OSDs
        "mon allow pool delete": True, "mon allow pool size one": True,
        "mon warn on pool no redundancy": False,
        "mon data avail warn": 1, "mon data avail crit": 0,  # small disks here
        "auth allow insecure global id reclaim": False,
        "mon warn on insecure global id reclaim allowed": False,
        "ms bind ipv6": False,
        "osd max object size": 128 << 20,
        # PG states reach `pg stat` through the mgr: the 5 s defaults made waiting for
        # active+clean the slowest part of bring-up
        "osd mon report interval": 1, "mgr stats period": 1, "mgr tick period": 1,
    }
    if objectstore == "memstore":
        g["mon debug no require bluestore for ec overwrites"] = True
    return {
        "global": g,
        "mon": {"mon data": state / "mon.$id", "keyring": "$mon_data/keyring",
                "paxos propose interval": 0.1},  # default 1 s: every osdmap change waits
        "mgr": {"mgr data": state / "mgr.$id", "keyring": "$mgr_data/keyring"},
        "osd": {"osd data": state / "osd.$id", "keyring": "$osd_data/keyring",
                "osd objectstore": objectstore,
                "bluestore block create": True, "bluestore block size": 20 << 30,  # sparse file
                "bluestore fsck on mount": False, "memstore device bytes": 4 << 30,
                "osd memory target": 900 << 20,
                "osd op num shards": 1, "osd op num threads per shard": 2},
        "mds": {"mds data": state / "mds.$id", "keyring": "$mds_data/keyring",
                "mds cache memory limit": 256 << 20},
        # clients (CLI, python, ceph-fuse): no pid file, one admin socket per process
        "client": {"pid file": "", "admin socket": run_dir / "$name.$pid.asok"},
    }


class MiniCluster:
    """The embedded cluster living in ``state_dir``."""

    def __init__(self, state_dir: str | os.PathLike):
        self.state = Path(state_dir).absolute()
        self.conf = self.state / "ceph.conf"
        self.meta_path = self.state / CLUSTER_JSON
        self._procs: proc.ProcessSet | None = None

    # ---- what is there --------------------------------------------------------------------
    def meta(self) -> dict:
        try:
            return json.loads(self.meta_path.read_text())
        except (OSError, ValueError):
            return {}

    def ours(self) -> bool:
        """True if the state dir was made by xcbench (so wiping it is safe)."""
        if self.meta_path.exists():
            return True
        try:
            return MARKER in self.conf.read_text()[:200]
        except OSError:
            return False

    def run_dir(self) -> Path:
        try:
            sections = cephconf.parse_conf(self.conf.read_text())
            return Path(sections["global"]["run_dir"])
        except (OSError, KeyError, XcbError):
            return self.state / "run"

    def processes(self) -> dict[int, str]:
        """{pid: name} of every live process of this cluster (daemons and ceph-fuse)."""
        found: dict[int, str] = {}
        needle = str(self.conf).encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and os.path.basename(argv[0]) in DAEMON_PROGS and needle in argv:
                pid = int(entry.name)
                if proc.pid_alive(pid):
                    found[pid] = _daemon_name(argv)
        # pid files only add processes that run with this conf (a stale pid may be reused)
        for pf in self.run_dir().glob("*.pid"):
            try:
                pid = int(pf.read_text().strip())
            except (OSError, ValueError):
                continue
            if pid not in found and proc.pid_alive(pid) and _cmdline_has(pid, needle):
                found[pid] = pf.stem
        return found

    def daemons(self) -> dict[str, int]:
        return {name: pid for pid, name in self.processes().items()}

    def running(self) -> bool:
        return any(name.startswith("mon.") for name in self.daemons())

    def cluster(self) -> Cluster:
        return Cluster.from_conf(self.conf)

    # ---- up -----------------------------------------------------------------------------------
    def up(self, *, objectstore: str = "bluestore", osds: int = 3, timeout: float = 180,
           log: Log = lambda s: None) -> tuple[Cluster, bool]:
        """Start the cluster (from nothing) and wait until it is healthy with an active MDS.

        Returns (cluster, started); started is False when it was already running.
        """
        if self.running():
            if self.meta_path.exists():
                return self.cluster(), False
            raise XcbError(f"{self.state}: a cluster is starting or half-started here "
                           "(no cluster.json yet); wait, or `xcbench cluster down` it")
        if objectstore not in OBJECTSTORES:
            raise XcbError(f"--objectstore {objectstore}: choose one of {', '.join(OBJECTSTORES)}")
        check_prerequisites()
        self._prepare_dir(log)
        procs = proc.ProcessSet()
        try:
            cluster = self._bootstrap(objectstore, osds, timeout, procs, log)
        except BaseException:
            # keep the logs for diagnosis; `down` removes the rest
            self._stop_processes(log=lambda s: None)
            raise
        return cluster, True

    def _prepare_dir(self, log: Log) -> None:
        if self.state.exists() and any(self.state.iterdir()):
            if not self.ours():
                raise XcbError(f"{self.state}: directory is not empty and holds no xcbench cluster; "
                               "choose another --state-dir")
            log(f"removing the state of a stopped cluster in {self.state}")
            self.down(log=lambda s: None)
        for sub in ("log", "crash", "mounts"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        self.state.chmod(0o755)

    def _bootstrap(self, objectstore: str, n_osds: int, timeout: float,
                   procs: proc.ProcessSet, log: Log) -> Cluster:
        t0 = time.monotonic()
        st = self.state
        self._procs = procs

        def step(msg: str) -> None:
            log(f"[{time.monotonic() - t0:5.1f}s] {msg}")

        run_dir = st / "run"
        if len(str(run_dir / "client.xcb-fs.4194304.asok")) > 100:  # AF_UNIX path limit
            run_dir = Path("/tmp") / f"xcb-run-{uuid.uuid4().hex[:12]}"
        run_dir.mkdir(parents=True, exist_ok=True)
        fsid = str(uuid.uuid4())
        ports = free_ports(2)
        self.conf.write_text(cephconf.render_conf(
            build_conf(st, run_dir, fsid, ports, objectstore), header=f"{MARKER} ({st})"))

        admin_key = gen_key()
        admin_caps = {"mon": "allow *", "osd": "allow *", "mds": "allow *", "mgr": "allow *"}
        admin_keyring = st / "ceph.client.admin.keyring"
        _write_secret(admin_keyring, keyring_text("client.admin", admin_key, admin_caps))
        mon_keyring = st / "mon.keyring"
        _write_secret(mon_keyring, keyring_text("mon.", gen_key(), {"mon": "allow *"})
                      + keyring_text("client.admin", admin_key, admin_caps))
        mon_addr = f"[v2:127.0.0.1:{ports[0]},v1:127.0.0.1:{ports[1]}]"
        proc.run(["monmaptool", "--create", "--clobber", "--fsid", fsid, "--enable-all-features",
                  "--addv", "a", mon_addr, st / "monmap"], timeout=30)
        (st / "mon.a").mkdir()
        proc.run(["ceph-mon", "-c", self.conf, "--mkfs", "-i", "a", "--monmap", st / "monmap",
                  "--keyring", mon_keyring], timeout=60)
        mon_keyring.unlink()
        self._spawn(["ceph-mon", "-f", "-c", self.conf, "-i", "a"], "mon.a", procs)
        cluster = Cluster(conf=self.conf, client_id="admin", keyring=admin_keyring,
                          gateway_id=GATEWAY_ID, fs_client_id=FS_CLIENT_ID, fs_name=FS_NAME,
                          pools=dict(POOLS), embedded=True, state_dir=st)
        wait_connect(cluster, 30)
        step(f"mon.a answers on 127.0.0.1:{ports[0]}")

        self._start_daemon(cluster, "mgr.x", {"mon": "allow profile mgr", "mds": "allow *",
                                              "osd": "allow *"}, procs)
        errors: list[BaseException] = []
        threads = []
        for i in range(n_osds):
            osd_uuid, secret = str(uuid.uuid4()), gen_key()
            cluster.mon_command("osd new", uuid=osd_uuid, id=i,
                                inbuf=json.dumps({"cephx_secret": secret}).encode())
            (st / f"osd.{i}").mkdir()
            _write_secret(st / f"osd.{i}" / "keyring", keyring_text(f"osd.{i}", secret))
            t = threading.Thread(target=self._make_osd, args=(i, osd_uuid, secret, procs, errors),
                                 daemon=True)
            t.start()
            threads.append(t)
        self._start_daemon(cluster, "mds.a", {"mon": "allow profile mds",
                                              "osd": "allow rw tag cephfs *=*", "mds": "allow",
                                              "mgr": "allow profile mds"}, procs)
        step("mgr.x, mds.a started; OSDs being made")

        self._make_pools(cluster)
        step("pools, CephFS and client keys made")
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        step(f"{n_osds} OSDs made and started")
        self._wait_healthy(cluster, n_osds, t0 + timeout, step)
        meta = {
            "version": 1, "state_dir": str(st), "conf": str(self.conf), "fsid": fsid,
            "objectstore": objectstore, "mon_host": mon_addr,
            "ports": {"mon_v2": ports[0], "mon_v1": ports[1]}, "run_dir": str(run_dir),
            "client_id": "admin", "keyring": str(admin_keyring),
            "gateway_id": GATEWAY_ID, "gateway_keyring": str(st / f"ceph.client.{GATEWAY_ID}.keyring"),
            "fs_name": FS_NAME, "fs_client_id": FS_CLIENT_ID,
            "fs_keyring": str(st / f"ceph.client.{FS_CLIENT_ID}.keyring"),
            "pools": dict(POOLS), "daemons": self.daemons(),
            "up_seconds": round(time.monotonic() - t0, 2), "started": time.time(),
        }
        tmp = self.meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(meta, indent=2) + "\n")
        tmp.replace(self.meta_path)  # its presence means "up"
        cluster.info = meta
        step(f"HEALTH_OK, MDS active: up in {meta['up_seconds']:.1f} s")
        return cluster

    def _spawn(self, cmd: list, name: str, procs: proc.ProcessSet) -> proc.Proc:
        return proc.spawn(cmd, name=name, log=self.state / "log" / f"{name}.out", procs=procs)

    def _start_daemon(self, cluster: Cluster, name: str, caps: dict[str, str],
                      procs: proc.ProcessSet) -> None:
        kind, ident = name.split(".", 1)
        key = _auth_key(cluster, name, caps)
        (self.state / name).mkdir()
        _write_secret(self.state / name / "keyring", keyring_text(name, key))
        self._spawn([f"ceph-{kind}", "-f", "-c", self.conf, "-i", ident], name, procs)

    def _make_osd(self, i: int, osd_uuid: str, secret: str, procs: proc.ProcessSet,
                  errors: list) -> None:
        try:
            proc.run(["ceph-osd", "-c", self.conf, "-i", i, "--mkfs", "--key", secret,
                      "--osd-uuid", osd_uuid], timeout=180)
            self._spawn(["ceph-osd", "-f", "-c", self.conf, "-i", i], f"osd.{i}", procs)
        except BaseException as e:  # noqa: B036 - handed to the main thread
            errors.append(e)

    def _make_pools(self, c: Cluster) -> None:
        p = POOLS
        cephpools.create_replicated(c, p["replicated"], 1, PG_NUM[p["replicated"]], rados=False)
        cephpools.create_erasure(c, p["erasure"], p["erasure"], 2, 1, PG_NUM[p["erasure"]],
                                 "osd", rados=False)
        for role in ("fs_metadata", "fs_data"):
            cephpools.create_replicated(c, p[role], 1, PG_NUM[p[role]], rados=False)
        c.mon_command("fs new", fs_name=FS_NAME, metadata=p["fs_metadata"], data=p["fs_data"])
        for role in ("replicated", "erasure"):
            cephpools.add_fs_data_pool(c, FS_NAME, p[role])  # also tags them rados
        c.mon_command("fs set", fs_name=FS_NAME, var="standby_count_wanted", val="0")
        gw = _auth_key(c, f"client.{GATEWAY_ID}", {"mon": "allow r"})
        _write_secret(self.state / f"ceph.client.{GATEWAY_ID}.keyring",
                      keyring_text(f"client.{GATEWAY_ID}", gw))
        cephpools.grant_gateway(c)
        out = c.mon_command("fs authorize", filesystem=FS_NAME, entity=f"client.{FS_CLIENT_ID}",
                            caps=["/", "rwp"])  # p: layouts and quotas through xattrs
        _write_secret(self.state / f"ceph.client.{FS_CLIENT_ID}.keyring",
                      keyring_text(f"client.{FS_CLIENT_ID}", _key_of(out)))

    def _wait_healthy(self, c: Cluster, n_osds: int, deadline: float, step: Log) -> None:
        osds_ok = mds_ok = False
        last: dict = {}
        while True:
            dead = [p.name for p in self._spawned_dead()]
            if dead:
                raise XcbError(f"{dead[0]} exited during start-up; see {self.state / 'log'}")
            if not osds_ok:
                osds_ok = c.mon_command("osd stat").get("num_up_osds") == n_osds
                if osds_ok:
                    step(f"{n_osds} OSDs up")
            if not mds_ok:
                mds_ok = mds_active(c)
                if mds_ok:
                    step("MDS active")
            if osds_ok and mds_ok and pgs_clean(c):
                # health stays OK while new PGs are still creating: hence pgs_clean first
                last = c.mon_command("health")
                if not unexpected_checks(last):
                    for code in last.get("checks", {}):
                        step(f"expected warning {code}: {EXPECTED_WARNINGS[code]}")
                    return
            if time.monotonic() > deadline:
                why = "; ".join(f"{k}: {v.get('summary', {}).get('message', '')}"
                                for k, v in last.get("checks", {}).items())
                raise XcbError(f"{self.state}: cluster not healthy in time (osds up: {osds_ok}, "
                               f"mds active: {mds_ok}; {why or 'no health yet'}); logs in "
                               f"{self.state / 'log'}")
            time.sleep(0.2)

    def _spawned_dead(self) -> list[proc.Proc]:
        return [p for p in self._procs if not p.alive()] if self._procs else []

    # ---- down ---------------------------------------------------------------------------------
    def down(self, *, log: Log = lambda s: None, timeout: float = 10) -> int:
        """Unmount, stop every process of this cluster (TERM, wait, KILL) and remove the state.

        Works from pid files and command lines in a fresh process, after a crash, with stale pid
        files. Returns how many processes were stopped.
        """
        if not self.state.exists():
            log(f"{self.state}: no cluster state, nothing to do")
            return 0
        if not self.ours():
            raise XcbError(f"{self.state}: not an xcbench cluster state dir; refusing to remove it")
        run_dir = self.run_dir()
        n = self._stop_processes(log=log, timeout=timeout)
        keys = gateway_key_dir(self.conf, self.state)
        if not keys.is_relative_to(self.state):
            shutil.rmtree(keys, ignore_errors=True)
        shutil.rmtree(self.state, ignore_errors=True)
        if run_dir.exists() and not run_dir.is_relative_to(self.state) and run_dir.name.startswith("xcb-run-"):
            shutil.rmtree(run_dir, ignore_errors=True)
        if self.state.exists():
            raise XcbError(f"{self.state}: could not remove all of it (a mount still busy?)")
        log(f"stopped {n} processes, removed {self.state}")
        return n

    def _stop_processes(self, *, log: Log, timeout: float = 10) -> int:
        mounts = {Path(m["mountpoint"]): m.get("pid") for m in cephfuse.recorded_mounts(self.state)}
        for mnt in cephfuse.ceph_fuse_mounts():
            if mnt.is_relative_to(self.state):
                mounts.setdefault(mnt, None)
        for mnt, pid in mounts.items():
            log(f"unmounting {mnt}")
            cephfuse.umount(mnt, state_dir=self.state, pid=pid)
        found = self.processes()
        n = len(found)
        memstore = self.meta().get("objectstore") == "memstore"
        # MDS and OSDs first, while the mon still answers: they tell it they go down; with the
        # mon gone they wait osd_mon_shutdown_timeout (5 s) and more.
        for stage in (("ceph-fuse", "mds.", "osd."), ("mgr.",), ("mon.", "")):
            pids = {p: n for p, n in found.items() if n.startswith(stage)}
            for pid, name in pids.items():
                found.pop(pid)
                # memstore dumps its whole RAM store on SIGTERM; the data is thrown away anyway
                _kill(pid, signal.SIGKILL if memstore and name.startswith("osd.") else signal.SIGTERM)
            t = time.monotonic()
            _wait_gone(pids, timeout)
            if pids:
                log(f"stopped {', '.join(sorted(pids.values()))} in {time.monotonic() - t:.1f} s")
        return n

    def rss(self) -> dict[str, int]:
        """{daemon: resident bytes} of the running daemons."""
        return {name: proc_rss(pid) for name, pid in self.daemons().items()}


def check_prerequisites() -> None:
    for b in BINARIES:
        proc.which(b)


def mds_active(c: Cluster) -> bool:
    dump = c.mon_command("fs dump")
    for fs in dump.get("filesystems", []):
        if fs["mdsmap"]["fs_name"] == FS_NAME:
            return any(i.get("state") == "up:active" for i in fs["mdsmap"].get("info", {}).values())
    return False


def pgs_clean(c: Cluster) -> bool:
    """Every PG of every pool exists and is active+clean."""
    expected = sum(p["pg_num"] for p in c.mon_command("osd pool ls", detail="detail"))
    summary = c.mon_command("pg stat").get("pg_summary", {})
    states = {s["name"]: s["num"] for s in summary.get("num_pg_by_state", [])}
    return summary.get("num_pgs") == expected and states.get("active+clean") == expected


def unexpected_checks(health: dict) -> list[str]:
    if health.get("status") == "HEALTH_OK":
        return []
    return [code for code in health.get("checks", {}) if code not in EXPECTED_WARNINGS] or \
        ([] if health.get("checks") else ["(no checks)"])


def proc_rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _auth_key(c: Cluster, entity: str, caps: dict[str, str]) -> str:
    flat = [x for kv in caps.items() for x in kv]
    return _key_of(c.mon_command("auth get-or-create", entity=entity, caps=flat))


def _key_of(out) -> str:
    if isinstance(out, list) and out and "key" in out[0]:
        return out[0]["key"]
    raise XcbError(f"unexpected answer from the mon while creating a key: {str(out)[:80]}")


def _write_secret(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)


def _daemon_name(argv: list[bytes]) -> str:
    argv = [a for a in argv if a]
    prog = os.path.basename(argv[0]).decode(errors="replace")
    if prog == "ceph-fuse":
        return f"ceph-fuse:{argv[-1].decode(errors='replace')}"
    ident = argv[argv.index(b"-i") + 1].decode() if b"-i" in argv[:-1] else "?"
    return f"{prog.removeprefix('ceph-')}.{ident}"


def _cmdline_has(pid: int, needle: bytes) -> bool:
    try:
        return needle in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_gone(pids: dict[int, str], timeout: float) -> None:
    """Wait for ``pids`` to exit; SIGKILL each one left after its grace time.

    An MDS spends ~8 s "shutting down rank 0" on SIGTERM; its state is thrown away with the
    cluster, so it gets 2 s.
    """
    t0 = time.monotonic()
    grace = {p: min(timeout, 2.0) if n.startswith("mds.") else timeout for p, n in pids.items()}
    alive = dict(grace)
    while alive:
        now = time.monotonic() - t0
        for pid, g in list(alive.items()):
            if not _alive_reap(pid):
                del alive[pid]
            elif now > g + 5:
                del alive[pid]  # unkillable (D state?): give up on it
            elif now > g:
                _kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _alive_reap(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)  # our own child (pytest session): do not leave a zombie
    except ChildProcessError:
        pass
    return proc.pid_alive(pid)
