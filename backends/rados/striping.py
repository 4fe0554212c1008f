"""Ceph striping arithmetic: which RADOS objects a file of a given size becomes, and how big.

Both CephFS and libradosstriper (what XrdCeph writes through) map file bytes to objects with
Ceph's ``Striper::file_to_extents`` (modified RAID 0): the file is cut into stripe units;
consecutive units go round-robin over ``stripe_count`` objects; once each object of that set
holds ``object_size`` bytes the next object set starts. Object names:
  - libradosstriper: ``<name>.%016x`` and the first object always exists (it carries the
    ``striper.layout.*`` / ``striper.size`` xattrs and the lock), even for an empty file;
  - CephFS: ``<inode hex>.%08x`` in the file's layout pool (plus, when that pool is not the
    file system's default data pool, an empty ``.00000000`` "backtrace" object in the default one).
Objects that would hold no data are never created (sparse objects). The formulas assume the
file was written sequentially from offset 0, as a transfer does.
"""

from __future__ import annotations

from dataclasses import dataclass

from xcbench.errors import XcbError

MIN_STRIPE_UNIT = 64 << 10  # CEPH_MIN_STRIPE_UNIT


@dataclass(frozen=True)
class Striping:
    stripe_unit: int
    stripe_count: int
    object_size: int

    @classmethod
    def of(cls, layout) -> Striping:
        """From an xcbench.cell.Layout (or anything with the three fields)."""
        return cls(int(layout.stripe_unit), int(layout.stripe_count), int(layout.object_size))

    def check(self, max_object_size: int | None = None, where: str = "layout") -> None:
        """Ceph's own rules (EINVAL from setxattr / libradosstriper), plus EFBIG above the
        cluster's osd_max_object_size, which setxattr accepts but writes then hit."""
        su, sc, os_ = self.stripe_unit, self.stripe_count, self.object_size
        if su <= 0 or su % MIN_STRIPE_UNIT:
            raise XcbError(f"{where}: stripe_unit: {su} is not a positive multiple of 64 KiB")
        if sc < 1:
            raise XcbError(f"{where}: stripe_count: {sc} must be at least 1")
        if os_ <= 0 or os_ % su:
            raise XcbError(f"{where}: object_size: {os_} is not a multiple of stripe_unit {su}")
        if max_object_size is not None and os_ > max_object_size:
            raise XcbError(f"{where}: object_size: {os_} is above the cluster's osd_max_object_size "
                           f"{max_object_size} (writes past it fail with EFBIG)")

    @property
    def set_size(self) -> int:
        """Bytes in one full object set."""
        return self.object_size * self.stripe_count


def object_sizes(size: int, s: Striping) -> dict[int, int]:
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


def object_count(size: int, s: Striping) -> int:
    """How many data objects ``size`` bytes occupy (libradosstriper's own count for removal)."""
    full_sets, rest = divmod(size, s.set_size)
    return full_sets * s.stripe_count + min(-(-rest // s.stripe_unit), s.stripe_count)


def striper_objects(name: str, size: int, s: Striping) -> dict[str, int]:
    """{RADOS object name: bytes} libradosstriper (XrdCeph) writes for file ``name``.

    The first object exists even for an empty file (it holds the striper metadata).
    """
    sizes = object_sizes(size, s) or {0: 0}
    return {striper_oid(name, n): b for n, b in sorted(sizes.items())}


def striper_oid(name: str, objectno: int) -> str:
    return f"{name}.{objectno:016x}"


def cephfs_objects(ino: int, size: int, s: Striping) -> dict[str, int]:
    """{RADOS object name: bytes} CephFS writes for inode ``ino`` in the file's layout pool."""
    return {cephfs_oid(ino, n): b for n, b in sorted(object_sizes(size, s).items())}


def cephfs_oid(ino: int, objectno: int) -> str:
    return f"{ino:x}.{objectno:08x}"
