"""Known-bad gateway configurations, recorded as FINDING rows (xcbench.store.tables.FINDING).

The gateway layer never refuses these: a matrix may measure a bad setting on purpose. It only
says what is wrong, why (what was measured or what breaks) and how to fix it, so a report can
list it next to the cell's numbers. Everything here is a pure function of the cell's settings
and a few cluster facts, so it is unit-tested without any process.

What is specific to a backend lives with it (``Backend.findings`` in xcbench.backends); here are
the rows every gateway can get, and the helpers backends share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xcbench.figures.units import format_size


def finding(cell_id: str, what: str, why: str, fix: str, severity: str = "warning") -> dict:
    """One FINDING row. severity: info (mitigated by xcbench) | warning (hurts) | error (breaks)."""
    return {"cell_id": cell_id, "what": what, "why": why, "fix": fix, "severity": severity}


def plain_gateway_findings(cell_id: str, tunables: Mapping[str, Any]) -> list[dict]:
    """Findings of a plain (POSIX, oss.localroot) xrootd gateway."""
    t = dict(tunables or {})
    if (t.get("buffers_maxbsz") or 0) > 2 << 20:
        return [finding(
            cell_id, f"pgread clients with xrd.buffers maxbsz {format_size(t['buffers_maxbsz'])}",
            "measured with XRootD 5.5.3: with maxbsz above 2M a default client read (pgread) "
            "crashes a plain gateway too (*** stack smashing detected ***), not only XrdCeph",
            "clients use XRD_CPUSEPGWRTRD=0 (xcbench's own clients do); keep maxbsz at 2M "
            "where outside readers use default xrdcp", "warning")]
    return []


def object_size_findings(cell_id: str, facts: Mapping[str, Any]) -> list[dict]:
    """A layout whose object_size Ceph's OSDs refuse to write (backends on Ceph)."""
    object_size, osd_max = facts.get("object_size"), facts.get("osd_max_object_size")
    if object_size and osd_max and object_size > osd_max:
        return [finding(
            cell_id, f"object_size {format_size(object_size)} above osd_max_object_size "
                     f"{format_size(osd_max)}",
            "Ceph accepts the layout but every write past osd_max_object_size fails with EFBIG",
            "use an object_size <= osd_max_object_size, or raise 'osd max object size'",
            "error")]
    return []
