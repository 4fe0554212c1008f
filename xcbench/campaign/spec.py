"""CampaignSpec: what a campaign transfers, how, and with which FTS semantics."""

from __future__ import annotations

import math
import uuid
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from xcbench.campaign.access import parse_access, read_fraction
from xcbench.errors import XcbError
from xcbench.figures.level_rule import MAX_SECONDS, LevelRule, parse_fraction, parse_seconds
from xcbench.figures.units import format_size, parse_size
from xcbench.system.scratch import memory_room
from xcbench.system.secrets import redact

MODES = ("push", "tpc-root", "tpc-http")
CLIENTS = ("xrootd", "gfal2", "http")  # http: plain GET, read campaigns only
DIRECTIONS = ("write", "read", "mixed")
CHECKSUM_MODES = ("none", "source", "target", "both")
OPTIMIZER_MODES = ("conservative", "normal", "aggressive")
SIZE_DISTS = ("fixed", "uniform", "lognormal")
DAY = 86400.0

# field: (type, minimum, maximum, minimum excluded). Every number is checked finite and in
# range when a spec is made: `retry_delay: nan` looped a campaign forever, `timeout: -1` failed
# every transfer after the gateway and the probes had run.
OPTIMIZER_LIMITS: dict[str, tuple[type, float, float, bool]] = {
    "min_active": (int, 1, 100_000, False), "max_active": (int, 0, 100_000, False),
    "range_configured": (bool, 0, 1, False),
    "interval": (float, 0, DAY, True), "steady_interval": (float, 0, DAY, True),
    "ema_alpha": (float, 0, 1, True), "increase_step": (int, 1, 10_000, False),
    "aggressive_increase_step": (int, 1, 10_000, False), "decrease_step": (int, 1, 10_000, False),
    "low_success_rate": (float, 0, 100, False), "base_success_rate": (float, 0, 100, False),
    "max_streams": (int, 1, 1024, False),
}
CAMPAIGN_LIMITS: dict[str, tuple[type, float, float, bool]] = {
    "files": (int, 1, 100_000_000, False), "file_size": (int, 1, 1 << 50, False),
    "size_spread": (float, 0, 10, False), "seed": (int, 0, 2**63 - 1, False),
    "concurrency": (int, 1, 100_000, False), "streams": (int, 1, 1024, False),
    "timeout": (float, 0, 30 * DAY, True), "timeout_per_mib": (float, 0, DAY, False),
    "retries": (int, 0, 1000, False), "retry_delay": (float, 0, DAY, False),
    "overwrite": (bool, 0, 1, False), "delete_after_verify": (bool, 0, 1, False),
    "repeat": (int, 0, 1_000_000, False), "chunk_size": (int, 1, 1 << 30, False),
    "connections": (int, 1, 4096, False),
}


# What a driver holds (benchmarks/bench_driver_memory.py): ~570 B of dataset state per file
# measured, counted as 1 KiB with its records; a transfer in flight: its thread (~16 KiB
# resident measured) and the client's buffers, counted as 1 MiB.
BYTES_PER_FILE = 1 << 10
BYTES_PER_TRANSFER = 1 << 20


def memory_problem(files: int, concurrency: int) -> tuple[str, str] | None:
    """(field, why) when ``files`` and ``concurrency`` would take the driver past the memory
    this host has free (less the reserve kept for the OS, gateways and Ceph); else None."""
    available, reserve = memory_room()
    room = max(available - reserve, 0)
    need_files, need_xfers = files * BYTES_PER_FILE, concurrency * BYTES_PER_TRANSFER
    if need_files + need_xfers <= room:
        return None
    fld = "files" if need_files >= need_xfers else "concurrency"
    return (fld, f"{files} files at concurrency {concurrency} need about "
                 f"{format_size(need_files + need_xfers)} of driver memory; this host has "
                 f"{format_size(room)} free beyond its reserve (give fewer files, or a lower "
                 f"concurrency)")


def _check(obj: Any, limits: dict[str, tuple[type, float, float, bool]], prefix: str) -> None:
    """Type, finiteness and range of every numeric/boolean field (XcbError naming the field)."""
    for name, (kind, lo, hi, lo_open) in limits.items():
        v = getattr(obj, name)
        if kind is bool:
            if not isinstance(v, bool):
                raise XcbError(f"{prefix}{name}: {v!r} is not true/false")
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                (kind is int and not isinstance(v, int) and not float(v).is_integer()):
            what = "an integer" if kind is int else "a number"
            raise XcbError(f"{prefix}{name}: {v!r} is not {what}")
        if isinstance(v, float) and not math.isfinite(v):
            raise XcbError(f"{prefix}{name}: {v} is not a finite number")
        if v < lo or (lo_open and v == lo) or v > hi:
            rng = f"{'>' if lo_open else '>='} {int(lo)} and <= {int(hi)}"
            shown = "a number this large" if isinstance(v, int) and v.bit_length() > 64 else f"{v:g}"
            raise XcbError(f"{prefix}{name}: {shown} is out of range (must be {rng})")
        setattr(obj, name, int(v) if kind is int else float(v))


LEVEL_KEYS = ("duration", "steady")  # checked together: the window must fit the level


def check_campaign_settings(settings: Any, *, unknown: bool = True) -> list[tuple[str, str]]:
    """Problems of a campaign mapping (a matrix's ``campaign:``, or keyword arguments of
    CampaignSpec) as (field, message) pairs, [] when a CampaignSpec can be made of it.
    ``unknown=False`` leaves unknown keys to the caller (the matrix reports those itself)."""
    if not isinstance(settings, dict):
        return [("campaign", f"{settings!r} is not a mapping")]
    names = set(CampaignSpec.field_names())
    problems = [(str(k), "unknown setting") for k in settings if k not in names] if unknown else []
    # one field at a time, so that every bad field is named (a spec stops at the first); the
    # level's duration and steady rule only together (a 2-s window fits a 6-s level, the
    # default 10-s one does not)
    for key, value in settings.items():
        if key not in names:
            continue
        kw = {k: settings[k] for k in LEVEL_KEYS if k in settings} if key in LEVEL_KEYS else {key: value}
        try:
            CampaignSpec(**kw)
        except XcbError as e:
            msg = str(e).removeprefix("campaign: ")
            fld, _, why = msg.partition(": ")
            if (fld, why or msg) not in problems:
                problems.append((fld, why or msg))
        except (TypeError, ValueError, OverflowError) as e:
            problems.append((str(key), str(e)))
    if not problems:
        try:
            CampaignSpec(**{k: v for k, v in settings.items() if k in names})
        except XcbError as e:
            fld, _, why = str(e).removeprefix("campaign: ").partition(": ")
            problems.append((fld, why))
        except (TypeError, ValueError, OverflowError) as e:
            problems.append(("campaign", str(e)))
    return problems


@dataclass
class OptimizerSpec:
    """FTS3 optimizer settings (defaults are FTS3's: ServerConfig + OptimizerConstants.h).

    ``interval`` is FTS's OptimizerInterval (60 s); a campaign on one machine lasts minutes, so
    xcbench runs usually shorten it; the success-rate/throughput windows shrink by the same
    factor (``interval / 60``) so the decisions see the same number of transfers per window.
    """
    min_active: int = 2          # DEFAULT_MIN_ACTIVE (non-LAN pair)
    max_active: int = 0          # 0 -> the campaign's concurrency (SE/link limit)
    range_configured: bool = False  # a link config sets min/max: start at max, not halfway
    mode: str = "normal"         # FTS OptimizerMode: conservative=1, normal=2, aggressive=3
    interval: float = 60.0
    steady_interval: float = 60.0
    ema_alpha: float = 0.1
    increase_step: int = 1
    aggressive_increase_step: int = 2
    decrease_step: int = 1
    low_success_rate: float = 97.0
    base_success_rate: float = 96.0
    max_streams: int = 10

    def __post_init__(self) -> None:
        _check(self, OPTIMIZER_LIMITS, "campaign: optimizer.")
        if self.mode not in OPTIMIZER_MODES:
            raise XcbError(f"campaign: optimizer.mode: {self.mode!r} is not one of "
                           f"{', '.join(OPTIMIZER_MODES)}")
        if self.max_active and self.max_active < self.min_active:
            raise XcbError(f"campaign: optimizer.max_active: need min_active ({self.min_active}) "
                           f"<= max_active ({self.max_active})")


@dataclass
class CampaignSpec:
    files: int = 16
    file_size: int = 64 << 20       # mean size for uniform/lognormal
    size_dist: str = "fixed"        # fixed | uniform | lognormal
    size_spread: float = 0.5        # uniform: ±fraction; lognormal: sigma
    seed: int = 0
    mode: str = "push"              # push | tpc-root | tpc-http
    concurrency: int = 4            # fixed limit, or the optimizer's max when it runs
    optimizer: OptimizerSpec | None = None
    client: str = "xrootd"          # xrootd | gfal2
    streams: int = 1                # per transfer (X-Number-Of-Streams, gfal2 nbstreams, ...)
    timeout: float = 600.0          # FTS: 600 s + timeout_per_mib per MiB
    timeout_per_mib: float = 2.0
    retries: int = 0
    retry_delay: float = 0.0
    checksum: str = "both"          # none | source | target | both (adler32)
    overwrite: bool = False
    delete_after_verify: bool = False
    repeat: int = 0
    chunk_size: int = 4 << 20       # client write size = dataset block size
    connections: int = 16           # XRootD client: TCP connections per gateway (by URL user)
    dest_prefix: str = "/xcb-"      # destination names: <prefix><campaign_id>.<file name>
    campaign_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # time-based levels: {min, max} (s or "20s"/"1m"), and the steady rule that may end a level
    # before max ({rule, window, points, tolerance}); None: the file-count mode
    duration: Any = None
    steady: dict[str, Any] | None = None
    # reads (xcbench.campaign.reads): the cell's direction, the read share of a mixed campaign,
    # and how each file is read ({pattern: full|random|readv, size, count}; None: full)
    direction: str = "write"
    read_fraction: float = 0.5
    access: Any = None

    def __post_init__(self) -> None:
        for name in ("file_size", "chunk_size"):
            try:
                setattr(self, name, parse_size(getattr(self, name)))
            except (ValueError, TypeError) as e:
                raise XcbError(f"campaign: {name}: {e}") from None
        if isinstance(self.optimizer, dict):
            bad = [k for k in self.optimizer if k not in OptimizerSpec.__dataclass_fields__]
            if bad:
                raise XcbError(f"campaign: optimizer.{bad[0]}: unknown setting (one of "
                               f"{', '.join(OptimizerSpec.__dataclass_fields__)})")
            self.optimizer = OptimizerSpec(**self.optimizer)
        elif self.optimizer is True:
            self.optimizer = OptimizerSpec()
        elif self.optimizer is False:
            self.optimizer = None
        elif self.optimizer is not None and not isinstance(self.optimizer, OptimizerSpec):
            raise XcbError(f"campaign: optimizer: {self.optimizer!r} is not true/false "
                           "or a mapping of optimizer settings")
        for name, value, allowed in (("mode", self.mode, MODES), ("client", self.client, CLIENTS),
                                     ("checksum", self.checksum, CHECKSUM_MODES),
                                     ("size_dist", self.size_dist, SIZE_DISTS)):
            if not isinstance(value, str) or value not in allowed:
                raise XcbError(f"campaign: {name}: {value!r} is not one of {', '.join(allowed)}")
        _check(self, CAMPAIGN_LIMITS, "campaign: ")
        self._check_reads()
        if self.size_dist == "uniform" and self.size_spread >= 1:
            raise XcbError(f"campaign: size_spread: {self.size_spread} must be < 1 for uniform "
                           "sizes (a fraction of the mean)")
        for name in ("dest_prefix", "campaign_id"):
            if not isinstance(getattr(self, name), str) or "\0" in getattr(self, name):
                raise XcbError(f"campaign: {name}: {getattr(self, name)!r} is not a name")
        if not isinstance(self.extra, dict):
            raise XcbError(f"campaign: extra: {self.extra!r} is not a mapping")
        if not self.campaign_id:
            self.campaign_id = "c" + uuid.uuid4().hex[:8]
        self._check_level()

    def _check_reads(self) -> None:
        if self.direction not in DIRECTIONS:
            raise XcbError(f"campaign: direction: {self.direction!r} is not one of "
                           f"{', '.join(DIRECTIONS)}")
        self.read_fraction = read_fraction(self.read_fraction)
        self.access = parse_access(self.access)

    # --- time-based levels ---------------------------------------------------------------
    def _check_level(self) -> None:
        """The level's own settings (field by field, as check_campaign_settings asks: a
        ``steady`` alone is checked against the longest level). How the dataset is cycled is
        checked when a campaign starts (check_cycling) and per matrix cell (level_problems)."""
        if self.duration is None and self.steady is not None:
            level_rule({"max": MAX_SECONDS}, self.steady)
        else:
            level_rule(self.duration, self.steady)

    def check_cycling(self) -> None:
        """A time-based level must be able to cycle its dataset (XcbError if not)."""
        if self.level is None:
            return
        if not (self.delete_after_verify or self.overwrite):
            raise XcbError("campaign: duration: a time-based level cycles the dataset: set "
                           "delete_after_verify (or overwrite) so the target never fills up")
        if not self.delete_after_verify and self.files < self.max_active:
            raise XcbError(f"campaign: files: cycling by overwrite needs files ({self.files}) >= "
                           f"concurrency ({self.max_active}), so no file is written twice at once")

    @property
    def level(self) -> LevelRule | None:
        """The time-based level's bounds and rule (None: the file-count mode)."""
        return level_rule(self.duration, self.steady)

    def timeout_for(self, size: int) -> float:
        """FTS's per-transfer timeout: base + per-MiB seconds."""
        return self.timeout + self.timeout_per_mib * size / (1 << 20)

    @property
    def max_active(self) -> int:
        if self.optimizer and self.optimizer.max_active:
            return self.optimizer.max_active
        return self.concurrency

    def with_(self, **kw) -> CampaignSpec:
        return replace(self, **kw)

    def settings(self) -> dict[str, Any]:
        """The settings as recorded (CAMPAIGN rows, manifests): secrets in ``extra`` redacted."""
        d = asdict(self)
        d["optimizer"] = asdict(self.optimizer) if self.optimizer else None
        return redact(d)

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


LEVEL_DURATION_KEYS = ("min", "max")
LEVEL_STEADY_KEYS = ("rule", "window", "points", "tolerance")


def level_rule(duration: Any, steady: Any) -> LevelRule | None:
    """LevelRule from the campaign's ``duration`` ({min, max}, or one value: min = max) and
    ``steady`` ({rule, window, points, tolerance}) settings; XcbError naming the field."""
    if duration is None:
        if steady is not None:
            raise XcbError("campaign: steady: needs campaign.duration ({min, max}): the "
                           "file-count mode ends when every file is transferred")
        return None
    kw: dict[str, Any] = {}
    if isinstance(duration, dict):
        for key, value in duration.items():
            if key not in LEVEL_DURATION_KEYS:
                raise XcbError(f"campaign: duration.{key}: unknown key (min, max)")
            try:
                kw[key] = parse_seconds(value)
            except ValueError as e:
                raise XcbError(f"campaign: duration.{key}: {e}") from None
        if "max" not in kw:
            raise XcbError("campaign: duration.max: missing (the longest a level may run)")
    else:
        try:
            kw["min"] = kw["max"] = parse_seconds(duration)
        except ValueError as e:
            raise XcbError(f"campaign: duration: {e}") from None
    st = steady or {}
    if not isinstance(st, dict):
        raise XcbError(f"campaign: steady: {st!r} is not a mapping ({', '.join(LEVEL_STEADY_KEYS)})")
    for key, value in st.items():
        try:
            if key == "window":
                kw[key] = parse_seconds(value)
            elif key == "tolerance":
                kw[key] = parse_fraction(value)
            elif key in ("rule", "points"):
                kw[key] = value
            else:
                raise XcbError(f"campaign: steady.{key}: unknown key ({', '.join(LEVEL_STEADY_KEYS)})")
        except ValueError as e:
            raise XcbError(f"campaign: steady.{key}: {e}") from None
    if "min" not in kw:  # a level lasts at least its steady window
        kw["min"] = min(kw.get("window", LevelRule.window), kw["max"])
    rule = LevelRule(**kw)
    for name, why in rule.problems():
        section = "duration" if name in LEVEL_DURATION_KEYS else "steady"
        raise XcbError(f"campaign: {section}.{name}: {why}")
    return rule


def level_problems(settings: Any, files: int, concurrency: int) -> list[tuple[str, str]]:
    """[(field, why)] of a matrix cell's campaign settings for time-based levels (the runner
    turns delete_after_verify on unless the matrix turns it off)."""
    try:
        rule = level_rule(settings.get("duration"), settings.get("steady"))
    except XcbError as e:
        fieldname, _, why = str(e).removeprefix("campaign: ").partition(": ")
        return [(fieldname, why)]
    if rule is None:
        return []
    if not settings.get("delete_after_verify", True):
        if not settings.get("overwrite"):
            return [("delete_after_verify", "a time-based level cycles the dataset: keep "
                     "delete_after_verify (or set overwrite) so the target never fills up")]
        if files < concurrency:
            return [("overwrite", f"cycling by overwrite needs files ({files}) >= the highest "
                     f"concurrency ({concurrency}), so no file is written twice at once")]
    return []
