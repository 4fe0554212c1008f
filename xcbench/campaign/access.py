"""How a read campaign reads each file: ``access: {pattern, size, count}``.

``full`` reads the whole file (adler32 on the fly against the dataset's known checksum);
``random`` makes ``count`` reads of ``size`` bytes at random offsets; ``readv`` makes one vector
read of ``count`` chunks of ``size`` (XRootD's kXR_readv, what analysis jobs do through XRootD).
Random and vector reads are verified chunk by chunk against the bytes the dataset regenerates
for the same ranges. Offsets come from a seed (dataset seed, file, transfer number): a run is
repeatable and each cycle of a time-based level reads other ranges.
"""

from __future__ import annotations

import random
from typing import Any

from xcbench.cell import Cell
from xcbench.errors import XcbError
from xcbench.figures.units import parse_size

PATTERNS = ("full", "random", "readv")
ACCESS_KEYS = ("pattern", "size", "count")
DEFAULT_CHUNK = 64 << 10
DEFAULT_COUNT = 16
# XRootD's readv limits (XProtocol.hh: maxRvecsz 1024 elements, maxRvecln 2097136 bytes each)
READV_MAX_CHUNKS = 1024
READV_MAX_CHUNK = 2097136
MAX_READS = 1_000_000
READ_CLIENTS = ("xrootd", "gfal2", "http")


def parse_access(value: Any) -> dict[str, Any]:
    """{pattern, size, count} from a campaign's ``access`` (None: full reads); XcbError naming
    the field (``campaign: access.size: ...``)."""
    if value is None:
        return {"pattern": "full", "size": None, "count": None}
    if isinstance(value, str):
        value = {"pattern": value}
    if not isinstance(value, dict):
        raise XcbError(f"campaign: access: {value!r} is not a mapping of "
                       f"{', '.join(ACCESS_KEYS)}")
    for key in value:
        if key not in ACCESS_KEYS:
            raise XcbError(f"campaign: access.{key}: unknown key ({', '.join(ACCESS_KEYS)})")
    pattern = value.get("pattern", "full")
    if pattern not in PATTERNS:
        raise XcbError(f"campaign: access.pattern: {pattern!r} is not one of {', '.join(PATTERNS)}")
    if pattern == "full":
        for key in ("size", "count"):
            if value.get(key) is not None:
                raise XcbError(f"campaign: access.{key}: full reads read whole files "
                               "(size and count are for random and readv)")
        return {"pattern": "full", "size": None, "count": None}
    try:
        size = parse_size(value.get("size", DEFAULT_CHUNK))
    except (TypeError, ValueError) as e:
        raise XcbError(f"campaign: access.size: {e}") from None
    if size < 1:
        raise XcbError(f"campaign: access.size: {size} must be >= 1")
    count = value.get("count", DEFAULT_COUNT)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_READS:
        raise XcbError(f"campaign: access.count: {count!r} is not an integer from 1 to {MAX_READS}")
    if pattern == "readv":
        if size > READV_MAX_CHUNK:
            raise XcbError(f"campaign: access.size: {size} is above XRootD's readv chunk limit "
                           f"({READV_MAX_CHUNK} bytes)")
        if count > READV_MAX_CHUNKS:
            raise XcbError(f"campaign: access.count: {count} is above XRootD's readv limit "
                           f"({READV_MAX_CHUNKS} chunks per request)")
    return {"pattern": pattern, "size": size, "count": count}


def read_fraction(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise XcbError(f"campaign: read_fraction: {value!r} is not a number between 0 and 1 "
                       "(exclusive: a mixed campaign both reads and writes)")
    return float(value)


def ranges(access: dict[str, Any], file_size: int, seed: int, index: int,
           seq: int) -> list[tuple[int, int]]:
    """The (offset, length) reads of one attempt of a random/readv access (a file smaller than
    ``size`` is read whole, once per chunk)."""
    size = min(access["size"], file_size)
    rng = random.Random(f"xcbench-access:{seed}:{index}:{seq}")
    return [(rng.randrange(file_size - size + 1), size) for _ in range(access["count"])]


def direction_of(direction: str, fraction: float, seq: int) -> str:
    """read | write of transfer ``seq``: a mixed campaign interleaves them so that any prefix
    of the sequence holds ``fraction`` reads to within one transfer."""
    if direction != "mixed":
        return direction
    return "read" if int((seq + 1) * fraction) > int(seq * fraction) else "write"


def read_problems(cell: Cell) -> list[tuple[str, str]]:
    """[(field, why)] of a matrix cell whose direction or read settings cannot run, found
    when the matrix is loaded (before anything touches a cluster)."""
    c = cell.campaign or {}
    out: list[tuple[str, str]] = []
    pattern = "full"
    try:
        pattern = parse_access(c.get("access"))["pattern"]
    except XcbError:  # reported with the campaign's settings (check_campaign_settings)
        pass
    client = c.get("client", "xrootd")
    if cell.direction == "write":
        if client == "http":
            out.append(("campaign.client", "http is a read client (plain GET): write cells use "
                        "xrootd or gfal2"))
        return out
    if cell.mode != "push":
        out.append(("direction", f"{cell.direction} campaigns read from the cell's gateway "
                    f"(mode push), not with mode {cell.mode}"))
    if pattern != "full" and client != "xrootd":
        out.append(("campaign.access", f"{pattern} reads go through the XRootD client "
                    f"(File.read / File.vector_read), not {client}"))
    if client == "http" and cell.direction == "mixed":
        out.append(("campaign.client", "http reads only (plain GET): a mixed campaign writes "
                    "too; use xrootd or gfal2"))
    room = cell.tmpfs_size
    if room:  # a tmpfs target (the others have no size of their own)
        need = cell.file_size * cell.files * (1.6 if cell.size_dist == "lognormal" else 1.0)
        if cell.direction == "mixed":
            need += cell.file_size * max(cell.concurrency, default=1)
        if need > room:
            out.append(("files", f"the read dataset ({cell.files} files of ~{cell.file_size} "
                        f"bytes, kept for every level) does not fit the {room}-byte tmpfs"))
    return out
