"""What XrdCeph leaves in a pool: striped objects, their striper metadata and XrdCks checksums.

libradosstriper keeps a file's metadata as xattrs of its first object (``<name>.%016x`` with
number 0): ``striper.layout.{stripe_unit,stripe_count,object_size}`` and ``striper.size``, as
decimal strings. With ``+cksio`` on ``ofs.osslib`` (and ``ofs.xattrlib libXrdCephXattr.so``)
xrootd stores a computed checksum there too, as an ``XrdCks.<algorithm>`` xattr holding an
XrdCksData record: name[16], fmTime (int64, network order), csTime (int32, network order),
2 reserved fields, value length (1 byte), value[64].
"""

from __future__ import annotations

import errno
import os
import struct
import zlib
from pathlib import Path
from typing import TypedDict

import rados

STRIPER_KEYS = ("striper.layout.stripe_unit", "striper.layout.stripe_count",
                "striper.layout.object_size", "striper.size")
_CKS = struct.Struct(">16sqihbb64s")  # XrdCksData, 96 bytes


def stat(io: rados.Ioctx, oid: str) -> int | None:
    """Size of an object, None if it does not exist."""
    try:
        size, _ = io.stat(oid)
        return int(size)
    except rados.ObjectNotFound:
        return None


def xattrs(io: rados.Ioctx, oid: str) -> dict[str, bytes]:
    try:
        return {k: bytes(v) for k, v in io.get_xattrs(oid)}
    except rados.ObjectNotFound:
        return {}


def striper_meta(attrs: dict[str, bytes]) -> dict[str, int]:
    """The striper.* xattrs as ints (only those present)."""
    return {k: int(attrs[k].rstrip(b"\0").decode()) for k in STRIPER_KEYS if k in attrs}


class CksRecord(TypedDict):
    name: str  # algorithm, e.g. "adler32"
    value: str  # hex
    fm_time: int
    cs_time: int


def decode_cks(value: bytes) -> CksRecord:
    """An XrdCks.<alg> xattr -> {"name", "value" (hex), "fm_time", "cs_time"}."""
    if len(value) < _CKS.size:
        raise ValueError(f"XrdCks record of {len(value)} bytes, expected {_CKS.size}")
    name, fm_time, cs_time, _r1, _r2, length, raw = _CKS.unpack(value[:_CKS.size])
    return {"name": name.rstrip(b"\0").decode(errors="replace"), "value": raw[:length].hex(),
            "fm_time": fm_time, "cs_time": cs_time}


def checksums(attrs: dict[str, bytes]) -> dict[str, str]:
    """{algorithm: hex value} of every XrdCks xattr, whatever prefix the xattr plugin added."""
    out: dict[str, str] = {}
    for key, value in attrs.items():
        if "XrdCks." in key:
            try:
                rec = decode_cks(value)
            except ValueError:
                continue
            out[rec["name"] or key.rsplit(".", 1)[-1]] = rec["value"]
    return out


def list_prefix(io: rados.Ioctx, prefix: str) -> list[str]:
    """Names of the objects (default namespace) starting with ``prefix``: a full listing of the
    pool, as RADOS has no name index; fine for xcbench's pools, slow on a pool of millions."""
    return sorted(o.key for o in io.list_objects() if o.key.startswith(prefix))


def remove_prefix(io: rados.Ioctx, prefix: str, window: int = 128) -> list[str]:
    """Remove every object starting with ``prefix`` (the striper metadata and lock live on the
    first objects, so they go with them), ``window`` removals in flight at a time: one by one
    managed ~150 objects/s here. Returns what was removed."""
    removed: list[str] = []
    inflight: list[tuple[str, rados.Completion]] = []

    def reap(keep: int) -> None:
        while len(inflight) > keep:
            oid, comp = inflight.pop(0)
            comp.wait_for_complete()
            rc = comp.get_return_value()
            if rc == 0:
                removed.append(oid)
            elif rc != -errno.ENOENT:
                raise OSError(-rc, f"removing {oid}: {os.strerror(-rc)}")

    for oid in list_prefix(io, prefix):
        inflight.append((oid, io.aio_remove(oid)))
        reap(window)
    reap(0)
    return removed


def adler32_file(path: str | Path) -> str:
    value = 1
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            value = zlib.adler32(chunk, value)
    return f"{value:08x}"
