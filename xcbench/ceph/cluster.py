"""A handle on a Ceph cluster: the embedded mini cluster or one given by --ceph-conf.

This is the one place that finds the ceph.conf (flags, then CEPH_CONF / CEPH_ARGS, then the
embedded cluster's state dir). Interface (fields may be added, not renamed; ceph_id and fs_ceph_id were
client_id and fs_client_id: the Ceph identity has one name, as in --ceph-id, and the stored
cluster.json and manifest keep theirs):

    Cluster.conf          Path of ceph.conf
    Cluster.ceph_id       the toolkit's Ceph id, client.<id> ("admin" on the mini cluster unless set)
    Cluster.keyring       Path | None
    Cluster.gateway_id    Ceph id XrdCeph gateways use (its [client.<id>] section names the keyring)
    Cluster.fs_name       CephFS file system xcbench uses (None if none)
    Cluster.fs_ceph_id    Ceph id for ceph-fuse / libcephfs
    Cluster.pools         {"replicated": "xcb-rep3", "erasure": "xcb-ec2-1", ...}
    Cluster.embedded      True for a cluster xcbench made (it has a cluster.json beside its conf)
    Cluster.state_dir     its state dir (embedded), Cluster.info the rest of cluster.json
    Cluster.from_conf(conf, ceph_id="admin", keyring=None, fs_name=None)
    Cluster.discover_fs() bring-your-own cluster without --fs: pick its only file system
    Cluster.rados()       a connected rados.Rados (cached)
    Cluster.mon_command(prefix, **args) -> parsed JSON
    Cluster.ceph_cli(*args) -> list[str]  the `ceph` command line for this cluster
    Cluster.osd_max_object_size(), Cluster.num_osds(), Cluster.num_hosts()
    Cluster.ensure_pool(spec, cephfs=False), gateway_conf(dir), fuse_mount(mnt), fuse_umount(mnt)

    (the options: xcbench.commands.options.add_ceph_args)
    cluster_from_args(args)       -> Cluster (one-line XcbError if conf missing/garbage)
"""

from __future__ import annotations

import errno
import json
import os
import pwd
import shlex
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcbench.cell.protection import POOL_PREFIX, Protection
from xcbench.ceph import conf as cephconf
from xcbench.ceph import keys, mounts, pools
from xcbench.ceph.keys import KeyDir
from xcbench.errors import XcbError
from xcbench.system import proc, statedir
from xcbench.system.fsutil import hand_over, make_dir, write_file
from xcbench.system.mounts import fuse_umount
from xcbench.system.userfiles import read_bytes
from xcbench.system.xrootd_user import user_name

__all__ = ["POOL_PREFIX", "Cluster", "cluster_from_args"]
GATEWAY_ID = "xcb-gw"
FS_CEPH_ID = "xcb-fs"
FS_NAME = "xcb-fs"
DEFAULT_POOLS = {"replicated": "xcb-rep3", "erasure": "xcb-ec2-1"}
CLUSTER_JSON = "cluster.json"
CONNECT_TIMEOUT = 10  # seconds: a dead cluster gives a one-line error, not a hang
MON_OP_TIMEOUT = 60


def default_state_dir(explicit: str | os.PathLike | None = None) -> Path:
    """--state-dir, else <state home>/cluster (xcbench.system.statedir: $XCBENCH_HOME, else
    /var/lib/xcbench for root, else $XDG_STATE_HOME/xcbench)."""
    if explicit:
        return Path(explicit).absolute()
    return statedir.home() / "cluster"


def parse_ceph_args(text: str | None) -> dict[str, str]:
    """conf / id / keyring from a CEPH_ARGS string (the options the ceph CLI also reads there)."""
    out: dict[str, str] = {}
    words = shlex.split(text or "")
    names = {"-c": "conf", "--conf": "conf", "--id": "id", "-i": "id", "--user": "id",
             "-n": "name", "--name": "name", "-k": "keyring", "--keyring": "keyring"}
    i = 0
    while i < len(words):
        w = words[i]
        key, _, val = w.partition("=")
        if key in names and (val or i + 1 < len(words)):
            if not val:
                i += 1
                val = words[i]
            out[names[key]] = val
        i += 1
    if "name" in out:
        name = out.pop("name")
        out.setdefault("id", name.split(".", 1)[1] if name.startswith("client.") else name)
    return out


@dataclass
class Cluster:
    conf: Path
    ceph_id: str = "admin"
    keyring: Path | None = None
    gateway_id: str = GATEWAY_ID
    gateway_keyring: Path | None = None
    fs_name: str | None = None
    fs_ceph_id: str = FS_CEPH_ID
    fs_keyring: Path | None = None
    pools: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_POOLS))
    embedded: bool = False
    state_dir: Path | None = None
    info: dict[str, Any] = field(default_factory=dict)  # the rest of cluster.json (pids, ports)
    _rados: Any = field(default=None, repr=False, compare=False)
    _lock: Any = field(default_factory=threading.Lock, repr=False, compare=False)
    _keys: KeyDir = field(default_factory=KeyDir, repr=False, compare=False)

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_conf(cls, conf: str | os.PathLike, ceph_id: str | None = "admin",
                  keyring: str | os.PathLike | None = None, fs_name: str | None = None,
                  gateway_id: str | None = None,
                  gateway_keyring: str | os.PathLike | None = None) -> Cluster:
        """A handle for ``conf``; roles come from ``cluster.json`` beside it if xcbench made it.

        The conf is checked (exists, parses, names mons) before anything connects.
        """
        conf = Path(conf).absolute()
        ceph_args = os.environ.get("CEPH_ARGS", "")
        cephconf.check_conf(conf, need_mon_host="--mon-host" not in ceph_args and "--mon_host" not in ceph_args)
        kr = Path(keyring).absolute() if keyring else None
        if kr is not None:  # a missing or unreadable keyring: one line, before connecting
            read_bytes(kr, "keyring")
        meta_path = conf.parent / CLUSTER_JSON
        if meta_path.exists():
            try:
                meta = json.loads(meta_path.read_text())
            except (OSError, ValueError) as e:
                raise XcbError(f"{meta_path}: unreadable cluster.json ({e})") from e
            cid = ceph_id or meta["client_id"]

            def path(key: str) -> Path | None:
                return Path(meta[key]) if meta.get(key) else None
            gkr = Path(gateway_keyring).absolute() if gateway_keyring else None
            return cls(conf=conf, ceph_id=cid,
                       keyring=kr or (path("keyring") if cid == meta["client_id"] else None),
                       gateway_id=gateway_id or meta["gateway_id"],
                       gateway_keyring=gkr or (path("gateway_keyring") if not gateway_id else None),
                       fs_name=fs_name or meta.get("fs_name"), fs_ceph_id=meta["fs_client_id"],
                       fs_keyring=path("fs_keyring"), pools=dict(meta["pools"]), embedded=True,
                       state_dir=Path(meta.get("state_dir") or conf.parent), info=meta)
        # Bring-your-own cluster: xcbench writes only xcb- pools and /xcbench; the gateway has a
        # key of its own (`xcbench cluster caps`), never the run's (which may be admin's).
        cid = ceph_id or "admin"
        return cls(conf=conf, ceph_id=cid, keyring=kr, gateway_id=gateway_id or GATEWAY_ID,
                   gateway_keyring=Path(gateway_keyring).absolute() if gateway_keyring else None,
                   fs_name=fs_name, fs_ceph_id=cid, fs_keyring=kr, embedded=False)

    # ---- talking to Ceph ----------------------------------------------------------------
    def rados(self):
        """A connected rados.Rados, cached; XcbError (one line) if the cluster does not answer."""
        with self._lock:
            if self._rados is None:
                import rados
                conf = {"rados_mon_op_timeout": str(MON_OP_TIMEOUT),
                        "rados_osd_op_timeout": "0", "client_mount_timeout": str(CONNECT_TIMEOUT)}
                if self.keyring:
                    conf["keyring"] = str(self.keyring)
                r = rados.Rados(conffile=str(self.conf), rados_id=self.ceph_id, conf=conf)
                try:
                    r.connect(timeout=CONNECT_TIMEOUT)
                except rados.Error as e:
                    r.shutdown()
                    raise XcbError(f"{self.conf}: cannot connect to the cluster as client."
                                   f"{self.ceph_id}: {e.__class__.__name__}: {e}") from e
                self._rados = r
            return self._rados

    def close(self) -> None:
        with self._lock:
            if self._rados is not None:
                self._rados.shutdown()
                self._rados = None
        self._keys.close()

    def keep_keys(self) -> str | None:
        """Keep the key copies past this process (for a gateway left running); their dir."""
        return self._keys.keep()

    def ioctx(self, pool: str):
        import rados
        try:
            return self.rados().open_ioctx(pool)
        except rados.Error as e:
            raise XcbError(f"pool {pool}: cannot open: {e}") from e

    def mon_command(self, prefix: str, *, inbuf: bytes = b"", **args) -> Any:
        """Run a mon command (args as Ceph names them); JSON-decoded result, XcbError on failure."""
        cmd = {"prefix": prefix, "format": "json", **{k: v for k, v in args.items() if v is not None}}
        ret, out, outs = self.rados().mon_command(json.dumps(cmd), inbuf)
        if ret != 0:
            name = errno.errorcode.get(-ret, str(ret))
            raise XcbError(f"ceph {prefix}: {outs.strip() or name} ({name})")
        if not out:
            return outs
        try:
            return json.loads(out)
        except ValueError:
            return out.decode(errors="replace")

    def ceph_cli(self, *args: str) -> list[str]:
        cmd = ["ceph", "-c", str(self.conf), "--id", self.ceph_id]
        if self.keyring:
            cmd += ["--keyring", str(self.keyring)]
        return cmd + [str(a) for a in args]

    def osd_max_object_size(self) -> int:
        try:
            return int(self.mon_command("config get", who="osd", key="osd_max_object_size"))
        except (XcbError, ValueError, TypeError):
            value = cephconf.parse_conf(self.conf.read_text()).get("osd", {}).get("osd_max_object_size")
            return int(value) if value else 128 << 20

    def num_osds(self) -> int:
        return int(self.mon_command("osd stat")["num_osds"])

    def num_hosts(self) -> int:
        nodes = self.mon_command("osd tree")["nodes"]
        return sum(1 for n in nodes if n.get("type") == "host" and n.get("children"))

    def fs_names(self) -> list[str]:
        return [fs["name"] for fs in self.mon_command("fs ls")]

    def discover_fs(self) -> str | None:
        """For a bring-your-own cluster without --fs: its only file system, or None."""
        if self.fs_name is None and not self.embedded:
            names = self.fs_names()
            self.fs_name = names[0] if len(names) == 1 else None
        return self.fs_name

    def pool_names(self) -> list[str]:
        return [p["pool_name"] if isinstance(p, dict) else p for p in self.mon_command("osd pool ls")]

    # ---- pools --------------------------------------------------------------------------
    def ensure_pool(self, spec: Protection, *, cephfs: bool = False, pg_num: int = 32) -> str:
        """Create the xcb- pool of ``spec`` if missing; return its name."""
        return pools.ensure_pool(self, spec, cephfs=cephfs, pg_num=pg_num)

    # ---- gateways -----------------------------------------------------------------------
    def gateway_conf(self, directory: str | os.PathLike) -> Path:
        """A ceph.conf for xrootd/XrdCeph (which runs as user xrootd); returns its path.

        Same [global] as the cluster's conf plus a [client.<gateway_id>] section naming a copy
        of the gateway keyring that the xrootd user can read, kept in this handle's private key
        directory (xcbench.ceph.keys), never in ``directory``.
        """
        directory = Path(directory).absolute()
        directory.mkdir(parents=True, exist_ok=True)
        sections = cephconf.parse_conf(self.conf.read_text(), source=str(self.conf))
        try:
            xrd = pwd.getpwnam(user_name())
        except KeyError as e:
            raise XcbError(f"user {user_name()} missing (install xrootd-server, or `make setup`)") from e
        src = self.gateway_keyring or self._default_keyring(self.gateway_id)
        if not self.embedded and self.gateway_id in ("admin", self.ceph_id):
            raise XcbError(f"gateway: client.{self.gateway_id} is the run's own key; a gateway on a "
                           "site's cluster runs with its own key limited to the xcb- pools "
                           "(`xcbench cluster caps` prints it; give --gateway-id/--gateway-keyring)")
        if src is None or not Path(src).exists():
            raise XcbError(f"{self.conf}: no keyring for the gateway's key client.{self.gateway_id}"
                           " (give --gateway-keyring PATH; `xcbench cluster caps` prints the line"
                           " that creates the key)")
        # xrootd cannot read root's keyring: a copy of that one file, the xrootd user's, 0400,
        # in this handle's private key dir (removed on close / exit / by the next command)
        key_copy = self._keys.write(f"ceph.client.{self.gateway_id}.keyring", Path(src).read_bytes(),
                                    owner=(xrd.pw_uid, xrd.pw_gid))
        logdir = directory / "ceph-client-logs"
        if not logdir.is_dir():  # ``directory`` is root's (the gateway's live dir): made once
            make_dir(logdir, 0o755)
            hand_over(logdir, (xrd.pw_uid, xrd.pw_gid))
        # every Ceph user's keyring is the gateway's key copy (cephconf.gateway_sections)
        out = cephconf.gateway_sections(sections.get("global", {}), self.gateway_id,
                                        {"keyring": key_copy, "log file": logdir / "ceph-client.$pid.log",
                                         "admin socket": "", "pid file": ""})
        return write_file(directory / "ceph.conf",
                          cephconf.render_conf(out, header=f"gateway conf written by xcbench for "
                                               f"client.{self.gateway_id} of {self.conf}"), 0o644)

    def _default_keyring(self, ceph_id: str) -> Path | None:
        """The keyring the conf's `keyring` option names for client.<id> (first existing)."""
        sections = cephconf.parse_conf(self.conf.read_text(), source=str(self.conf))
        for sec in (f"client.{ceph_id}", "client", "global"):
            value = sections.get(sec, {}).get("keyring")
            if value:
                for cand in value.split(","):
                    p = Path(cand.strip().replace("$cluster", "ceph").replace("$name", f"client.{ceph_id}")
                             .replace("$id", ceph_id))
                    if p.exists():
                        return p
        return None

    # ---- CephFS via ceph-fuse ----------------------------------------------------------
    def fuse_mount(self, mountpoint: str | os.PathLike, procs: proc.ProcessSet | None = None,
                   timeout: float = 30) -> None:
        mounts.fuse_mount(self, Path(mountpoint), procs=procs, timeout=timeout)

    def fuse_umount(self, mountpoint: str | os.PathLike) -> None:
        fuse_umount(Path(mountpoint), state_dir=self.state_dir)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def wait_connect(cluster: Cluster, timeout: float) -> None:
    """Retry rados() until the mons answer (used while a cluster comes up)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            cluster.rados()
            return
        except XcbError:
            if time.monotonic() > deadline:
                raise


# ---- command line ------------------------------------------------------------------------
def cluster_from_args(args, *, connect: bool = True) -> Cluster:
    """The Cluster the command line names: --ceph-conf, else an explicit --state-dir, else
    CEPH_CONF, else -c in CEPH_ARGS, else the default state dir. --ceph-id/--keyring (or
    --id/--keyring in CEPH_ARGS) pick the client. ``connect`` checks the cluster answers."""
    env_args = parse_ceph_args(os.environ.get("CEPH_ARGS"))
    explicit_state = getattr(args, "state_dir", None)
    conf = getattr(args, "ceph_conf", None)
    if not conf and not explicit_state:
        conf = os.environ.get("CEPH_CONF") or env_args.get("conf")
    ceph_id = getattr(args, "ceph_id", None) or env_args.get("id")
    keyring = getattr(args, "keyring", None) or env_args.get("keyring")
    fs = getattr(args, "fs", None)
    gw = {"gateway_id": getattr(args, "gateway_id", None),
          "gateway_keyring": getattr(args, "gateway_keyring", None)}
    keys.sweep()  # key copies an earlier xcbench left when it was killed
    if conf:
        cluster = Cluster.from_conf(conf, ceph_id, keyring, fs_name=fs, **gw)
    else:
        state = default_state_dir(explicit_state)
        if not (state / CLUSTER_JSON).exists():
            raise XcbError(f"{state}: no embedded cluster here (run `xcbench cluster up"
                           f"{' --state-dir ' + str(state) if explicit_state else ''}`,"
                           " or give --ceph-conf PATH)")
        cluster = Cluster.from_conf(state / "ceph.conf", ceph_id, keyring, fs_name=fs, **gw)
    if connect:
        cluster.rados()
        cluster.discover_fs()
    return cluster
