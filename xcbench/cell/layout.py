"""A Ceph file layout: stripe_unit, stripe_count, object_size (bytes), Ceph's rules for them, its
two spellings (the CephFS ``ceph.dir.layout`` xattr, the XrdCeph striper argument) and which RADOS
objects a file written with it becomes.

The one layout class: a CephFS dir layout and the XrdCeph/libradosstriper striper
(``nb_stripes`` = stripe_count) are the same three numbers with the same rules.

Both CephFS and libradosstriper map file bytes to objects with Ceph's ``Striper::file_to_extents``
(modified RAID 0): the file is cut into stripe units; consecutive units go round-robin over
``stripe_count`` objects; once each object of that set holds ``object_size`` bytes the next
object set starts. Object names:
  - libradosstriper: ``<name>.%016x`` and the first object always exists (it carries the
    ``striper.layout.*`` / ``striper.size`` xattrs and the lock), even for an empty file;
  - CephFS: ``<inode hex>.%08x`` in the file's layout pool (plus, when that pool is not the
    file system's default data pool, an empty ``.00000000`` "backtrace" object in the default one).
Objects that would hold no data are never created (sparse objects). The formulas assume the
file was written sequentially from offset 0, as a transfer does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from xcbench.errors import XcbError
from xcbench.figures.units import format_size, layout_label

MIN_STRIPE_UNIT = 64 << 10  # CEPH_MIN_STRIPE_UNIT
DEFAULT_MAX_OBJECT_SIZE = 128 << 20  # osd_max_object_size's default
FIELDS = ("stripe_unit", "stripe_count", "object_size")


@dataclass(frozen=True)
class Layout:
    """Bytes. Fields may be added only with care: a cell's id is a hash of them."""
    stripe_unit: int
    stripe_count: int
    object_size: int

    @classmethod
    def of(cls, layout: Any) -> Layout:
        """From a Layout, a mapping or anything with the three fields."""
        if isinstance(layout, cls):
            return layout
        if isinstance(layout, dict):
            return cls(*(int(layout[k]) for k in FIELDS))
        return cls(*(int(getattr(layout, k)) for k in FIELDS))

    def problems(self, max_object_size: int | None = None) -> list[tuple[str, str]]:
        """[(field, why)] for every rule Ceph enforces: EINVAL from setxattr / libradosstriper,
        and EFBIG above the cluster's osd_max_object_size, which setxattr accepts but writes then
        hit. object_size is only compared with a stripe_unit that is itself valid."""
        su, sc, os_ = self.stripe_unit, self.stripe_count, self.object_size
        out = []
        su_ok = su > 0 and su % MIN_STRIPE_UNIT == 0
        if not su_ok:
            out.append(("stripe_unit", f"{format_size(su)} is not a multiple of 64 KiB" if su > 0
                        else f"{su} is not a positive multiple of 64 KiB"))
        if sc < 1:
            out.append(("stripe_count", f"{sc} must be at least 1"))
        if os_ <= 0 or (su_ok and os_ % su):
            out.append(("object_size", f"{format_size(os_)} is not a multiple of stripe_unit "
                                       f"{format_size(su)}"))
        elif max_object_size is not None and os_ > max_object_size:
            out.append(("object_size", f"{format_size(os_)} exceeds the cluster's osd_max_object_size "
                                       f"{format_size(max_object_size)} (writes past it fail with EFBIG)"))
        return out

    def check(self, max_object_size: int | None = None, where: str = "layout") -> Layout:
        """Raise the first problem as one line ``<where>: <field>: <why>``."""
        for field, why in self.problems(max_object_size):
            raise XcbError(f"{where}: {field}: {why}")
        return self

    @property
    def label(self) -> str:
        """'su=4M sc=1 os=4M': how cell labels, tables and reports name a layout."""
        return layout_label(self.stripe_unit, self.stripe_count, self.object_size)

    @property
    def set_size(self) -> int:
        """Bytes in one full object set."""
        return self.object_size * self.stripe_count

    def xattr(self, pool: str | int) -> str:
        """The whole ``ceph.dir.layout`` value. Give the pool by id: the MDS of Ceph 16.2 parses
        the whole-layout string with a grammar that rejects '-' in values (EINVAL for
        "pool=xcb-rep1"; ceph/ceph#35063 widened it later), while ceph.dir.layout.pool alone
        takes the name. Setting all fields at once avoids ordering problems between them."""
        return (f"stripe_unit={self.stripe_unit} stripe_count={self.stripe_count} "
                f"object_size={self.object_size} pool={pool}")

    def striper_params(self, user: str, pool: str) -> str:
        """XrdCeph's ``ofs.osslib libXrdCeph.so`` argument: ``user@pool,nbStripes,stripeUnit,objectSize``."""
        return f"{user}@{pool},{self.stripe_count},{self.stripe_unit},{self.object_size}"


def parse_xattr(text: str | bytes) -> dict[str, Any]:
    """'stripe_unit=4194304 stripe_count=1 object_size=4194304 pool=p' -> dict (ints where numeric)."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    out: dict[str, Any] = {}
    for word in text.strip("\0 \n").split():
        key, _, value = word.partition("=")
        out[key] = int(value) if value.isdigit() else value
    return out


# ---- where the bytes go -----------------------------------------------------------------------
def object_sizes(size: int, s: Layout) -> dict[int, int]:
    """{object number: bytes} for a file of ``size`` bytes written from offset 0.

    Only objects that receive data are listed (an empty file -> {}).
    """
    if size < 0:
        raise ValueError(f"negative file size {size}")
    su, sc = s.stripe_unit, s.stripe_count
    full_sets, rest = divmod(size, s.set_size)
    out = {n: s.object_size for n in range(full_sets * sc)}
    # The last, partial object set: unit b of it lands in object b % sc, at row b // sc.
    full_units, tail = divmod(rest, su)
    base = full_sets * sc
    for j in range(min(full_units, sc)):
        rows = full_units // sc + (1 if j < full_units % sc else 0)
        out[base + j] = rows * su
    if tail:
        j, row = full_units % sc, full_units // sc
        out[base + j] = row * su + tail
    return out


def object_count(size: int, s: Layout) -> int:
    """How many data objects ``size`` bytes occupy (libradosstriper's own count for removal)."""
    full_sets, rest = divmod(size, s.set_size)
    return full_sets * s.stripe_count + min(-(-rest // s.stripe_unit), s.stripe_count)


def striper_objects(name: str, size: int, s: Layout) -> dict[str, int]:
    """{RADOS object name: bytes} libradosstriper (XrdCeph) writes for file ``name``.

    The first object exists even for an empty file (it holds the striper metadata).
    """
    sizes = object_sizes(size, s) or {0: 0}
    return {striper_oid(name, n): b for n, b in sorted(sizes.items())}


def striper_oid(name: str, objectno: int) -> str:
    return f"{name}.{objectno:016x}"


def cephfs_objects(ino: int, size: int, s: Layout) -> dict[str, int]:
    """{RADOS object name: bytes} CephFS writes for inode ``ino`` in the file's layout pool."""
    return {cephfs_oid(ino, n): b for n, b in sorted(object_sizes(size, s).items())}


def cephfs_oid(ino: int, objectno: int) -> str:
    return f"{ino:x}.{objectno:08x}"


# the layout as Ceph applied it (a cell's fingerprint)
LAYOUT_XATTRS = ("stripe_unit", "stripe_count", "object_size", "pool", "pool_namespace")


def layout_xattrs(path: str | os.PathLike) -> dict[str, Any] | None:
    """The CephFS layout of a dir (or file) as Ceph applied it, read back from its xattrs."""
    out: dict[str, Any] = {}
    for kind in ("dir", "file"):
        for field in LAYOUT_XATTRS:
            try:
                raw = os.getxattr(path, f"ceph.{kind}.layout.{field}").decode().strip("\x00 ")
            except OSError:
                continue
            out[field] = int(raw) if raw.isdigit() else raw
        if out:
            out["xattr"] = f"ceph.{kind}.layout"
            return out
    return None
