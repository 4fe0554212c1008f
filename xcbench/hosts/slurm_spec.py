"""The ``slurm:`` section of an inventory, checked before anything asks Slurm for anything
(xcbench.hosts.slurm makes or takes the allocation it describes).

    slurm: {partition: batch, nodes: 4, time: "1:00:00", account: ska, constraint: ib,
            cpus_per_task: 8, gateways: 1, start_timeout: 10m}

Every key is optional (``slurm: {}``: the allocation this command runs in, all its nodes client
hosts). A bad value is one XcbError line naming the file and the field (exit 2).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from xcbench.errors import XcbError
from xcbench.hosts.slurm_cli import NAME_RE

KEYS = ("partition", "nodes", "time", "account", "constraint", "cpus_per_task", "gateways",
        "start_timeout", "xcbench")
# Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS
TIME_RE = re.compile(r"^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d{1,2}(:\d{1,2}){0,2}|UNLIMITED|INFINITE)$")
TEXT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.,:@&|*()\[\]!+=-]{0,255}$")  # account, constraint
START_TIMEOUT = 300.0  # s an allocation may take to start (squeue's reason when it does not)


@dataclass(frozen=True)
class SlurmRequest:
    """The inventory's ``slurm:`` section, checked."""
    partition: str | None = None
    nodes: int | None = None
    time: str | None = None
    account: str | None = None
    constraint: str | None = None
    cpus_per_task: int | None = None
    gateways: int = 0
    start_timeout: float = START_TIMEOUT
    xcbench: tuple[str, ...] = ()  # how a node runs xcbench (default: this interpreter, -m xcbench)
    source: str = "<inventory>"

    def salloc_options(self) -> list[str]:
        """The allocation's options as salloc takes them (``--opt=value``: a value is never
        read as another option)."""
        # --no-kill: a node that fails takes its own share with it, not the whole allocation;
        # without cpus_per_task the nodes whole (--exclusive): where Slurm confines steps
        # (task/cgroup, task/affinity) one task per node would otherwise hold each agent to the
        # one CPU it allocates, and another job's load would share the node being measured
        opts = [f"--nodes={self.nodes or max(1, self.gateways + 1)}", "--ntasks-per-node=1",
                "--no-kill", *([] if self.cpus_per_task else ["--exclusive"])]
        for key, flag in (("partition", "partition"), ("time", "time"), ("account", "account"),
                          ("constraint", "constraint"), ("cpus_per_task", "cpus-per-task")):
            v = getattr(self, key)
            if v is not None:
                opts.append(f"--{flag}={v}")
        return opts


def parse_request(spec: Any, where: str) -> SlurmRequest:
    """``slurm:`` of an inventory; XcbError "<where>: slurm: <field>: ..." for a bad value."""
    at = f"{where}: slurm"
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise XcbError(f"{at}: must be a mapping of {', '.join(KEYS)} (or {{}}: the allocation "
                       f"this command runs in)")
    unknown = sorted(set(map(str, spec)) - set(KEYS))
    if unknown:
        raise XcbError(f"{at}: {unknown[0]}: unknown key (known: {', '.join(KEYS)})")
    kw: dict[str, Any] = {}
    for key in ("nodes", "cpus_per_task", "gateways"):
        v = spec.get(key)
        if v is None:
            continue
        low = 0 if key == "gateways" else 1
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= 100_000:
            raise XcbError(f"{at}: {key}: {v!r} must be a whole number >= {low}")
        kw[key] = v
    if kw.get("nodes") is not None and kw.get("gateways", 0) >= kw["nodes"]:
        raise XcbError(f"{at}: gateways: {kw['gateways']} of {kw['nodes']} nodes leaves no client "
                       f"node (gateways must be fewer than nodes)")
    for key, rx, hint in (("partition", NAME_RE, "a partition name"),
                          ("time", TIME_RE, "a Slurm time limit (minutes, HH:MM:SS, D-HH:MM)"),
                          ("account", TEXT_RE, "an account name"),
                          ("constraint", TEXT_RE, "a node feature expression (e.g. ib&haswell)")):
        v = spec.get(key)
        if v is None:
            continue
        v = str(v) if isinstance(v, int) and not isinstance(v, bool) and key == "time" else v
        if not isinstance(v, str) or not rx.match(v):
            raise XcbError(f"{at}: {key}: {v!r} is not {hint}")
        kw[key] = v
    xcb = spec.get("xcbench")
    if xcb is not None:
        xcb = shlex.split(xcb) if isinstance(xcb, str) else xcb
        if not isinstance(xcb, list) or not xcb or not all(isinstance(x, str) and x for x in xcb):
            raise XcbError(f"{at}: xcbench: must be the command that runs xcbench on a node "
                           f"(e.g. /shared/xcbench/bin/xcbench)")
        kw["xcbench"] = tuple(xcb)
    t = spec.get("start_timeout")
    if t is not None:
        try:
            kw["start_timeout"] = float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) \
                else _duration(t)
        except ValueError as e:
            raise XcbError(f"{at}: start_timeout: {e}") from None
        if not 1 <= kw["start_timeout"] <= 7 * 86400:
            raise XcbError(f"{at}: start_timeout: {t!r} must be between 1 s and 7 days")
    return SlurmRequest(**kw, source=where)


def _duration(v: Any) -> float:
    """'10m', '90s', '2h' -> seconds. Raises ValueError."""
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h)\s*$", v) if isinstance(v, str) else None
    if not m:
        raise ValueError(f"{v!r} is not a duration (write e.g. 10m, 90s, 2h)")
    return float(m.group(1)) * {"s": 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]
