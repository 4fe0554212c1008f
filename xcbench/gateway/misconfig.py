"""Findings about a gateway as configured: the common rows (TPC, origins) plus those its
backend declares (``Backend.findings``). A wildcard bind is no finding: it is refused
(xcbench.system.ports.check_bind, xcbench.gateway.launch)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xcbench.backends.base import Backend
from xcbench.cell import Cell
from xcbench.store.findings import finding


def gateway_findings(cell_id: str, backend: type[Backend], *, tunables: Mapping[str, Any] | None = None,
                     bind: str = "127.0.0.1", authenticated: bool = False,
                     object_size: int | None = None, osd_max_object_size: int | None = None,
                     client: str | None = None, mode: str | None = None,
                     origins: int = 1, shared_store: bool | None = None) -> list[dict]:
    """Findings for a gateway of ``backend`` (its class) with these (effective) tunables.

    ``tunables`` are the effective gateway tunables (defaults applied): ``async`` (bool),
    ``buffers_maxbsz`` (bytes), ``cksio`` (bool). ``client``/``mode`` are the campaign's, when
    known. ``object_size`` is the RADOS/CephFS object size of the cell's layout. ``origins``:
    data servers behind the cmsd redirector; ``shared_store``: whether they share one store
    (default: what the backend declares).
    """
    cls = backend
    t = dict(tunables or {})
    facts = {"object_size": object_size, "osd_max_object_size": osd_max_object_size,
             "client": client, "mode": mode}
    rows: list[dict] = list(cls.findings(cell_id, t, facts))
    if shared_store is None:
        shared_store = bool(cls.target_defaults.get("shared_store"))
    if mode == "tpc-root":
        rows.append(finding(
            cell_id, "root TPC completion is polled every 2.5 s",
            "XrdCl's third-party copy job (xrdcp --tpc, gfal2's xrootd plugin) checks for "
            "completion in 2.5 s steps (XrdClThirdPartyCopyJob.cc): a 1 MiB and a 64 MiB root "
            "TPC both took 2.54 s here, so per-file rates of small files measure the poll",
            "use files that take well over 2.5 s, or compare with tpc-http", "warning"))
    if origins > 1 and not shared_store:
        rows.append(finding(
            cell_id, f"{origins} origins with separate storage behind a cmsd redirector",
            "origins only answer 'I have it', so the manager places each NEW file after the "
            "query deadline (cms.delay qdl): 5.0 s per file by default, 1.0 s as xcbench sets "
            "it; small files measure the redirector, not the gateways",
            "use files large enough to hide 1 s, or shared storage (cms.dfs, as for rados)",
            "warning"))
    return rows


def findings_for(cell: Cell | None, target: Any, tunables: Mapping[str, Any], *, bind: str,
                 osd_max_object_size: int | None = None, authenticated: bool = False,
                 origins: int = 1) -> list[dict]:
    """:func:`gateway_findings` from a Cell (or None) and a backends Target."""
    layout = getattr(target, "layout", None) or getattr(cell, "layout", None)
    campaign = dict(getattr(cell, "campaign", None) or {})
    return gateway_findings(
        getattr(target, "cell_id", "") or getattr(cell, "id", ""), target.backend_type,
        tunables=tunables, bind=bind, authenticated=authenticated,
        object_size=layout.object_size if layout else target.oss.get("object_size"),
        osd_max_object_size=osd_max_object_size,
        client=campaign.get("client"), mode=getattr(cell, "mode", None), origins=origins,
        shared_store=getattr(target, "shared_store", None))
