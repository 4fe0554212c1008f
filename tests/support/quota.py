"""Whether CPU-quota cgroups can be made here: the tests that hold a role under a quota skip,
saying why, where they cannot; and the quota groups of this test process left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from xcbench.system.cgroups import CgroupError, Mechanism, detect

CPU = Path("/sys/fs/cgroup/cpu")  # where the v1 quota groups of a run are made

MECH: Mechanism | None
try:
    MECH, WHY_NO_QUOTA = detect(), ""
except CgroupError as e:
    MECH, WHY_NO_QUOTA = None, f"needs CPU-quota cgroups: {e}"

needs_quota = pytest.mark.skipif(MECH is None, reason=WHY_NO_QUOTA or "-")


def left_groups(*prefixes: str) -> list[Path]:
    """The quota groups of this process (named ``prefix`` + its pid) still there: others'
    tests may have their own at the same time."""
    return [g for p in prefixes for g in sorted(CPU.glob(f"{p}{os.getpid()}-*"))]
