"""Read and mixed campaigns: the dispatcher of :mod:`xcbench.campaign.dispatch`, with transfers
that read from the gateway.

Reads come from a copy of the campaign's dataset that the cell writes into its gateway once,
with every file's adler32 verified on the gateway (:func:`prepare_dataset`: a write campaign
that keeps no records and is not timed); each concurrency level then reads it, and a
time-based level cycles over it as the write side does (level.py). Files already there with
their size are kept, so the levels of a cell (and its repeats) write nothing again.

A read is verified end to end: a full read folds every byte into an adler32 compared with the
dataset's known checksum; random and vector reads (``access``) compare each chunk with the
bytes the dataset regenerates for its range (checksum_type ``adler32-ranges``: the adler32s of
the chunks read and of the dataset's same ranges, in the record). A mixed campaign
(``direction: mixed``) interleaves reads and writes, ``read_fraction`` of them reads; its
writes are the write side's (new names, verified, deleted after verify). Every TRANSFER row
says its direction; the timeline splits bytes into read and written.
"""

from __future__ import annotations

import errno as E
import json
import time
import zlib
from typing import Any

from xcbench.campaign.access import direction_of, ranges
from xcbench.campaign.dataset import format_adler32
from xcbench.campaign.dispatch import Campaign, CampaignHooks, run_writes
from xcbench.campaign.level import _Job
from xcbench.campaign.readers import thread_reader
from xcbench.campaign.spec import CampaignSpec
from xcbench.clients.base import Outcome, Progress, TransferError
from xcbench.clients.threads import thread_client
from xcbench.errors import XcbError
from xcbench.store.findings import finding

READ_SINK = "memory://"  # a read's destination: folded into adler32 (or compared) and dropped
RANGES = "adler32-ranges"


def _fold(chunks: list[bytes]) -> str:
    acc = 1
    for c in chunks:
        acc = zlib.adler32(c, acc)
    return format_adler32(acc)


class ReadCampaign(Campaign):
    def __init__(self, spec: CampaignSpec, dest: Any, sink=None, cell_id: str = "",
                 hooks: CampaignHooks | None = None):
        if spec.mode != "push":
            raise XcbError(f"campaign: direction: {spec.direction} campaigns read from the "
                           f"gateway itself (mode push), not with mode {spec.mode}")
        if spec.direction == "mixed" and spec.client == "http":
            raise XcbError("campaign: client: http reads only; a mixed campaign writes too")
        super().__init__(spec, dest, None, sink, cell_id, hooks)
        if self.local and spec.direction == "read":  # gfal2's push source: nothing is pushed
            self.local.cleanup()
            self.local = None
        self.read_kind = spec.client
        self.read_scheme = "http" if spec.client == "http" or not self.dest.root_url else "root"
        self.prepared: dict | None = None
        self.read_mismatches = 0
        self.choices.append({"what": "read client", "chosen": f"{self.read_kind} over "
                             f"{self.read_scheme}://", "why": "campaign.client; random and "
                             "vector reads need the XRootD client"})

    # --- names ---------------------------------------------------------------------------
    def direction_of(self, seq: int) -> str:
        return direction_of(self.spec.direction, self.spec.read_fraction, seq)

    def read_name(self, i: int) -> str:
        return self.dest.name(f"{self.spec.dest_prefix}rd-{self.dataset.ident}."
                              f"{self.dataset.name(i)}")

    def read_url(self, seq: int) -> str:
        i = self.index(seq)
        user = f"xcb{seq % self.spec.connections}" if self.read_scheme == "root" else None
        return self.dest.url(self.read_name(i), self.read_scheme, user)

    def urls_of(self, seq: int) -> tuple[str, str]:
        if self.direction_of(seq) == "read":
            return self.read_url(seq), READ_SINK
        return super().urls_of(seq)

    # --- one read ------------------------------------------------------------------------
    def _attempt(self, job: _Job) -> None:
        if self.direction_of(job.seq) == "write":
            super()._attempt(job)
            return
        spec, i = self.spec, self.index(job.seq)
        size, url, access = self.dataset.size(i), self.read_url(job.seq), spec.access
        reader = thread_reader(self.read_kind, spec.streams)
        progress = Progress("read")
        start, deadline, view = self._begin(job, size, progress, reader)
        cks_src = cks_dst = None
        verify = spec.checksum != "none"
        try:
            self._not_stopped()
            if access["pattern"] == "full":
                n, got = reader.read_full(url, deadline, progress, verify)
                if verify:
                    cks_src, cks_dst = self.dataset.adler32(i), got
                if n != size:
                    self._read_mismatch()
                    raise TransferError(f"SOURCE SIZE MISMATCH: dataset {size} != read {n}",
                                        E.EIO, "SOURCE", "TRANSFER")
                if verify and got != cks_src:
                    self._read_mismatch()
                    raise TransferError(f"SOURCE CHECKSUM MISMATCH: dataset adler32 {cks_src} "
                                        f"!= read {got}", E.EIO, "SOURCE", "TRANSFER")
            else:
                rngs = ranges(access, size, self.dataset.seed, i, job.seq)
                got_chunks = reader.read_ranges(url, rngs, access["pattern"] == "readv",
                                                deadline, progress)
                n = sum(len(b) for b in got_chunks)
                if verify:
                    want = [self.dataset.read_range(i, off, ln) for off, ln in rngs]
                    cks_src, cks_dst = _fold(want), _fold(got_chunks)
                    bad = [r for r, w, g in zip(rngs, want, got_chunks, strict=False) if w != g]
                    if bad or len(got_chunks) != len(rngs):
                        self._read_mismatch()
                        where = f" (first at offset {bad[0][0]}, {bad[0][1]} bytes)" if bad else ""
                        raise TransferError(
                            f"SOURCE CONTENT MISMATCH: {len(bad)} of {len(rngs)} chunks differ "
                            f"from the dataset, {len(got_chunks)} returned{where}", E.EIO,
                            "SOURCE", "TRANSFER")
            out = Outcome(True, n, transfer_type=f"read {access['pattern']}")
        except TransferError as e:
            out = e.outcome(progress.transferred)
        except Exception as e:  # never lose a record: an unexpected error fails the attempt
            out = Outcome(False, progress.transferred, E.EIO, "TRANSFER", "TRANSFER",
                          f"internal error: {type(e).__name__}: {e}")
        self._finish(job, out, view, start, time.time(), url, READ_SINK, cks_src, cks_dst,
                     reader, direction="read", client=self.read_kind,
                     checksum_type=None if not verify else
                     "adler32" if access["pattern"] == "full" else RANGES)

    def _read_mismatch(self) -> None:
        with self.cond:
            self.read_mismatches += 1

    # --- the run -------------------------------------------------------------------------
    def run(self, progress: bool = False, stop_event=None) -> dict:
        self.prepared = prepare_dataset(self)  # before the campaign's clock
        return super().run(progress, stop_event)

    def _findings(self) -> list[dict]:
        rows = super()._findings()
        if self.read_mismatches:
            rows.append(finding(self.cell_id, f"{self.read_mismatches} reads returned bytes "
                                "that differ from what was written and verified",
                                "the stored copy changed after its checksum was verified "
                                "(a corrupt replica or object, or a gateway returning wrong data)",
                                "check the files named in the failed read records (reason "
                                "SOURCE CHECKSUM/CONTENT MISMATCH)", "error"))
        return rows

    def _summary(self, start: float, end: float) -> dict:
        row = super()._summary(start, end)
        rows = self.out.kept.get("transfers", [])
        split: dict[str, dict] = {}
        for d in ("read", "write"):
            mine = [r for r in rows if r["direction"] == d and r["start_time"]]
            ok = [r for r in mine if r["file_state"] == "FINISHED"]
            moved = sum(r["transferred"] or 0 for r in ok)
            t0 = min((r["start_time"] for r in mine), default=0.0)
            t1 = max((r["finish_time"] for r in mine), default=0.0)
            split[d] = {"attempts": len(mine), "finished": len(ok), "bytes": moved,
                        "rate": moved / (t1 - t0) if t1 > t0 else 0.0}
        done = split["read"]["finished"] + split["write"]["finished"]
        settings = json.loads(row["settings"])
        settings.update(access=self.spec.access, read_fraction=self.spec.read_fraction,
                        directions=split, read_dataset=self.prepared,
                        read_share=split["read"]["finished"] / done if done else None,
                        read_client=self.read_kind, read_scheme=self.read_scheme,
                        verify="adler32 of every byte read" if self.spec.access["pattern"] ==
                        "full" else "each chunk against the dataset's bytes of its range")
        moved = split["read"]["bytes"] + split["write"]["bytes"]
        span = row["finish_time"] - row["start_time"]
        row.update(settings=json.dumps(settings, sort_keys=True, default=str), bytes=moved,
                   rate=moved / span if span > 0 else 0.0)
        return row


def prepare_dataset(c: ReadCampaign) -> dict:
    """Put the campaign's dataset into its gateway once, each file verified by its adler32 on
    the gateway: a write campaign of its own (no records, not timed). Files already there with
    their size are kept (written earlier in this cell); XcbError if any cannot be written."""
    t0 = time.time()
    deadline = t0 + c.spec.timeout_for(c.dataset.total_bytes)
    stat = thread_client("xrootd")
    urls = [c.dest.url(c.read_name(i), "root") for i in range(len(c.dataset))]
    missing = [i for i, u in enumerate(urls) if stat.size(u, deadline) != c.dataset.size(i)]
    info: dict[str, Any] = {"files": len(urls), "names": f"{c.spec.dest_prefix}rd-"
                            f"{c.dataset.ident}.*", "kept": len(urls) - len(missing),
                            "written": 0}
    if missing:
        spec = c.spec.with_(direction="write", mode="push", client="xrootd", checksum="target",
                            campaign_id=f"rd-{c.dataset.ident}", overwrite=True,
                            delete_after_verify=False, duration=None, steady=None,
                            optimizer=None, retries=max(c.spec.retries, 2),
                            concurrency=min(max(c.spec.concurrency, 2), 8))
        writer = Campaign(spec, c.dest, None, None, c.cell_id)
        summary = writer.run()
        if summary["failed"]:
            bad = [r for r in writer.out.kept.get("transfers", []) if r["file_state"] != "FINISHED"]
            raise XcbError(f"campaign: the read dataset could not be written and verified: "
                           f"{summary['failed']} of {len(urls)} files failed (first: "
                           f"{bad[-1]['reason'] if bad else '?'})")
        info.update(written=len(urls), kept=0, verified="adler32 of every file on the gateway")
    info["seconds"] = round(time.time() - t0, 3)
    return info


def run_campaign(spec: CampaignSpec, *, dest: Any, source: Any = None, sink=None,
                 cell_id: str = "", progress: bool = False, stop_event=None,
                 hooks: CampaignHooks | None = None) -> dict:
    """Run ``spec`` (xcbench.campaign.run_campaign): a write campaign into ``dest`` (dispatch.py),
    or, by ``spec.direction``, a read or mixed one from it; returns the CAMPAIGN row (reads:
    settings access, directions, read_dataset)."""
    if spec.direction == "write":
        return run_writes(spec, dest=dest, source=source, sink=sink, cell_id=cell_id,
                          progress=progress, stop_event=stop_event, hooks=hooks)
    return ReadCampaign(spec, dest, sink, cell_id, hooks).run(progress, stop_event)
