"""Known-bad gateway configurations, recorded as FINDING rows (xcbench.records.FINDING).

The gateway layer never refuses these: a matrix may measure a bad setting on purpose. It only
says what is wrong, why (what was measured or what breaks) and how to fix it, so a report can
list it next to the cell's numbers. Everything here is a pure function of the cell's settings
and a few cluster facts, so it is unit-tested without any process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xcbench.sizes import format_size

WILDCARD_BINDS = ("", "*", "0.0.0.0", "::", "[::]")
XRDCEPH_MIN_MAXBSZ = 16 << 20


def finding(cell_id: str, what: str, why: str, fix: str, severity: str = "warning") -> dict:
    """One FINDING row. severity: info (mitigated by xcbench) | warning (hurts) | error (breaks)."""
    return {"cell_id": cell_id, "what": what, "why": why, "fix": fix, "severity": severity}


def gateway_findings(cell_id: str, backend: str, *, tunables: Mapping[str, Any] | None = None,
                     bind: str = "127.0.0.1", authenticated: bool = False,
                     object_size: int | None = None, osd_max_object_size: int | None = None,
                     client: str | None = None, mode: str | None = None,
                     origins: int = 1) -> list[dict]:
    """Findings for a gateway of ``backend`` with these (effective) tunables.

    ``tunables`` are the effective gateway tunables (defaults applied): ``async`` (bool),
    ``buffers_maxbsz`` (bytes), ``cksio`` (bool). ``client``/``mode`` are the campaign's, when
    known. ``object_size`` is the RADOS/CephFS object size of the cell's layout. ``origins``:
    data servers behind the cmsd redirector.
    """
    t = dict(tunables or {})
    rows: list[dict] = []
    if backend == "rados":
        if t.get("async", True) is not False:
            rows.append(finding(
                cell_id, "XrdCeph with xrootd.async on",
                "XrdCeph 5.5 then writes in 64 KiB asynchronous pieces: a 256 MiB upload took 31 s, "
                "against 1.3 s with async off and 16 MiB buffers",
                "gateway: {async: false, buffers_maxbsz: 16M}"))
        maxbsz = t.get("buffers_maxbsz")
        if t.get("async") is False and maxbsz is not None and maxbsz < XRDCEPH_MIN_MAXBSZ:
            rows.append(finding(
                cell_id, f"XrdCeph with xrd.buffers maxbsz {format_size(maxbsz)}",
                "with async off every client write becomes one RADOS write of at most maxbsz; "
                "small buffers multiply the round trips to the OSDs",
                "gateway: {buffers_maxbsz: 16M}"))
        if not t.get("cksio", True):
            rows.append(finding(
                cell_id, "XrdCeph without +cksio",
                "without +cksio on ofs.osslib XrdCeph cannot compute or store the adler32 "
                "checksum (a RADOS xattr): checksum queries fail and transfers cannot be verified",
                "gateway: {cksio: true} (ofs.osslib +cksio libXrdCeph.so ...)", "error"))
    elif (t.get("buffers_maxbsz") or 0) > 2 << 20:
        rows.append(finding(
            cell_id, f"pgread clients with xrd.buffers maxbsz {format_size(t['buffers_maxbsz'])}",
            "measured with XRootD 5.5.3: with maxbsz above 2M a default client read (pgread) "
            "crashes a plain gateway too (*** stack smashing detected ***), not only XrdCeph",
            "clients use XRD_CPUSEPGWRTRD=0 (xcbench's own clients do); keep maxbsz at 2M "
            "where outside readers use default xrdcp", "warning"))
    if backend == "rados":
        rows.append(finding(
            cell_id, "pgread/pgwrite clients against XrdCeph 5.5",
            "XRootD 5.5 clients read with pgread by default and XrdCeph 5.5 crashes on it "
            "(*** stack smashing detected ***; the client gets a corrupt partial file)",
            "clients use the gateway's client_env (XRD_CPUSEPGWRTRD=0, set before importing "
            "XRootD); xcbench sets it for its own clients and the gateway's TPC xrdcp", "info"))
        if mode == "tpc-root":
            rows.append(finding(
                cell_id, "root TPC into XrdCeph",
                "the destination runs `xrdcp --server` into the file's local path; an XrdCeph "
                "gateway has none, so every pull fails with 'Local error: permission denied' "
                "(measured with XRootD 5.5.3); HTTP-TPC into the same gateway works",
                "use mode tpc-http for XrdCeph destinations", "error"))
        if client == "gfal2" and mode in (None, "push"):
            rows.append(finding(
                cell_id, "gfal2 over root:// into XrdCeph",
                "gfal2's xrootd plugin chmods the new file and XrdCeph refuses chmod "
                "([3016] Unable to fchmod ...; is a directory): every transfer fails",
                "use http:// (davs:// with TLS) for gfal2 into XrdCeph, as RAL's Echo does",
                "error"))
    if mode == "tpc-root":
        rows.append(finding(
            cell_id, "root TPC completion is polled every 2.5 s",
            "XrdCl's third-party copy job (xrdcp --tpc, gfal2's xrootd plugin) checks for "
            "completion in 2.5 s steps (XrdClThirdPartyCopyJob.cc): a 1 MiB and a 64 MiB root "
            "TPC both took 2.54 s here, so per-file rates of small files measure the poll",
            "use files that take well over 2.5 s, or compare with tpc-http", "warning"))
    if bind.strip() in WILDCARD_BINDS and not authenticated:
        rows.append(finding(
            cell_id, "gateway listens on all interfaces without authentication",
            "without xrootd.seclib access is anonymous read/write for anyone who can reach "
            "the host",
            "bind to loopback (gateway: {bind: 127.0.0.1}) or configure authentication",
            "warning"))
    if origins > 1 and backend != "rados":
        rows.append(finding(
            cell_id, f"{origins} origins with separate storage behind a cmsd redirector",
            "origins only answer 'I have it', so the manager places each NEW file after the "
            "query deadline (cms.delay qdl): 5.0 s per file by default, 1.0 s as xcbench sets "
            "it; small files measure the redirector, not the gateways",
            "use files large enough to hide 1 s, or shared storage (cms.dfs, as for rados)",
            "warning"))
    if (backend in ("rados", "cephfs") and object_size and osd_max_object_size
            and object_size > osd_max_object_size):
        rows.append(finding(
            cell_id, f"object_size {format_size(object_size)} above osd_max_object_size "
                     f"{format_size(osd_max_object_size)}",
            "Ceph accepts the layout but every write past osd_max_object_size fails with EFBIG",
            "use an object_size <= osd_max_object_size, or raise 'osd max object size'",
            "error"))
    return rows


def findings_for(cell: Any, target: Any, tunables: Mapping[str, Any], *, bind: str,
                 osd_max_object_size: int | None = None, authenticated: bool = False,
                 origins: int = 1) -> list[dict]:
    """:func:`gateway_findings` from a Cell (or None) and a backends Target."""
    layout = getattr(target, "layout", None) or getattr(cell, "layout", None)
    campaign = dict(getattr(cell, "campaign", None) or {})
    return gateway_findings(
        getattr(target, "cell_id", "") or getattr(cell, "id", ""), target.backend,
        tunables=tunables, bind=bind, authenticated=authenticated,
        object_size=layout.object_size if layout else target.oss.get("object_size"),
        osd_max_object_size=osd_max_object_size,
        client=campaign.get("client"), mode=getattr(cell, "mode", None), origins=origins)
