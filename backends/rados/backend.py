"""The rados backend: files go through an XrdCeph gateway into RADOS via libradosstriper.

prepare: makes sure the pool exists and returns the XrdCeph parameters a gateway needs
(``ofs.osslib +cksio libXrdCeph.so <ceph_user>@<pool>,<nb_stripes>,<stripe_unit>,<object_size>``)
plus a per-cell name prefix: every file of the cell must be written under it
(``Target.info["name_prefix"]``), so that cleanup removes exactly the cell's objects. The name
prefix starts with XrdCeph's own selector of those same parameters
(``/<ceph_user>@<pool>,<nb>,<su>,<os>:``), followed by the cell's object prefix
(``Target.info["object_prefix"]``, ``/xcb-rados/<cell>-<random>/``): XrdCeph reads the user,
pool and layout of a name from the part before its first colon, so a name the gateway admits
(its authdb grants the name prefix only: xcbench.gateway.authz) can pick no other pool, user or
layout, in the name or in the query; what follows is the object's name, whatever it holds.
verify: writes a file through the cell's gateway (the session starts it: XrdCeph is the only way
in that is the gateway's own) and checks its RADOS objects (count and sizes, as the
striping arithmetic says), the striper metadata and the adler32 that +cksio stored.
cleanup: removes every object under the cell's prefix.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from xcbench.backends.base import Backend, Target
from xcbench.backends.rados import objects
from xcbench.cell.layout import Layout, striper_objects, striper_oid
from xcbench.errors import XcbError
from xcbench.figures.units import format_size
from xcbench.store.findings import finding, object_size_findings
from xcbench.system import proc

if TYPE_CHECKING:
    from xcbench.ceph.cluster import Cluster

PREFIX_ROOT = "xcb-rados"
VERIFY_MAX = 48 << 20  # bytes verify uploads at most
OSSLIB = "libXrdCeph.so"
XATTRLIB = "libXrdCephXattr.so"
OSS_KEYS = ("ceph_user", "pool", "nb_stripes", "stripe_unit", "object_size")
# XrdCeph defaults (measured 24x faster than xrootd's: async 64 KiB pieces are slow on RADOS)
GATEWAY_DEFAULTS = {"async": False, "buffers_maxbsz": 16 << 20, "cksio": True}
XRDCEPH_MIN_MAXBSZ = 16 << 20
# XRootD 5.5 clients read with pgread by default and XrdCeph 5.5 crashes on it
CLIENT_ENV = {"XRD_CPUSEPGWRTRD": "0"}


def object_name(path: str) -> str:
    """The striped object XrdCeph makes for an xrootd path: what follows the selector
    (``/<user>@<pool>,...:``, up to the first colon), leading slash included; a path without
    one, as given."""
    return path.split(":", 1)[1] if ":" in path else path


def selector(ceph_user: str, pool: str, s: Layout) -> str:
    """XrdCeph's selector of exactly the gateway's own parameters (``/user@pool,nb,su,os:``)."""
    return f"/{s.striper_params(ceph_user, pool)}:"


def verify_size(s: Layout) -> int:
    """Spans every object of the first object set and one stripe unit beyond (so the count
    and the round-robin order are both visible), capped at VERIFY_MAX."""
    return min(s.stripe_unit * s.stripe_count + s.stripe_unit // 2 + 1, VERIFY_MAX)


class RadosBackend(Backend):
    name = "rados"
    needs_cluster = True
    gateway_writes_to = "pool"  # XrdCeph writes objects
    verify_needs_gateway = True
    remote_gateway = "client"  # XrdCeph there: the agent gets the conf and the key
    target_defaults = {
        "osslib": OSSLIB, "gateway_env": {}, "ceph_conf_env": True, "client_env": CLIENT_ENV,
        "shared_store": True, "gateway_defaults": GATEWAY_DEFAULTS, "fio_engine": "rados"}

    def prepare(self, cell) -> Target:
        where = f"cell {cell.id}"
        if cell.layout is None or cell.pool is None:
            raise XcbError(f"{where}: backend rados needs a layout (nb_stripes, stripe_unit, "
                           "object_size) and a pool")
        s = Layout.of(cell.layout)
        cluster = self._ceph()
        s.check(cluster.osd_max_object_size(), where=where)
        pool = cluster.ensure_pool(cell.pool)
        objects_at = f"/{PREFIX_ROOT}/{cell.id}-{secrets.token_hex(3)}/"
        oss = {"ceph_user": cluster.gateway_id, "pool": pool, "nb_stripes": s.stripe_count,
               "stripe_unit": s.stripe_unit, "object_size": s.object_size}
        return Target(cell_id=cell.id, backend=self.name, path=None, pool=pool, layout=cell.layout,
                      oss=oss, created=[f"rados:{pool}/{objects_at}*"],
                      info={"name_prefix": selector(cluster.gateway_id, pool, s) + objects_at,
                            "object_prefix": objects_at,
                            "osslib_params": s.striper_params(cluster.gateway_id, pool)})

    def _ceph(self) -> Cluster:
        # needs_cluster: Backend.__init__ refuses to make a rados backend without a cluster
        assert self.cluster is not None
        return self.cluster

    def _ioctx(self, target: Target) -> Any:
        """A rados.Ioctx context on the target's pool (prepare gives every rados target one)."""
        assert target.pool is not None
        return self._ceph().ioctx(target.pool)

    def verify(self, target: Target, gateway=None) -> dict[str, Any]:
        """Upload a file through ``gateway``, then inspect its objects. Returns the evidence;
        XcbError naming the field on a mismatch."""
        if gateway is None:
            raise XcbError(f"cell {target.cell_id}: verify: a rados target is checked through its "
                           "gateway (start one: xcbench.run.session.CellSession)")
        return self._verify(target, gateway)

    def _verify(self, target: Target, gw) -> dict[str, Any]:
        where = f"cell {target.cell_id}"
        s = Layout.of(target.layout)
        size = verify_size(s)
        local = self.workdir / f"verify-{target.cell_id}.bin"
        local.parent.mkdir(parents=True, exist_ok=True)
        with open(local, "wb") as fh:
            left = size
            while left:
                left -= fh.write(os.urandom(min(left, 1 << 22)))
        want_cks = objects.adler32_file(local)
        path = target.info["name_prefix"] + f"verify-{secrets.token_hex(3)}"
        env = dict(getattr(gw, "client_env", {}) or {})
        try:
            proc.run(["xrdcp", "-f", "-s", local, gw.url(path)], env=env, timeout=120)
            reply = proc.run(["xrdfs", gw.root_url, "query", "checksum", path], env=env, timeout=60)
            server_cks = reply.stdout.replace("\0", " ").split()[-1] if reply.stdout.split() else ""
            evidence = self._inspect(target, object_name(path), size, s, where)
        finally:
            local.unlink(missing_ok=True)
            proc.run(["xrdfs", gw.root_url, "rm", path], env=env, timeout=60, check=False)
        if server_cks != want_cks:
            raise XcbError(f"{where}: checksum: the gateway says adler32 {server_cks!r}, "
                           f"the file has {want_cks}")
        stored = evidence["checksums"].get("adler32")
        if stored is None:
            raise XcbError(f"{where}: checksum: no XrdCks.adler32 xattr on the first object "
                           "(is +cksio set on ofs.osslib, with ofs.xattrlib libXrdCephXattr.so?)")
        if stored != want_cks:
            raise XcbError(f"{where}: checksum: the stored adler32 is {stored}, the file has {want_cks}")
        with self._ioctx(target) as io:
            kept = [oid for oid in evidence["objects"] if objects.stat(io, oid) is not None]
        if kept:
            raise XcbError(f"{where}: cleanup: `xrdfs rm` left {len(kept)} objects ({kept[0]}, ...)")
        evidence.update({"adler32": want_cks, "gateway": gw.root_url, "path": path})
        return evidence

    def _inspect(self, target: Target, name: str, size: int, s: Layout, where: str) -> dict[str, Any]:
        expected = striper_objects(name, size, s)
        with self._ioctx(target) as io:
            found = {oid: objects.stat(io, oid) for oid in expected}
            extra = striper_oid(name, len(expected))
            extra_size = objects.stat(io, extra)
            attrs = objects.xattrs(io, striper_oid(name, 0))
        first = striper_oid(name, 0)
        if found[first] is None:
            raise XcbError(f"{where}: pool: object {first} is not in pool {target.pool}")
        # The first object's striper.* xattrs say which layout was used: name that field.
        meta = objects.striper_meta(attrs)
        want_meta = {"striper.layout.stripe_unit": s.stripe_unit,
                     "striper.layout.stripe_count": s.stripe_count,
                     "striper.layout.object_size": s.object_size, "striper.size": size}
        for key, value in want_meta.items():
            if meta.get(key) != value:
                field = {"striper.layout.stripe_count": "nb_stripes"}.get(key, key.rsplit(".", 1)[-1])
                raise XcbError(f"{where}: {field}: {key} on the first object is {meta.get(key)!r}, "
                               f"expected {value}")
        # Then the objects themselves against the arithmetic.
        missing = [oid for oid, got in found.items() if got is None]
        if missing:
            raise XcbError(f"{where}: nb_stripes: object {missing[0]} is missing "
                           f"({len(found) - len(missing)} of {len(expected)} objects there)")
        if extra_size is not None:
            raise XcbError(f"{where}: nb_stripes: object {extra} exists, expected only "
                           f"{len(expected)} objects for {size} bytes")
        for oid, want in expected.items():
            if found[oid] != want:
                raise XcbError(f"{where}: stripe_unit: object {oid} holds {found[oid]} bytes, the "
                               f"striping arithmetic says {want}")
        return {"cell_id": target.cell_id, "backend": self.name, "pool": target.pool,
                "object": name, "bytes": size, "objects": found, "striper": meta,
                "checksums": objects.checksums(attrs), "xattrs": sorted(attrs)}

    def cleanup(self, target: Target) -> None:
        prefix = target.info.get("object_prefix", "")
        if not prefix.startswith(f"/{PREFIX_ROOT}/") or len(prefix) <= len(PREFIX_ROOT) + 3:
            raise XcbError(f"cell {target.cell_id}: cleanup: {prefix!r} is not an xcbench object prefix")
        with self._ioctx(target) as io:
            target.info["removed"] = len(objects.remove_prefix(io, prefix))

    # ---- what gateways, probes and findings need to know -------------------------------------
    @classmethod
    def gateway_oss(cls, target: Target, tunables: Mapping[str, Any]) -> dict[str, Any] | None:
        """``ofs.osslib [+cksio] libXrdCeph.so <ceph_user>@<pool>,<nb_stripes>,<stripe_unit>,
        <object_size>``, with XrdCeph's xattr library (where +cksio stores the adler32)."""
        missing = [k for k in OSS_KEYS if target.oss.get(k) in (None, "")]
        if missing:
            raise XcbError(f"gateway: rados target of cell {target.cell_id}: oss lacks {', '.join(missing)}")
        o = target.oss
        return {"lib": target.osslib or OSSLIB, "xattrlib": XATTRLIB,
                "cksio": bool(tunables.get("cksio", True)),
                "params": f"{o['ceph_user']}@{o['pool']},{o['nb_stripes']},{o['stripe_unit']},"
                          f"{o['object_size']}"}

    @classmethod
    def probe_room(cls, object_size: int, file_size: int) -> int:
        return object_size  # one object: fio's rados engine writes objects, not files

    @classmethod
    def findings(cls, cell_id: str, tunables: Mapping[str, Any],
                 facts: Mapping[str, Any]) -> list[dict]:
        t = dict(tunables or {})
        mode, client = facts.get("mode"), facts.get("client")
        rows: list[dict] = []
        if t.get("async", True) is not False:
            rows.append(finding(
                cell_id, "XrdCeph with xrootd.async on",
                "XrdCeph 5.5 then writes in 64 KiB asynchronous pieces: a 256 MiB upload took 31 s, "
                "against 1.3 s with async off and 16 MiB buffers",
                "gateway: {async: false, buffers_maxbsz: 16M}"))
        maxbsz = t.get("buffers_maxbsz")
        if t.get("async") is False and maxbsz is not None and maxbsz < XRDCEPH_MIN_MAXBSZ:
            rows.append(finding(
                cell_id, f"XrdCeph with xrd.buffers maxbsz {format_size(maxbsz)}",
                "with async off every client write becomes one RADOS write of at most maxbsz; "
                "small buffers multiply the round trips to the OSDs",
                "gateway: {buffers_maxbsz: 16M}"))
        if not t.get("cksio", True):
            rows.append(finding(
                cell_id, "XrdCeph without +cksio",
                "without +cksio on ofs.osslib XrdCeph cannot compute or store the adler32 "
                "checksum (a RADOS xattr): checksum queries fail and transfers cannot be verified",
                "gateway: {cksio: true} (ofs.osslib +cksio libXrdCeph.so ...)", "error"))
        rows.append(finding(
            cell_id, "pgread/pgwrite clients against XrdCeph 5.5",
            "XRootD 5.5 clients read with pgread by default and XrdCeph 5.5 crashes on it "
            "(*** stack smashing detected ***; the client gets a corrupt partial file)",
            "clients use the gateway's client_env (XRD_CPUSEPGWRTRD=0, set before importing "
            "XRootD); xcbench sets it for its own clients and the gateway's TPC xrdcp", "info"))
        if mode == "tpc-root":
            rows.append(finding(
                cell_id, "root TPC into XrdCeph",
                "the destination runs `xrdcp --server` into the file's local path; an XrdCeph "
                "gateway has none, so every pull fails with 'Local error: permission denied' "
                "(measured with XRootD 5.5.3); HTTP-TPC into the same gateway works",
                "use mode tpc-http for XrdCeph destinations", "error"))
        if client == "gfal2" and mode in (None, "push"):
            rows.append(finding(
                cell_id, "gfal2 over root:// into XrdCeph",
                "gfal2's xrootd plugin chmods the new file and XrdCeph refuses chmod "
                "([3016] Unable to fchmod ...; is a directory): every transfer fails",
                "use http:// (davs:// with TLS) for gfal2 into XrdCeph, as RAL's Echo does",
                "error"))
        return rows + object_size_findings(cell_id, facts)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "ceph_user": self.cluster.gateway_id if self.cluster else None,
                "oss": "XrdCeph (libradosstriper)"}
