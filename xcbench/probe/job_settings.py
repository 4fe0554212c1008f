"""A cell's probe settings: the matrix's ``probe`` (runtime, ramp, iodepth, numjobs, size, bs,
ss, ss_dur, ss_ramp, patterns) with DEFAULTS filled in and checked, the jobs they make and their
block sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xcbench.backends.base import backend_class
from xcbench.errors import XcbError
from xcbench.figures.units import parse_size

PATTERNS = ("randwrite", "write", "read")
DEFAULTS = {"runtime": 10, "ramp": 0, "iodepth": 16, "numjobs": 1, "direct": True}
MAX_BS = 64 << 20  # below Ceph's osd_max_write_size (90 MiB): larger object-sized writes fail
DEFAULT_BS = 4 << 20  # bandwidth block size when the cell has no layout (tmpfs)
ALIGN = 4096  # O_DIRECT block alignment
DEFAULT_ACCESS = 64 << 10  # a random/readv access without a size reads 64 KiB pieces (campaign.access)


def settings(cell, patterns: Sequence[str] | None = None) -> dict[str, Any]:
    """The cell's probe settings with defaults filled in and checked."""
    p = {**DEFAULTS, **dict(cell.probe or {})}
    where = f"cell {cell.id}: probe"
    pats = list(patterns if patterns is not None else p.get("patterns") or PATTERNS)
    if isinstance(pats, str):
        pats = [x.strip() for x in pats.split(",")]
    for x in pats:
        if x not in PATTERNS:
            raise XcbError(f"{where}: patterns: {x!r} is not one of {', '.join(PATTERNS)}")
    if not pats:
        raise XcbError(f"{where}: patterns: empty")
    direction = getattr(cell, "direction", None) or "write"
    if direction in ("read", "mixed") and "read" not in pats:
        pats.append("read")  # the read ceiling of a reading cell
    p["patterns"] = [x for x in PATTERNS if x in pats]  # fixed order: writes before reads
    for key in ("runtime", "iodepth", "numjobs"):
        if not isinstance(p[key], int) or isinstance(p[key], bool) or p[key] < 1:
            raise XcbError(f"{where}: {key}: {p[key]!r} is not a positive integer")
    p["size"] = int(p.get("size") or cell.file_size)
    lay = cell.layout
    p["object_size"] = lay.object_size if lay else p["size"]
    if p.get("bs"):
        p["bw_bs"] = int(p["bs"])
    else:  # object-sized, within what one OSD op and one file (or object) can take
        room = backend_class(cell.backend).probe_room(p["object_size"], p["size"])
        p["bw_bs"] = min(lay.object_size if lay else DEFAULT_BS, MAX_BS, room)
    p["rr_bs"] = _randread_bs(cell, direction, where, p)
    p["jobs"] = p["patterns"] + (["randread"] if p["rr_bs"] else [])
    if p.get("ss"):
        ramp = p.get("ss_ramp", 0)
        p["ss_spec"] = {"ss": p["ss"], "ss_ramp": ramp,
                        "ss_dur": p.get("ss_dur", max(1, p["runtime"] - ramp)
                                        if isinstance(ramp, int) else p["runtime"])}
    else:
        p["ss_spec"] = None
    return p


def _randread_bs(cell, direction: str, where: str, p: dict[str, Any]) -> int | None:
    """Block size of the random-read job: the campaign's access size (random or readv reads),
    else None (no random-read job)."""
    access = (cell.campaign or {}).get("access") if direction in ("read", "mixed") else None
    if isinstance(access, str):
        access = {"pattern": access}
    if not isinstance(access, dict) or access.get("pattern") not in ("random", "readv"):
        return None
    size = access.get("size")
    try:
        bs = int(parse_size(size)) if size is not None else DEFAULT_ACCESS
    except (TypeError, ValueError) as e:
        raise XcbError(f"{where}: campaign.access.size: {access.get('size')!r}: {e}") from None
    if bs < 1:
        raise XcbError(f"{where}: campaign.access.size: {bs} is not a positive size")
    if p.get("direct", True):
        bs = -(-bs // ALIGN) * ALIGN
    return min(bs, p["object_size"], p["size"])
