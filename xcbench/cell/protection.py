"""How a pool protects data: replication (size copies) or erasure coding (k data + m coding
chunks). The one pool/protection class: the matrix asks for one per cell, the backends create
the xcb- pool it names, the planner does arithmetic on it.

Written forms (matrix pools, plan ``protection``): ``replicated`` / ``rep`` (size 3: what a
site runs, and what it compares EC 8+3 against), ``rep3``, ``replicated 3``, ``r3``, ``rep1`` /
``unprotected`` (one copy: a throw-away test pool, named explicitly), ``ec8+3``, ``ec8-3``,
``{replicated: 3}``, ``{ec: 8+3}``, ``{ec: {k: 8, m: 3}}``, ``{kind: erasure, k: 8, m: 3}``,
``{kind: replicated, size: 3}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from xcbench.errors import XcbError

POOL_PREFIX = "xcb-"  # xcbench creates and writes only pools named so
KINDS = ("replicated", "erasure")
MIN_EC_K = 2  # Ceph's erasure-code plugins refuse k < 2 when the profile is used
REPLICATED_SIZE = 3  # "replicated" without a size: a site's usual three copies
UNPROTECTED = ("unprotected", "rep1")  # the explicit names of a one-copy pool
_LABEL = re.compile(r"^(?:ec\s*(-?\d+)\s*[+-]\s*(-?\d+)|(?:rep(?:licated)?|r)\s*(-?\d*))$", re.IGNORECASE)


def label_fields(text: str) -> dict[str, Any] | None:
    """'rep3' -> {kind: replicated, size: 3}; 'ec8+3' -> {kind: erasure, k: 8, m: 3};
    'replicated' -> {kind: replicated} (no size written: REPLICATED_SIZE); 'unprotected' ->
    {kind: replicated, size: 1}; None if it is neither. No range checks."""
    if text.strip().lower() == "unprotected":
        return {"kind": "replicated", "size": 1}
    m = _LABEL.match(text.strip())
    if not m:
        return None
    if m.group(1) is not None:
        return {"kind": "erasure", "k": int(m.group(1)), "m": int(m.group(2))}
    return {"kind": "replicated", **({"size": int(m.group(3))} if m.group(3) else {})}


@dataclass(frozen=True)
class Protection:
    """Fields may be added only with care: a cell's id is a hash of them."""
    kind: str  # "replicated" | "erasure"
    size: int = REPLICATED_SIZE  # replicated copies
    k: int = 0
    m: int = 0

    # ---- reading -------------------------------------------------------------------------
    @classmethod
    def parse(cls, value: Any) -> Protection:
        """Any written form (see the module doc); ValueError saying what is wrong."""
        fields: dict[str, Any] | None = None
        if isinstance(value, dict) and set(value) <= {"kind", "size", "k", "m"} and "kind" in value:
            fields = dict(value)
        elif isinstance(value, dict) and len(value) == 1:
            (kind, arg), = value.items()
            if kind in ("replicated", "rep"):
                value = f"rep{arg}"
            elif kind == "ec":
                value = f"ec{arg['k']}+{arg['m']}" if isinstance(arg, dict) and set(arg) == {"k", "m"} \
                    else f"ec{arg}"
        if fields is None and isinstance(value, str):
            fields = label_fields(value)
        if fields is None or fields.get("kind") not in KINDS or not all(
                isinstance(v, int) and not isinstance(v, bool) for k, v in fields.items() if k != "kind"):
            raise ValueError(f"{value!r} is not a pool (replicated (= rep3), rep3, unprotected "
                             f"(= rep1), ec2+1, {{ec: 8+3}})")
        p = cls(**fields)
        for _field, why in p.problems():
            raise ValueError(f"{value!r}: {why}")
        return p

    def problems(self) -> list[tuple[str, str]]:
        """[(field, why)] for a protection that cannot exist, whatever the cluster."""
        if self.kind == "replicated":
            return [] if self.size >= 1 else [("size", "replicated size must be >= 1")]
        if self.kind == "erasure":
            return [] if self.k >= 1 and self.m >= 1 else [("k" if self.k < 1 else "m",
                                                           "EC needs k >= 1 and m >= 1")]
        return [("kind", f"unknown pool kind {self.kind!r} ({' | '.join(KINDS)})")]

    def check_creatable(self, osds: int) -> None:
        """What Ceph needs to create the pool on a cluster of ``osds`` OSDs (XcbError if not)."""
        for _field, why in self.problems():
            raise XcbError(f"pool {self.name}: {why}")
        if self.kind == "erasure" and self.k < MIN_EC_K:
            raise XcbError(f"pool {self.name}: erasure coding needs k >= {MIN_EC_K} and m >= 1")
        if self.shards > osds:
            what = f"k+m = {self.shards}" if self.kind == "erasure" else f"size {self.size}"
            raise XcbError(f"pool {self.name}: {what} needs {self.shards} OSDs, "
                           f"the cluster has {osds}")

    # ---- names ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The Ceph pool xcbench creates/uses for it."""
        return f"{POOL_PREFIX}rep{self.size}" if self.kind == "replicated" \
            else f"{POOL_PREFIX}ec{self.k}-{self.m}"

    @property
    def profile(self) -> str | None:
        """EC profile name (erasure pools only)."""
        return f"{POOL_PREFIX}ec{self.k}-{self.m}" if self.kind == "erasure" else None

    @property
    def label(self) -> str:
        return f"rep{self.size}" if self.kind == "replicated" else f"ec{self.k}+{self.m}"

    # ---- arithmetic ------------------------------------------------------------------------
    @property
    def raw_ratio(self) -> float:
        """Raw bytes stored per logical byte, by construction."""
        return float(self.size) if self.kind == "replicated" else (self.k + self.m) / self.k

    @property
    def shards(self) -> int:
        """OSDs (failure domains) written per client write op: replicas or k+m shards."""
        return self.size if self.kind == "replicated" else self.k + self.m

    @property
    def read_shards(self) -> int:
        """OSDs read per client read op (the primary, or the k data shards)."""
        return 1 if self.kind == "replicated" else self.k

    @property
    def fanout_write(self) -> float:
        """Bytes the primary OSD sends to other OSDs per client byte written."""
        return self.size - 1.0 if self.kind == "replicated" else (self.k + self.m - 1) / self.k

    @property
    def fanin_read(self) -> float:
        """Bytes the primary gathers from other OSDs per client byte read."""
        return 0.0 if self.kind == "replicated" else (self.k - 1) / self.k


PoolSpec = Protection  # the name cells and the matrix have used
