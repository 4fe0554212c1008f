"""The probe's part of a matrix (xcbench.matrix.sections): the fio settings of ``probe:`` that
are not plain numbers, sizes or booleans (the matrix schema checks those)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from xcbench.matrix import sections
from xcbench.probe.job_settings import PATTERNS

# fio's steady-state detection: ss=<metric>:<limit>[%] (the only fio option a matrix writes as
# text); the other probe fields are numbers, sizes, booleans or pattern names (matrix.schema)
_FIO_SS = re.compile(r"^(iops|bw|iops_slope|bw_slope):[0-9]+(\.[0-9]+)?%?$")


def probe_problems(section: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, why) for probe settings outside their type: ss, ss_dur, ss_ramp, patterns."""
    out: list[tuple[str, str]] = []
    ss = section.get("ss")
    if ss is not None and (not isinstance(ss, str) or not _FIO_SS.match(ss)):
        out.append(("ss", f"{ss!r} is not a fio steady-state rule (iops|bw|iops_slope|bw_slope"
                          f":<number>[%], e.g. iops_slope:0.3%)"))
    for key in ("ss_dur", "ss_ramp"):
        v = section.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            out.append((key, f"{v!r} is not a whole number of seconds"))
    pats = section.get("patterns")
    if pats is not None:
        for p in pats if isinstance(pats, list) else [pats]:
            if p not in PATTERNS:
                out.append(("patterns", f"{p!r} is not one of {', '.join(PATTERNS)}"))
    return out


sections.register("probe", probe_problems)
