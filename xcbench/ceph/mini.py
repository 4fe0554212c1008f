"""The embedded mini Ceph cluster: mon + mgr + 3 OSDs + MDS on loopback, all state in one dir.

Bring-up follows Ceph's vstart.sh (each setting's reason is beside it in xcbench.ceph.bootstrap): private
ceph.conf with cephx and free loopback ports, `paxos propose interval = 0.1` (the 1 s default
makes every osdmap change wait), OSDs made and started in parallel, pools and CephFS created
while the OSDs boot. Daemons run in the foreground (`-f`) in their own sessions, so they outlive
the command that started them; they also write pid files, and `down` (in any later process)
finds them by those pid files *and* by their command line naming this state dir's ceph.conf,
which also catches daemons whose pid file is stale or missing after a crash.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psutil

from xcbench.ceph import conf as cephconf
from xcbench.ceph import monitoring
from xcbench.ceph.bootstrap import (  # noqa: F401 (public names of the mini cluster)
    BINARIES,
    EXPECTED_WARNINGS,
    PG_NUM,
    POOLS,
    auth_key,
    build_conf,
    check_addr,
    check_prerequisites,
    gen_key,
    keyring_text,
    make_pools,
    mds_active,
    mon_host,
    pgs_clean,
    unexpected_checks,
    write_secret,
)
from xcbench.ceph.cluster import (
    CLUSTER_JSON,
    FS_CEPH_ID,
    FS_NAME,
    GATEWAY_ID,
    Cluster,
    wait_connect,
)
from xcbench.errors import XcbError
from xcbench.system import mounts as sysmounts
from xcbench.system import outfiles, proc, statedir
from xcbench.system.fsutil import remove_tree
from xcbench.system.ports import LOOPBACK, free_ports

MARKER = "written by xcbench: embedded mini cluster"
MADE = ".xcbench-cluster"  # the proof a state dir is a cluster this user made on this host
OBJECTSTORES = ("bluestore", "memstore")
DAEMON_PROGS = ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-fuse")
Log = Callable[[str], None]



class MiniCluster:
    """The embedded cluster living in ``state_dir``."""

    def __init__(self, state_dir: str | os.PathLike):
        self.state = Path(state_dir).absolute()
        self.conf = self.state / "ceph.conf"
        self.meta_path = self.state / CLUSTER_JSON
        self._procs: proc.ProcessSet | None = None
        self._osd_host: tuple[str, str] | None = None

    # ---- what is there --------------------------------------------------------------------
    def meta(self) -> dict:
        try:
            return json.loads(self.meta_path.read_text())
        except (OSError, ValueError):
            return {}

    def ours(self) -> bool:
        """True if the state dir is a cluster xcbench made here (so wiping it is safe)."""
        return self.not_ours() is None

    def not_ours(self) -> str | None:
        """Why the state dir may not be acted on (None: it may): it must hold the marker that
        `cluster up` writes first (O_EXCL, 0600), ours, naming this dir and this host (on a
        shared home, another host's live cluster is never taken for a dead one of ours)."""
        made = self.state / MADE
        why = statedir.record_problem(made)
        if why is not None:
            return f"no proof xcbench made this cluster ({MADE}: {why})"
        try:
            rec = json.loads(made.read_text())
        except (OSError, ValueError) as e:
            return f"{MADE} is unreadable ({e})"
        why = statedir.host_problem(rec)
        if why is not None:
            return f"{MADE}: {why}"
        if rec.get("state_dir") != str(self.state) or rec.get("uid") != os.geteuid():
            return f"{MADE} was written for {rec.get('state_dir')!r} by uid {rec.get('uid')!r}"
        return None

    def _mark(self) -> None:
        """Write the marker (before anything of the cluster exists)."""
        fd = os.open(self.state / MADE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump({"host": statedir.HOST, "uid": os.geteuid(), "state_dir": str(self.state),
                       "made": time.time()}, fh)

    def run_dir(self) -> Path:
        try:
            sections = cephconf.parse_conf(self.conf.read_text())
            return Path(sections["global"]["run_dir"])
        except (OSError, KeyError, XcbError):
            return self.state / "run"

    def processes(self) -> dict[int, str]:
        """{pid: name} of every live process of this cluster (daemons and ceph-fuse)."""
        found: dict[int, str] = {}
        needle = str(self.conf)
        for p in psutil.process_iter(["cmdline"]):
            argv = p.info["cmdline"] or []
            if argv and os.path.basename(argv[0]) in DAEMON_PROGS and needle in argv:
                if proc.pid_alive(p.pid):
                    found[p.pid] = _daemon_name(argv)
            elif monitoring.is_ours(argv, self.state) and proc.pid_alive(p.pid):
                name = os.path.basename(argv[0]).replace("prometheus-", "")
                far = name == "node-exporter" and not any(a.startswith("--web.listen-address=127.")
                                                          for a in argv)
                found[p.pid] = name + ("-storage" if far else "")  # the one in the storage host
        # pid files only add processes that run with this conf (a stale pid may be reused)
        for pf in self.run_dir().glob("*.pid"):
            try:
                pid = int(pf.read_text().strip())
            except (OSError, ValueError):
                continue
            if pid not in found and proc.pid_alive(pid) and (
                    _cmdline_has(pid, needle) or monitoring.is_ours(proc.cmdline(pid) or [], self.state)):
                found[pid] = pf.stem
        return found

    def daemons(self) -> dict[str, int]:
        return {name: pid for pid, name in self.processes().items()}

    def role_pids(self) -> dict[str, list[int]]:
        """{"osd": [...], "mds": [...], "mon": [...], "mgr": [...]} from the daemons' pid files
        (cheap enough for every telemetry tick; a pid counts only while its command line still
        names this cluster's conf, so a stale or reused pid is never taken)."""
        out: dict[str, list[int]] = {"osd": [], "mds": [], "mon": [], "mgr": []}
        needle = str(self.conf)
        for pf in sorted(self.run_dir().glob("*.pid")):
            kind = pf.stem.partition(".")[0]
            if kind not in out:
                continue
            try:
                pid = int(pf.read_text().strip())
            except (OSError, ValueError):
                continue
            if _cmdline_has(pid, needle):
                out[kind].append(pid)
        return out

    def running(self) -> bool:
        return any(name.startswith("mon.") for name in self.daemons())

    def cluster(self) -> Cluster:
        return Cluster.from_conf(self.conf)

    # ---- up -----------------------------------------------------------------------------------
    def up(self, *, objectstore: str = "bluestore", osds: int = 3, timeout: float = 180,
           addr: str = LOOPBACK, log: Log = lambda s: None,
           prometheus: bool = True, osd_host: tuple[str, str] | None = None) -> tuple[Cluster, bool]:
        """Start the cluster (from nothing) and wait until it is healthy with an active MDS.

        ``addr``: the one IPv4 address every daemon listens on (loopback by default; the
        emulated hosts' bridge address so that gateway hosts in network namespaces reach it).
        ``osd_host``: (network namespace, its address): the OSDs (and a node_exporter) run in
        that emulated storage host, so every client byte to them crosses its link.
        Returns (cluster, started); started is False when it was already running.
        """
        addr = check_addr(addr)
        if prometheus:  # its binaries are there before anything starts
            monitoring.check_prerequisites()
        if self.running():
            if self.meta_path.exists():
                have = self.meta().get("addr", LOOPBACK)
                if have != addr:
                    raise XcbError(f"{self.state}: the cluster running here listens on {have}, "
                                   f"not {addr}; `xcbench cluster down` it first")
                return self.cluster(), False
            raise XcbError(f"{self.state}: a cluster is starting or half-started here "
                           "(no cluster.json yet); wait, or `xcbench cluster down` it")
        if objectstore not in OBJECTSTORES:
            raise XcbError(f"--objectstore {objectstore}: choose one of {', '.join(OBJECTSTORES)}")
        check_prerequisites()
        self._prepare_dir(log)
        procs = proc.ProcessSet(record=False)  # outlives the command: not an orphan
        try:
            self._osd_host = osd_host
            cluster = self._bootstrap(objectstore, osds, timeout, procs, log, addr, prometheus)
        except BaseException:
            # keep the logs for diagnosis; `down` removes the rest
            self._stop_processes(log=lambda s: None)
            raise
        return cluster, True

    def _prepare_dir(self, log: Log) -> None:
        if self.state.exists() and any(self.state.iterdir()):
            why = self.not_ours()
            if why is not None:
                raise XcbError(f"{self.state}: directory is not empty and holds no xcbench cluster "
                               f"of this host ({why}); choose another --state-dir")
            log(f"removing the state of a stopped cluster in {self.state}")
            self.down(log=lambda s: None)
        # made from / by descriptor: every parent root's or ours and nobody else's to write, the
        # dir itself ours (one another user made meanwhile is refused, never used)
        os.close(outfiles.open_dir(self.state, mode=0o755))
        self.state.chmod(0o755)
        self._mark()
        for sub in ("log", "crash", "mounts"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        self.state.chmod(0o755)

    def _bootstrap(self, objectstore: str, n_osds: int, timeout: float,
                   procs: proc.ProcessSet, log: Log, addr: str = LOOPBACK,
                   prometheus: bool = False) -> Cluster:
        t0 = time.monotonic()
        st = self.state
        self._procs = procs

        def step(msg: str) -> None:
            log(f"[{time.monotonic() - t0:5.1f}s] {msg}")

        run_dir = st / "run"
        if len(str(run_dir / "client.xcb-fs.4194304.asok")) > 100:  # AF_UNIX path limit
            run_dir = Path("/tmp") / f"xcb-run-{uuid.uuid4().hex[:12]}"
            run_dir.mkdir(0o755)  # a new name: never one found in place
        else:
            run_dir.mkdir(exist_ok=True)  # in the state dir, ours
        fsid = str(uuid.uuid4())
        ports = free_ports(2, addr)
        self.conf.write_text(cephconf.render_conf(
            build_conf(st, run_dir, fsid, ports, objectstore, addr), header=f"{MARKER} ({st})"))

        admin_key = gen_key()
        admin_caps = {"mon": "allow *", "osd": "allow *", "mds": "allow *", "mgr": "allow *"}
        admin_keyring = st / "ceph.client.admin.keyring"
        write_secret(admin_keyring, keyring_text("client.admin", admin_key, admin_caps))
        mon_keyring = st / "mon.keyring"
        write_secret(mon_keyring, keyring_text("mon.", gen_key(), {"mon": "allow *"})
                     + keyring_text("client.admin", admin_key, admin_caps))
        mon_addr = mon_host(addr, ports)
        proc.run(["monmaptool", "--create", "--clobber", "--fsid", fsid, "--enable-all-features",
                  "--addv", "a", mon_addr, st / "monmap"], timeout=30)
        (st / "mon.a").mkdir()
        proc.run(["ceph-mon", "-c", self.conf, "--mkfs", "-i", "a", "--monmap", st / "monmap",
                  "--keyring", mon_keyring], timeout=60)
        mon_keyring.unlink()
        self._spawn(["ceph-mon", "-f", "-c", self.conf, "-i", "a"], "mon.a", procs)
        cluster = Cluster(conf=self.conf, ceph_id="admin", keyring=admin_keyring,
                          gateway_id=GATEWAY_ID, fs_ceph_id=FS_CEPH_ID, fs_name=FS_NAME,
                          pools=dict(POOLS), embedded=True, state_dir=st)
        wait_connect(cluster, 30)
        step(f"mon.a answers on {addr}:{ports[0]}")

        self._start_daemon(cluster, "mgr.x", {"mon": "allow profile mgr", "mds": "allow *",
                                              "osd": "allow *"}, procs)
        # the mgr loads its prometheus module and the server starts while the OSDs come up
        prom = monitoring.start(st, run_dir, monitoring.enable_mgr_module(cluster, addr),
                                procs, osd_host=self._osd_host) if prometheus else None
        errors: list[BaseException] = []
        threads = []
        for i in range(n_osds):
            osd_uuid, secret = str(uuid.uuid4()), gen_key()
            cluster.mon_command("osd new", uuid=osd_uuid, id=i,
                                inbuf=json.dumps({"cephx_secret": secret}).encode())
            (st / f"osd.{i}").mkdir()
            write_secret(st / f"osd.{i}" / "keyring", keyring_text(f"osd.{i}", secret))
            t = threading.Thread(target=self._make_osd, args=(i, osd_uuid, secret, procs, errors),
                                 daemon=True)
            t.start()
            threads.append(t)
        self._start_daemon(cluster, "mds.a", {"mon": "allow profile mds",
                                              "osd": "allow rw tag cephfs *=*", "mds": "allow",
                                              "mgr": "allow profile mds"}, procs)
        step("mgr.x, mds.a started; OSDs being made")

        make_pools(cluster, st)
        step("pools, CephFS and client keys made")
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        step(f"{n_osds} OSDs made and started")
        self._wait_healthy(cluster, n_osds, t0 + timeout, step)
        if prom:
            try:
                monitoring.wait_scraped(prom["url"], ("node", "ceph"),
                                        max(time.monotonic() + 30, t0 + timeout), procs)
            except XcbError as e:  # say what the mgr said of its module (the log is removed)
                raise XcbError(f"{e}; {monitoring.mgr_module_said(st / 'log' / 'mgr.x.log')}") from None
            step(f"prometheus {prom['url']} scrapes node_exporter {prom['node']} and the mgr "
                 f"module {prom['mgr']} every {prom['scrape_interval']:g} s")
        meta = {
            "version": 1, "state_dir": str(st), "conf": str(self.conf), "fsid": fsid,
            "objectstore": objectstore, "mon_host": mon_addr, "addr": addr,
            "ports": {"mon_v2": ports[0], "mon_v1": ports[1]}, "run_dir": str(run_dir),
            "client_id": "admin", "keyring": str(admin_keyring),
            "gateway_id": GATEWAY_ID, "gateway_keyring": str(st / f"ceph.client.{GATEWAY_ID}.keyring"),
            "fs_name": FS_NAME, "fs_client_id": FS_CEPH_ID,
            "fs_keyring": str(st / f"ceph.client.{FS_CEPH_ID}.keyring"),
            "pools": dict(POOLS), "daemons": self.daemons(), "prometheus": prom,
            "osd_host": list(self._osd_host) if self._osd_host else None,
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
        key = auth_key(cluster, name, caps)
        (self.state / name).mkdir()
        write_secret(self.state / name / "keyring", keyring_text(name, key))
        self._spawn([f"ceph-{kind}", "-f", "-c", self.conf, "-i", ident], name, procs)

    def _make_osd(self, i: int, osd_uuid: str, secret: str, procs: proc.ProcessSet,
                  errors: list) -> None:
        try:
            # the key from a 0600 file, not the command line (which any user reads with ps)
            keyfile = self.state / f"osd.{i}" / "mkfs.key"
            write_secret(keyfile, secret)
            try:
                proc.run(["ceph-osd", "-c", self.conf, "-i", i, "--mkfs", "--keyfile", keyfile,
                          "--osd-uuid", osd_uuid], timeout=180)
            finally:
                keyfile.unlink(missing_ok=True)
            cmd: list = ["ceph-osd", "-f", "-c", self.conf, "-i", i]
            if self._osd_host:  # inside the storage host, on its address
                ns, a = self._osd_host
                cmd = ["ip", "netns", "exec", ns, *cmd, "--public-addr", a, "--cluster-addr", a]
            self._spawn(cmd, f"osd.{i}", procs)
        except BaseException as e:  # noqa: B036 - handed to the main thread
            errors.append(e)

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
        why = self.not_ours()
        if why is not None:
            raise XcbError(f"{self.state}: not a cluster xcbench made here: {why}; refusing to "
                           "touch it")
        run_dir = self.run_dir()
        n = self._stop_processes(log=log, timeout=timeout)
        remove_tree(self.state, unmount=True, what="cluster down")
        if run_dir.exists() and not run_dir.is_relative_to(self.state) and run_dir.name.startswith("xcb-run-"):
            remove_tree(run_dir, what="cluster down")
        if self.state.exists():
            raise XcbError(f"{self.state}: could not remove all of it (a mount still busy?)")
        log(f"stopped {n} processes, removed {self.state}")
        return n

    def _stop_processes(self, *, log: Log, timeout: float = 10) -> int:
        mounts = {Path(m["mountpoint"]): m.get("pid") for m in sysmounts.recorded_mounts(self.state)}
        for mnt in sysmounts.ceph_fuse_mounts():
            if mnt.is_relative_to(self.state):
                mounts.setdefault(mnt, None)
        for mnt, pid in mounts.items():
            log(f"unmounting {mnt}")
            sysmounts.fuse_umount(mnt, state_dir=self.state, pid=pid)
        found = self.processes()
        n = len(found)
        memstore = self.meta().get("objectstore") == "memstore"
        # the state is thrown away: a daemon's clean stop only matters while a mon hears it
        mon_gone = not any(name.startswith("mon.") for name in found.values())
        # OSDs first, while the mon still answers: they tell it they go down; with the
        # mon gone they wait osd_mon_shutdown_timeout (5 s) and more.
        for stage in (("ceph-fuse", "mds.", "osd.", "prometheus", "node-exporter"), ("mgr.",),
                      ("mon.", "")):
            pids = {p: n for p, n in found.items() if n.startswith(stage)}
            for pid in pids:
                found.pop(pid)
            t = time.monotonic()
            # An MDS spends ~8 s "shutting down rank 0" on SIGTERM and its state is thrown
            # away with the cluster: SIGKILL. memstore dumps its whole RAM store on SIGTERM:
            # its OSDs get SIGKILL (the data is thrown away anyway). With no mon (a crash), an
            # OSD on SIGTERM waits out osd_mon_shutdown_timeout for it: SIGKILL too.
            proc.stop_pids({p: timeout for p in pids},
                           sig={p: signal.SIGKILL if _killed_outright(n, memstore, mon_gone)
                                else signal.SIGTERM for p, n in pids.items()})
            if pids:
                log(f"stopped {', '.join(sorted(pids.values()))} in {time.monotonic() - t:.1f} s")
        return n

    def rss(self) -> dict[str, int]:
        """{daemon: resident bytes} of the running daemons."""
        return {name: proc.rss(pid) for name, pid in self.daemons().items()}


def _killed_outright(name: str, memstore: bool, mon_gone: bool) -> bool:
    """Whether ``cluster down`` sends SIGKILL, not SIGTERM, to the daemon ``name``."""
    if name.startswith("osd."):
        return memstore or mon_gone
    return name.startswith("mds.")


def _daemon_name(argv: list[str]) -> str:
    argv = [a for a in argv if a]
    prog = os.path.basename(argv[0])
    if prog == "ceph-fuse":
        return f"ceph-fuse:{argv[-1]}"
    ident = argv[argv.index("-i") + 1] if "-i" in argv[:-1] else "?"
    return f"{prog.removeprefix('ceph-')}.{ident}"


def _cmdline_has(pid: int, needle: str) -> bool:
    return needle in (proc.cmdline(pid) or [])
