"""Transfer clients of a campaign: what one attempt returns, errors FTS-style, and the factory.

The XRootD client's process-wide environment is set here, once, before any transfer:
``CpUsePgWrtRd=0`` (XRD_CPUSEPGWRTRD) because XRootD 5.5 servers crash on pgread when their
``xrd.buffers maxbsz`` exceeds 2 MiB (seen with XrdCeph and plain tmpfs gateways alike); plain
reads/writes are as fast here and every server accepts them, so 0 is a safe default for all
gateways. ``TimeoutResolution=1`` makes per-request timeouts fire within a second (default 15 s),
and a short ConnectionWindow/Retry lets a dead gateway fail an attempt instead of hanging it for
10 minutes (the FTS timeout and retries then take over). A value already set in the shell wins
(XrdCl's rule): :data:`XRDCL_ENV` records what was chosen and why.
"""

from __future__ import annotations

import errno as E
from dataclasses import dataclass
from typing import Any

from xcbench.clients.credentials import export

# name -> (value, why); applied by _apply_xrdcl_env() at import, before any XRootD object exists.
XRDCL_DEFAULTS = {
    "CpUsePgWrtRd": (0, "XRootD 5.5 servers with xrd.buffers maxbsz > 2m crash on pgread "
                        "(stack smashing); plain read/write works everywhere"),
    "TimeoutResolution": (1, "per-request timeouts checked every second, not every 15 s"),
    "ConnectionWindow": (10, "a dead gateway fails the attempt in seconds; FTS retries decide"),
    "ConnectionRetry": (2, "see ConnectionWindow"),
}
XRDCL_ENV: dict[str, dict[str, Any]] = {}

SCOPES = ("SOURCE", "DESTINATION", "TRANSFER")
PHASES = ("TRANSFER_PREPARATION", "TRANSFER", "TRANSFER_FINALIZATION")
# FTS does not retry these (url-copy's non-recoverable errnos).
NON_RECOVERABLE = {E.ENOENT, E.EPERM, E.EACCES, E.EEXIST, E.EFBIG, E.EROFS, E.ENAMETOOLONG,
                   E.EPROTONOSUPPORT, E.EISDIR}


def _apply_xrdcl_env() -> None:
    try:
        from XRootD import client as xc
    except ImportError:  # python3-xrootd missing: the xrootd client reports it when used
        return
    for key, (value, why) in XRDCL_DEFAULTS.items():
        applied = xc.EnvPutInt(key, value)
        XRDCL_ENV[key] = {"value": xc.EnvGetInt(key), "wanted": value, "why": why,
                          "source": "xcbench" if applied else "shell environment (kept)"}


_apply_xrdcl_env()


def apply_client_env(env: dict[str, str], label: str) -> list[dict]:
    """Put a gateway's ``client_env`` (XRD_* variables) into this process's XrdCl environment;
    returns what was done, for the campaign's settings. XrdCl keys are case-insensitive. A
    secure gateway's CA dir and token file go into the process environment (.credentials)."""
    done: list[dict] = export(env, label)
    try:
        from XRootD import client as xc
    except ImportError:
        return done
    for var, value in sorted(env.items()):
        if not var.startswith("XRD_"):
            continue
        key = var[4:].lower()
        value = str(value)
        ok = xc.EnvPutInt(key, int(value)) if value.lstrip("-").isdigit() else xc.EnvPutString(key, value)
        now = xc.EnvGetInt(key) if value.lstrip("-").isdigit() else xc.EnvGetString(key)
        done.append({"what": f"{var} for {label}", "chosen": str(now),
                     "why": "the gateway's client_env" + ("" if ok else
                            " (already set in the shell environment: XrdCl keeps that value)"),
                     "ok": str(now) == value})
    return done


@dataclass
class Outcome:
    """The result of one transfer (data movement only; checksums are the driver's)."""
    ok: bool
    transferred: int = 0
    error_code: int | None = None
    error_scope: str = ""
    error_phase: str = ""
    reason: str = ""
    transfer_type: str = ""     # push | 3rd pull | streamed | ...
    recoverable: bool = True


class TransferError(Exception):
    def __init__(self, reason: str, code: int = E.EIO, scope: str = "TRANSFER",
                 phase: str = "TRANSFER", recoverable: bool | None = None):
        super().__init__(reason)
        self.reason, self.code, self.scope, self.phase = reason, code, scope, phase
        self.recoverable = (code not in NON_RECOVERABLE) if recoverable is None else recoverable

    def outcome(self, transferred: int = 0, transfer_type: str = "") -> Outcome:
        return Outcome(False, transferred, self.code, self.scope, self.phase, self.reason,
                       transfer_type, self.recoverable)


class Progress:
    """Bytes moved so far by an active attempt (read by the optimizer and the timeline), and
    the campaign's request to give up (``cancelled``, checked by clients between chunks)."""
    __slots__ = ("transferred", "cancelled", "direction")

    def __init__(self, direction: str = "write") -> None:
        self.transferred = 0
        self.cancelled = False
        self.direction = direction  # the timeline splits bytes into read and written


class Client:
    """One per worker thread. Subclasses implement what their protocol can do."""
    name = ""

    def push(self, dataset, index: int, dest: str, *, overwrite: bool, streams: int,
             deadline: float, progress: Progress, source_path: str | None = None) -> Outcome:
        raise TransferError(f"{self.name}: push is not supported", E.EPROTONOSUPPORT)

    def tpc(self, source: str, dest: str, *, overwrite: bool, streams: int, deadline: float,
            progress: Progress, size: int = 0) -> Outcome:
        raise TransferError(f"{self.name}: third-party copy is not supported", E.EPROTONOSUPPORT)

    def checksum(self, url: str, deadline: float) -> str:
        raise NotImplementedError

    def size(self, url: str, deadline: float) -> int | None:
        """Size of ``url`` (None when it cannot be stat'ed)."""
        raise NotImplementedError

    def delete(self, url: str) -> bool:
        """Remove ``url``; True when it is gone (or was never there). Never raises."""
        raise NotImplementedError

    def cancel(self) -> None:
        """Abort what this client is doing (called from another thread when a campaign stops)."""

    def close(self) -> None:
        pass




def normalise_adler32(value: str) -> str:
    """'adler32 1a2b3c\\x00' / '1A2B3C' -> '001a2b3c'."""
    v = value.replace("\x00", " ").strip().split()[-1].lower()
    return v.zfill(8)
