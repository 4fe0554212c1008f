"""The ``cores`` dimension: each origin (xrootd) of a gateway in its own CPU-quota cgroup,
the way a Kubernetes CPU limit is applied (CFS quota = cores x period)."""

from __future__ import annotations

import os
import re
from typing import Any

from xcbench.system.cgroups import CpuGroups


def limit_origins(gateway: Any, cores: float, state_dir: Any = None) -> CpuGroups:
    """One group ``xcb-<gateway>-<pid>-origin<i>`` per origin, each with ``cores`` of CPU.
    The caller closes the returned groups (the session does, on any exit); a gateway restart
    starts new processes outside them."""
    run = re.sub(r"[^A-Za-z0-9_.-]", "-", f"{gateway.name}-{os.getpid()}")
    groups = CpuGroups(state_dir, run=run)
    try:
        for i, server in enumerate(gateway.origins, 1):
            if server.pid:
                groups.create(f"origin{i}", cores).add(server.pid)
    except BaseException:
        groups.close()
        raise
    return groups
