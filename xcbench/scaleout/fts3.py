"""The same campaign submitted to an FTS3 server through its REST API (the ``fts3`` client).

Scale-out on a real engine: FTS's own daemons run the transfers (gfal2, its optimizer, its
retries); xcbench stages the dataset on the source, optionally sets the link limits
(POST /config/links, needs config rights), submits one job with a per-file ``ADLER32:`` checksum
and size, polls it, and harvests every file (and every failed attempt, from
/jobs/<id>/files/<file_id>/retries) into the same TRANSFER rows the local driver writes, plus a
timeline rebuilt from the transfers' start/finish times.

FTS moves data between storages, so the modes are tpc-root and tpc-http (a source is needed).
FTS reports the user-defined checksum, not the destination's: a FINISHED file with checksum
verification on has ``checksum_dest`` = the value FTS verified, and that is said in settings.

Records stream: each poll writes the TRANSFER rows of the files that reached a final state
since the last one, so a stop loses none; the timeline follows at the end. A stop (the
command's SIGINT/SIGTERM/SIGHUP, or ``max_wait``) cancels the job through the fts3 client and
harvests what FTS then marks CANCELED.

With ``delete_after_verify`` (a run's default: a small destination absorbs the campaign) xcbench
reads each FINISHED file's adler32 back from the destination itself (``checksum_dest`` is then
that value, not FTS's) and deletes the file: FTS never deletes what it wrote.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlsplit

from xcbench.campaign.dataset import Dataset
from xcbench.campaign.endpoints import choose, endpoint
from xcbench.campaign.rows import Buffered, campaign_row, row, transfer_row
from xcbench.campaign.spec import CampaignSpec
from xcbench.campaign.staging import stage_source
from xcbench.clients.threads import thread_client
from xcbench.errors import XcbError
from xcbench.figures.steady import timeline_from_transfers
from xcbench.store.findings import finding
from xcbench.store.tables import TIMELINE
from xcbench.system import bounded_http
from xcbench.system.secrets_policy import check_transport

log = logging.getLogger(__name__)
TERMINAL = ("FINISHED", "FAILED", "FINISHEDDIRTY", "CANCELED")
# one REST call to the FTS server, whole (the client's own timeout is per read), and its answer
# (a job's file list of 100,000 files is ~60 MB of JSON)
REQUEST_DEADLINE = 120.0
MAX_ANSWER = 128 << 20
# the FTS server's and this host's clocks may differ by this much before a time is not believed
CLOCK_SKEW = 600.0
Window = tuple[float, float]
_JOB_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # FTS's job ids are UUIDs


def _ts(value: Any, window: Window | None = None) -> float | None:
    """FTS datetimes ('2024-01-02T03:04:05', UTC, no zone) -> epoch seconds; None for a time
    outside ``window`` (the job's life, widened by CLOCK_SKEW): a server's time sizes the
    rebuilt timeline, so one spanning centuries must not be taken."""
    if not value or not isinstance(value, str) or len(value) > 64:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "")).replace(tzinfo=UTC).timestamp()
    except (ValueError, OverflowError):
        return None
    if window is not None and not window[0] - CLOCK_SKEW <= t <= window[1] + CLOCK_SKEW:
        return None
    return t


def _bounded(value: Any, top: float) -> float | None:
    """A server's number (a size, a duration) when it is one in [0, top]; None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value <= top else None


def _request_class():
    """The fts3 client's Request with every call bounded (xcbench.system.bounded_http)."""
    import requests
    from fts3.rest.client.request import Request

    class Bounded(Request):
        def method(self, method, url, body=None, headers=None, user=None, passw=None):
            hdrs = {"Accept": "application/json", **(headers or {})}
            if self.fts_access_token:
                hdrs["Authorization"] = "Bearer " + self.fts_access_token
            verify: Any = self.verify
            if verify and self.capath:  # as the client does: its CA directory
                verify = self.capath
            auth = (user, passw) if user and passw else None
            with requests.Session() as s:
                ans = bounded_http.request(
                    s, method, str(url), deadline=REQUEST_DEADLINE, max_bytes=MAX_ANSWER,
                    data=body, headers=hdrs, verify=verify, auth=auth,
                    timeout=(self.connectTimeout, self.timeout), cert=(self.ucert, self.ukey))
            text = ans.body.decode("utf-8", errors="replace")
            self._handle_error(url, ans.status, text)
            return text
    return Bounded


def _json(text: Any, kind: type, what: str) -> Any:
    """An FTS answer parsed and of the expected shape; XcbError naming the call otherwise."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        value = None
    if not isinstance(value, kind):
        raise XcbError(f"fts3: {what}: the server's answer is not a JSON {kind.__name__}")
    if isinstance(value, list) and not all(isinstance(v, dict) for v in value):
        raise XcbError(f"fts3: {what}: the server's answer is not a list of mappings")
    return value


def _se(url: str) -> str:
    p = urlsplit(url)
    return f"{p.scheme}://{p.hostname}"


def connect(fts_url: str, *, token: str | None = None, ucert: str | None = None,
            ukey: str | None = None, verify: bool | str = True):
    """An fts3 client Context: OAuth2 token (no delegation) or an X509 proxy/cert."""
    try:
        from fts3.rest.client.context import Context
    except ImportError as e:  # M2Crypto comes from the Debian package python3-m2crypto
        raise XcbError(f"fts3: the fts3 client library cannot be imported ({e}); "
                       "pip install fts3 and apt-get install python3-m2crypto") from None
    # a token, and the X509 proxy the client delegates, go only over verified TLS or loopback
    check_transport(fts_url, verify, "fts3")
    try:
        if token:
            return Context(fts_url, fts_access_token=token, verify=verify,
                           request_class=_request_class())
        return Context(fts_url, ucert=ucert, ukey=ukey, verify=verify,
                       request_class=_request_class())
    except Exception as e:
        raise XcbError(f"fts3: cannot use the FTS3 server {fts_url}: {e}") from None


def set_link_limits(ctx, source_se: str, dest_se: str, spec: CampaignSpec) -> dict:
    """POST /config/links: min/max active (and optimizer mode) for the source->dest link."""
    opt = spec.optimizer
    # with the optimizer FTS moves between min and max active; min never above the level's max
    body = {"symbolicname": f"xcbench-{spec.campaign_id}", "source": source_se,
            "destination": dest_se,
            "min_active": min(opt.min_active, spec.max_active) if opt else spec.concurrency,
            "max_active": spec.max_active, "nostreams": spec.streams,
            "optimizer_mode": {"conservative": 1, "normal": 2, "aggressive": 3}[opt.mode] if opt else 0}
    try:
        return {"set": True, "config": json.loads(ctx.post_json("/config/links", body) or "{}")}
    except Exception as e:  # no config rights: FTS's own limits apply; say so
        return {"set": False, "requested": body, "error": f"{type(e).__name__}: {e}"}


def build_job(spec: CampaignSpec, dataset: Dataset, sources: list[str], dests: list[str]) -> dict:
    """The job: one transfer per file with its ADLER32 checksum and size; FTS job params."""
    from fts3.rest.client.easy import new_job, new_transfer
    files = [new_transfer(s, d, checksum=f"ADLER32:{dataset.adler32(i)}", filesize=dataset.size(i),
                          metadata={"xcbench_campaign": spec.campaign_id, "file_index": i})
             for i, (s, d) in enumerate(zip(sources, dests, strict=True))]
    default_timeout = spec.timeout == 600.0 and spec.timeout_per_mib == 2.0
    return new_job(files, verify_checksum=spec.checksum, overwrite=spec.overwrite,
                   retry=spec.retries if spec.retries else -1, retry_delay=int(spec.retry_delay),
                   nostreams=spec.streams,
                   timeout=None if default_timeout else int(spec.timeout_for(max(dataset.sizes))),
                   metadata={"xcbench_campaign": spec.campaign_id})


MAX_SIZE = float(1 << 50)  # bytes of one file (1 PiB): a larger "filesize" is not believed
MAX_RETRIES = 10_000  # FTS's retry counts are small numbers
MAX_TEXT = 4096  # characters of a server's reason, URL or checksum kept in a row


def _int(value: Any, top: int) -> int | None:
    n = _bounded(value, top)
    return int(n) if n is not None and n == int(n) else None


def _text(value: Any) -> str | None:
    return value[:MAX_TEXT] if isinstance(value, str) else None


def harvest(ctx, job_id: str, spec: CampaignSpec, cell_id: str, kind: str,
            files: list[dict] | None = None, window: Window | None = None) -> list[dict]:
    """TRANSFER rows from FTS: each failed earlier attempt, then the file's final state (of
    ``files``, FTS's file dicts; default: every file of the job). Every value the server sends
    is typed and bounded here: times within ``window`` (the job's life; default the last week),
    sizes and counts within range, text capped; a value outside is None."""
    if files is None:
        files = _json(ctx.get(f"/jobs/{job_id}/files"), list, f"GET /jobs/{job_id}/files")
    if window is None:
        window = (time.time() - 7 * 86400, time.time())
    span = window[1] - window[0] + 2 * CLOCK_SKEW
    rows = []
    for f in files:
        meta = f.get("file_metadata") or {}
        if isinstance(meta, str):
            try:
                meta = json.loads(meta[:MAX_TEXT] or "{}")
            except (ValueError, RecursionError):
                meta = {}
        if not isinstance(meta, dict):
            meta = {}
        i = _int(meta.get("file_index", f.get("file_index")), 1 << 31) or 0
        file_id = _int(f.get("file_id"), 1 << 62)
        size = _int(f.get("filesize"), int(MAX_SIZE)) or _int(f.get("user_filesize"), int(MAX_SIZE))
        base = dict(cell_id=cell_id, campaign_id=spec.campaign_id, concurrency=spec.concurrency,
                    repeat=spec.repeat, file_index=i, source=_text(f.get("source_surl")),
                    destination=_text(f.get("dest_surl")), mode=spec.mode, client=kind,
                    nstreams=spec.streams, file_size=size,
                    checksum_type=None if spec.checksum == "none" else "adler32")
        try:
            retries = _json(ctx.get(f"/jobs/{job_id}/files/{file_id}/retries"), list, "retries") \
                if file_id is not None else []
        except Exception:
            retries = []
        # one row per failed earlier attempt, numbered 0.. in order (FTS's ``attempt`` base
        # differs between versions), then the final one
        retries = sorted(retries[:MAX_RETRIES],
                         key=lambda r: _int(r.get("attempt"), MAX_RETRIES) or 0)
        for k, r in enumerate(retries):
            when = _ts(r.get("datetime"), window)
            rows.append(transfer_row(**base, transfer_id=f"{job_id}-{file_id}-{k}",
                                     retry=k, transferred=0,
                                     start_time=None, finish_time=when, file_state="FAILED",
                                     error_scope="TRANSFER", error_phase="TRANSFER",
                                     reason=_text(r.get("reason"))))
        state = f.get("file_state")
        ok = state == "FINISHED"
        cks = (_text(f.get("checksum")) or "").split(":")[-1].lower() or None
        start, finish = _ts(f.get("start_time"), window), _ts(f.get("finish_time"), window)
        dur = _bounded(f.get("tx_duration"), span) or None
        size = size or 0
        last = max(_int(f.get("retry"), MAX_RETRIES) or 0, len(retries))
        rows.append(transfer_row(
            **base, transfer_id=f"{job_id}-{file_id}-{last}",
            retry=last, transferred=size if ok else 0,
            start_time=start, finish_time=finish,
            tx_duration=dur if dur else (finish - start if start and finish else None),
            throughput=size / dur if ok and dur else None,
            checksum_source=cks if spec.checksum != "none" else None,
            checksum_dest=cks if ok and spec.checksum in ("target", "both") else None,
            file_state=state if state in ("FINISHED", "FAILED", "CANCELED") else "FAILED",
            error_scope=None if ok else "TRANSFER", error_phase=None if ok else "TRANSFER",
            reason=None if ok else (_text(f.get("reason")) or f"FTS file state {str(state)[:40]}")))
    return rows


def cancel(ctx, job_id: str) -> dict | None:
    """Cancel the job with the fts3 client (DELETE /jobs/<id>); best effort: a job that just
    finished, or a server that is gone, is not an error here."""
    from fts3.rest.client import Submitter
    try:
        return Submitter(ctx).cancel(quote(job_id))
    except Exception as e:  # noqa: BLE001
        log.warning("fts3: cancelling job %s: %s: %s", job_id, type(e).__name__, e)
        return None


def timeline_rows(rows: list[dict], spec: CampaignSpec, cell_id: str) -> list[dict]:
    """TIMELINE rows of a level FTS ran, rebuilt after the fact from its transfers by the one
    rebuild the analysis uses too (figures.steady.timeline_from_transfers: each transfer's bytes
    spread evenly over its duration, 1 s buckets)."""
    import pandas as pd

    done = [{**r, "cell_id": cell_id, "campaign_id": spec.campaign_id,
             "concurrency": spec.concurrency, "repeat": spec.repeat}
            for r in rows if r["start_time"] and r["finish_time"]]
    if not done:
        return []
    tl = timeline_from_transfers(pd.DataFrame(done))
    return [row(TIMELINE, **{k: v for k, v in r.items() if k in TIMELINE})
            for r in tl.to_dict("records")]


def links_finding(cell_id: str, links: dict, fts: str) -> dict:
    """FTS refused the link limits (no config rights): FTS's own optimizer decides the level."""
    return finding(
        cell_id, f"FTS3 at {fts} refused the link limits (POST /config/links)",
        f"{links.get('error')}: without config rights the concurrency of "
        f"{links['requested']['source']} -> {links['requested']['destination']} is FTS's own "
        f"(its optimizer, its link defaults), not the level's {links['requested']['max_active']}",
        "ask the FTS operators for config rights on this link (or to set min/max active to the "
        "levels), or read each level as 'what FTS chose' (recorded per level)", "warning")


def verify_and_delete(rows: list[dict], spec: CampaignSpec, kind: str,
                      submitted: set[str] | frozenset[str] = frozenset()) -> int:
    """After FTS said FINISHED: the destination's own adler32 into ``checksum_dest`` (a mismatch
    turns the row FAILED and keeps the file), then the file is deleted. Returns the failures.
    Only a destination this job ``submitted`` is read or deleted: the server's answer
    (``dest_surl``) never decides what xcbench deletes with the engineer's credentials."""
    client, bad = thread_client(kind), 0
    for r in rows:
        if r["file_state"] != "FINISHED":
            continue
        if r.get("destination") not in submitted:
            bad += 1
            log.warning("fts3: the server answered with destination %s, which this job did not "
                        "submit: not read, not deleted", r.get("destination"))
            r.update(file_state="FAILED", transferred=0, throughput=None,
                     error_scope="DESTINATION", error_phase="TRANSFER_FINALIZATION",
                     reason="FTS answered with a destination this job did not submit: left "
                            "alone (not verified, not deleted)")
            continue
        if spec.checksum != "none":
            try:
                got = client.checksum(r["destination"], time.time() + spec.timeout_for(0))
            except Exception as e:  # noqa: BLE001 - recorded in the row, the campaign goes on
                got, why = None, f"{type(e).__name__}: {e}"
            else:
                why = f"DESTINATION CHECKSUM MISMATCH: FTS FINISHED, destination adler32 {got} " \
                      f"!= {r['checksum_source']}"
            r["checksum_dest"] = got
            if got != r["checksum_source"]:
                bad += 1
                r.update(file_state="FAILED", transferred=0, throughput=None,
                         error_scope="DESTINATION", error_phase="TRANSFER_FINALIZATION",
                         reason=f"read back by xcbench: {why}")
                continue
        if not client.delete(r["destination"]):
            log.warning("fts3: could not delete %s after its verification", r["destination"])
    return bad


def submit_campaign(spec: CampaignSpec, *, fts: str, dest: Any, source: Any, sink=None,
                    cell_id: str = "", token: str | None = None, ucert: str | None = None,
                    ukey: str | None = None, verify: bool | str = True, link_limits: bool = True,
                    poll: float = 2.0, stop_event=None, max_wait: float | None = None,
                    said: set | None = None) -> dict:
    """Run ``spec`` through the FTS3 server at ``fts``; returns the CAMPAIGN row. ``said``:
    the cells whose refused link limits are already a finding (one per cell, not per level)."""
    if spec.mode == "push":
        raise XcbError("campaign: --fts moves data between storages: use --mode tpc-root or "
                       "tpc-http with --source")
    dataset = Dataset.generate(spec.files, spec.file_size, spec.size_dist, spec.seed,
                               spec.size_spread, block_size=spec.chunk_size)
    dst, src = endpoint(dest, "destination"), endpoint(source, "source")
    scheme, kind, choices = choose(spec.mode, "gfal2", dst, src)  # FTS transfers with gfal2
    names = [src.name(f"{spec.dest_prefix}ds-{dataset.ident}.{dataset.name(i)}")
             for i in range(len(dataset))]
    staging = stage_source(dataset, src, names)
    sources = [src.url(n, scheme) for n in names]
    dests = [dst.url(dst.name(f"{spec.dest_prefix}{spec.campaign_id}.{dataset.name(i)}"), scheme)
             for i in range(len(dataset))]
    ctx = connect(fts, token=token, ucert=ucert, ukey=ukey, verify=verify)
    links = set_link_limits(ctx, _se(sources[0]), _se(dests[0]), spec) if link_limits else None
    out = Buffered(sink)
    if links and not links["set"] and (said is None or (cell_id, fts) not in said):
        out.add("findings", [links_finding(cell_id, links, fts)])
        out.flush()
        if said is not None:
            said.add((cell_id, fts))
    job = build_job(spec, dataset, sources, dests)
    from fts3.rest.client import Submitter
    params = job["params"]
    if token:
        job_id = Submitter(ctx).submit(transfers=job["files"], **params)
    else:
        from fts3.rest.client.easy import submit
        job_id = submit(ctx, job)
    if not isinstance(job_id, str) or not _JOB_ID.fullmatch(job_id):  # it goes into URL paths
        raise XcbError(f"fts3: {fts}: the server answered a job id that is not one "
                       f"({str(job_id)[:40]!r})")
    start = time.time()
    state = "SUBMITTED"
    rows: list[dict] = []
    harvested: set = set()  # file ids whose rows are written

    def stream(files: list[dict]) -> None:
        """Rows of the files that reached a final state since the last poll, written now."""
        done = [f for f in files if f.get("file_state") in TERMINAL and f.get("file_id") not in harvested]
        if done:
            new = harvest(ctx, job_id, spec, cell_id, "fts3", done, (start, time.time()))
            harvested.update(f.get("file_id") for f in done)
            if spec.delete_after_verify:
                verify_and_delete(new, spec, kind, frozenset(dests))
            rows.extend(new)
            out.add("transfers", new)
            out.flush()

    cancelled = False
    try:
        while True:
            info = _json(ctx.get(f"/jobs/{job_id}"), dict, f"GET /jobs/{job_id}")
            state = str(info.get("job_state", state))[:40]
            stream(_json(ctx.get(f"/jobs/{job_id}/files"), list, f"GET /jobs/{job_id}/files"))
            if state in TERMINAL:
                break
            if not cancelled and ((stop_event is not None and stop_event.is_set()) or
                                  (max_wait is not None and time.time() - start > max_wait)):
                cancel(ctx, job_id)  # FTS marks what is left CANCELED; we harvest it
                cancelled = True
            if stop_event is not None and not cancelled:
                stop_event.wait(poll)  # a stop is acted on at once, not a poll later
            else:
                time.sleep(poll)
    except BaseException:  # a hard stop (second signal): the job must not run on without us
        if not cancelled:
            cancel(ctx, job_id)
        with contextlib.suppress(Exception):
            stream(_json(ctx.get(f"/jobs/{job_id}/files"), list, f"GET /jobs/{job_id}/files"))
        raise
    out.add("timeline", timeline_rows(rows, spec, cell_id))
    final: dict[int, dict] = {}
    for r in rows:
        if r["file_index"] not in final or r["retry"] >= final[r["file_index"]]["retry"]:
            final[r["file_index"]] = r
    ok = [r for r in final.values() if r["file_state"] == "FINISHED"]
    t0 = min((r["start_time"] for r in rows if r["start_time"]), default=start)
    t1 = max((r["finish_time"] for r in rows if r["finish_time"]), default=time.time())
    moved = sum(r["file_size"] or 0 for r in ok)
    # FTS stores start/finish in whole seconds: a level shorter than a few seconds would read
    # 0 s (rate 0). The url-copy durations (FTS's floats) bound the span below: the longest one,
    # and with the link limited to max_active, their sum over max_active.
    longest = max((r["tx_duration"] or 0.0 for r in ok), default=0.0)
    busy = sum(r["tx_duration"] or 0.0 for r in ok) / spec.max_active if links and links["set"] \
        else 0.0
    fts_span = t1 - t0
    t1 = t0 + max(fts_span, longest, busy)
    timing = {"fts_span": fts_span, "longest_transfer": round(longest, 3),
              "transfer_seconds_per_slot": round(busy, 3),
              "observed": round(time.time() - start, 3),
              "note": "FTS datetimes have 1 s resolution: the level's span is the largest of "
                      "last finish - first start, the longest transfer and (link limited) the "
                      "transfers' seconds per slot; observed = polled job time, an upper bound"}
    settings = {"spec": spec.settings(), "dataset": dataset.describe(), "engine": "fts3",
                "fts": {"endpoint": fts, "job_id": job_id, "job_state": state,
                        "api": getattr(ctx, "endpoint_info", {}).get("api"),
                        "auth": "oauth2 token" if token else "x509", "link_limits": links,
                        "timing": timing},
                "scheme": scheme, "choices": choices, "staging": staging,
                "checksum_dest": "read back from the destination by xcbench, then the file is "
                                 "deleted" if spec.delete_after_verify else
                                 "FTS reports the user-defined checksum it verified, not a "
                                 "value read back from the destination"}
    summary = campaign_row(
        cell_id=cell_id, campaign_id=spec.campaign_id, concurrency=spec.concurrency,
        repeat=spec.repeat, mode=spec.mode, client="fts3", files=len(dataset), bytes=moved,
        start_time=t0, finish_time=t1, rate=moved / (t1 - t0) if t1 > t0 else 0.0,
        finished=len(ok), failed=len(dataset) - len(ok), settings=settings)
    out.add("campaigns", [summary])
    out.flush()
    return summary
