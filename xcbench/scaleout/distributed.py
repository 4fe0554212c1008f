"""A campaign level from several client hosts: one campaign agent per host, records merged.

Each client host runs the same local driver (``xcbench campaign-agent``, xcbench.scaleout.agent)
through its transport (xcbench.hosts: local, netns or ssh); this coordinator:
- splits the level's concurrency over the hosts (merge.split; a host with no slot does not
  run) and gives each its own campaign id, so file names never collide between hosts;
- reads every agent's stream in a thread: rows tagged with the host, times moved onto the
  run's clock by the host's measured clock offset (xcbench.hosts.checks.clock_offsets), the
  raw stream kept under the run's raw/agents/;
- decides the end of a time-based level on the merged timeline with the level's own rule (the
  agents run without one) and tells every agent to stop (they drain: transfers in flight end);
- writes the merged 1 s timeline and one CAMPAIGN row for the level (per-host rows inside).
A failing agent is an XcbError naming its host, after every other agent was stopped; a host
lost mid-level (xcbench.scaleout.agent_host: its stream ended without a word, or went silent)
fails its share alone, in a FINDING and the level's ``lost``, and the rest of the level is
kept; Ctrl-C cancels them all; nothing is left running on any host.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from xcbench.campaign.dispatch import Campaign
from xcbench.campaign.spec import CampaignSpec
from xcbench.campaign.staging import stage_source
from xcbench.errors import XcbError
from xcbench.hosts import transport_for as tf
from xcbench.scaleout import agent_messages, merge
from xcbench.scaleout.agent import request
from xcbench.scaleout.agent_host import STALL, Agent
from xcbench.scaleout.node_sampler import boot_id
from xcbench.store.findings import finding
from xcbench.system import proc
from xcbench.system.agentstream import MAX_LINE, parse_message, read_lines

GRACE = 30.0   # s an agent's own level bound lies beyond the coordinator's (only a safety)
TICK = 0.5     # s between two judgements of the merged timeline
CANCEL_WAIT = 20.0  # s agents get to cancel their transfers and flush before they are stopped
RAW_CAP = 512 << 20  # characters of an agent's stream kept under raw/agents/ per level
MAX_TIMELINE = 7 * 86400  # 1 s buckets kept per host: a week-long level
Sink = Callable[[str, list[dict]], None]


def machine_of(hello: dict | None, own: str | None = None) -> str:
    """"shared" when the agent's kernel boot id is this machine's, "own" when another's,
    "unknown" when it did not say (merge.correct_sample's label)."""
    theirs = (hello or {}).get("boot_id")
    if not isinstance(theirs, str) or not theirs:
        return "unknown"
    return "shared" if theirs == (own if own is not None else boot_id()) else "own"


def agent_argv(transport: Any) -> list[str]:
    """The command that runs the agent on the transport's host (xcbench at the same version)."""
    own = getattr(transport, "xcbench_argv", None)
    if callable(own):
        return [*own(), "campaign-agent"]
    if getattr(transport, "shares_fs", True):  # local, netns: this very installation
        return [sys.executable, "-m", "xcbench", "campaign-agent"]
    return ["xcbench", "campaign-agent"]


def host_specs(spec: CampaignSpec, names: list[str]) -> dict[str, CampaignSpec]:
    """Each host's share of ``spec`` (hosts with no slot or no file left out)."""
    slots = merge.split(spec.concurrency, len(names))
    active = [(n, s) for n, s in zip(names, slots, strict=True) if s > 0]
    files = merge.split(spec.files, len(active)) if spec.level is None else [spec.files] * len(active)
    rule = spec.level
    out: dict[str, CampaignSpec] = {}
    for (name, s), f in zip(active, files, strict=True):
        if f < 1:
            continue
        kw: dict[str, Any] = {"concurrency": s, "files": f, "campaign_id": f"{spec.campaign_id}.{name}"}
        if spec.optimizer is not None:  # each host's optimizer works within its own slots
            kw["optimizer"] = replace(spec.optimizer, max_active=0)
        if rule is not None:  # the coordinator ends the level; the agent's bound is a safety
            bound = rule.max + GRACE
            kw.update(duration={"min": bound, "max": bound},
                      steady={"rule": "none", "window": 2, "points": 2})
        out[name] = spec.with_(**kw)
    return out


class Coordinator:
    def __init__(self, spec: CampaignSpec, *, dest: Any, source: Any, hosts: list[Any],
                 offsets: dict[str, dict], sink: Sink, cell_id: str, procs: proc.ProcessSet | None,
                 raw_dir: Path | None, transport_for: Callable[[Any], Any], stop_event=None):
        self.spec, self.dest, self.source, self.sink = spec, dest, source, sink
        self.cell_id, self.procs, self.raw_dir, self.stop_event = cell_id, procs, raw_dir, stop_event
        self.rule = spec.level
        self.lock = threading.Lock()  # sinks see one caller at a time
        self.level_end: dict | None = None
        self.cancelled: float | None = None
        self.offsets = offsets
        specs = host_specs(spec, [h.name for h in hosts])
        self.agents = [Agent(h, transport_for(h), specs[h.name],
                             float((offsets.get(h.name) or {}).get("offset_s") or 0.0),
                             raw_dir / f"{spec.campaign_id}.{h.name}.jsonl" if raw_dir else None)
                       for h in hosts if h.name in specs]

    # --- the streams -------------------------------------------------------------------
    def _read(self, a: Agent) -> None:
        assert a.p is not None and a.p.popen.stdout is not None
        raw = open(a.raw, "a", encoding="utf-8") if a.raw else None  # noqa: SIM115
        kept = 0
        try:
            for text in read_lines(a.p.popen.stdout):
                a.heard = time.monotonic()
                if text is None:
                    self._refuse(a, f"a line longer than {MAX_LINE >> 20} MiB")
                    continue
                if raw is not None and kept + len(text) <= RAW_CAP:
                    raw.write(text)
                    kept += len(text)
                msg = parse_message(text)
                if msg is None:
                    continue  # not the stream's (the agent keeps stdout for it): in raw only
                why = agent_messages.check(msg)
                if why is not None:
                    self._refuse(a, why)
                    continue
                self._take(a, msg)
        except (OSError, ValueError) as e:
            a.error = a.error or f"reading its stream: {e}"
        finally:
            if raw is not None:
                raw.close()
            a.done.set()

    @staticmethod
    def _refuse(a: Agent, why: str) -> None:
        """A message outside what an agent may say: dropped, and the host's share fails."""
        a.error = a.error or f"sent a message xcbench does not take ({why})"

    def _take(self, a: Agent, msg: dict) -> None:
        """One checked message (agent_messages.check)."""
        if "hello" in msg:
            a.hello = msg["hello"]
        elif "error" in msg:
            a.error = agent_messages.error_text(msg)
        elif "end" in msg:
            a.ended = True
        elif msg.get("table") == "samples":  # the host's link and CPU (node_sampler)
            fixed = [merge.correct_sample(r, a.name, a.offset, self.cell_id, machine_of(a.hello))
                     for r in msg["rows"]]
            with self.lock:
                self.sink("samples", fixed)
        elif "table" in msg:
            table, rows = msg["table"], msg["rows"]
            fixed = [merge.correct(table, r, a.name, a.offset, self.spec.campaign_id) for r in rows]
            for r in fixed:
                if table in ("transfers", "timeline"):
                    r["concurrency"] = self.spec.concurrency
            with self.lock:
                if table == "timeline":
                    if len(a.timeline) + len(fixed) > MAX_TIMELINE:
                        self._refuse(a, f"more than {MAX_TIMELINE:,} timeline buckets")
                        return
                    a.timeline.extend(fixed)
                elif table == "campaigns":
                    a.campaign = fixed[-1] if fixed else a.campaign
                elif fixed:
                    self.sink(table, fixed)

    # --- the level ---------------------------------------------------------------------
    def _base(self) -> dict[str, Any]:
        return {"cell_id": self.cell_id, "campaign_id": self.spec.campaign_id,
                "concurrency": self.spec.concurrency, "repeat": self.spec.repeat}

    def merged(self, until: float | None = None) -> list[dict]:
        with self.lock:
            per_host = {a.name: list(a.timeline) for a in self.agents}
        return merge.merge_timelines(per_host, until=until, base=self._base())

    def _judge(self) -> None:
        """End a time-based level once its rule holds on the merged timeline (whole buckets
        every running agent has reported), or at its maximum."""
        running = [a for a in self.agents if not a.done.is_set()]
        if not running or any(a.last_wall is None for a in running):
            return
        rows = self.merged(until=min(a.last_wall for a in running))  # type: ignore[type-var]
        if not rows:
            return
        rule, elapsed = self.rule, rows[-1]["t"]
        assert rule is not None
        steady, spread = False, float("nan")
        if elapsed >= rule.min or elapsed >= rule.max:
            steady, spread = rule.check([r["t"] for r in rows], [r["bytes"] for r in rows])
        ended_by = "steady" if steady else "max" if elapsed >= rule.max else None
        if ended_by:
            self._end(ended_by, elapsed, spread, rule.window_at([r["t"] for r in rows]))
            for a in self.agents:
                a.say("stop\n")

    def _end(self, ended_by: str, elapsed: float, spread: float = float("nan"),
             window: tuple[float, float] | None = None) -> None:
        if self.level_end is not None or self.rule is None:
            return
        rule = self.rule
        self.level_end = {
            "ended_by": ended_by, "steady": ended_by == "steady", "t_end": round(elapsed, 3),
            "window": [round(x, 3) for x in (window or rule.window_at(elapsed))],  # as judged
            "spread": None if math.isnan(spread) else round(spread, 4),
            "rule": rule.settings(), "text": rule.describe(), "decided_by": "coordinator",
            "dataset_files": self.spec.files}

    def _failed(self) -> Agent | None:
        """The first agent whose failure fails the level: any but a host lost while another
        still runs or finished (that host's share fails alone, the rest of the level is kept)."""
        kept = [a for a in self.agents if not a.failure()]
        return next((a for a in self.agents if a.failure() and not (a.lost and kept)), None)

    def run(self) -> dict:
        started = time.time()
        try:
            for a in self.agents:
                self._start(a)
            failed = self._wait()
        finally:
            self._stop_all()
        failed = failed or self._failed()
        return self._conclude(started, failed)

    def _start(self, a: Agent) -> None:
        log = a.raw.with_suffix(".log") if a.raw else None
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
        try:
            # pipe: stdout the stream, stdin ours (the request, control lines; its end is a stop;
            # ssh: the remote side is stopped a grace after it)
            a.p = a.transport.spawn(agent_argv(a.transport), name=f"campaign-agent-{a.name}",
                                    log=log, procs=self.procs, pipe=True)
        except (OSError, XcbError) as e:
            raise XcbError(f"campaign: client host {a.name}: the agent did not start: {e}") from None
        a.reader = threading.Thread(target=self._read, args=(a,), daemon=True,
                                    name=f"xcb-agent-{a.name}")
        a.reader.start()
        # the host's link and CPU sampled by its agent where the links device cannot see them
        # (this machine's and emulated hosts' links it reads itself)
        here = getattr(a.host, "transport", None) in ("local", "netns")
        a.say(request(a.spec, dest=self.dest, source=self.source, cell_id=self.cell_id,
                      host=a.name, address="" if here else getattr(a.host, "address", "") or ""))

    def _cancel(self) -> None:
        if self.cancelled is None:
            self.cancelled = time.time()
            for a in self.agents:
                a.say("cancel\n")

    def _wait(self) -> Agent | None:
        """Until every stream ended; the first failing agent (the others are cancelled).
        A stop drains for at most the transfers' timeout; a cancel waits CANCEL_WAIT s, then
        the agents still there are stopped (their records so far are kept)."""
        stop_sent: float | None = None
        drain = 2 * self.spec.timeout_for(self.spec.file_size) + GRACE
        while not all(a.done.is_set() for a in self.agents):
            time.sleep(TICK)
            bad = self._failed()
            if bad is not None:
                self._cancel()
                return bad
            if self.stop_event is not None and self.stop_event.is_set():
                self._cancel()
            for a in self.agents:  # a host gone silent mid-level (a dead node): let it go
                if a.silent(STALL):
                    proc.stop(a.p, timeout=2)  # type: ignore[arg-type]
            if self.rule is not None and self.level_end is None and self.cancelled is None:
                self._judge()
            if self.level_end is not None and stop_sent is None:
                stop_sent = time.time()
            if stop_sent and time.time() - stop_sent > drain:
                self._cancel()
            if self.cancelled and time.time() - self.cancelled > CANCEL_WAIT:
                break
        return self._failed()

    def _stop_all(self) -> None:
        """Every agent gone (those still there: cancelled, stdin closed, then stopped)."""
        started = [a for a in self.agents if a.p is not None]
        if any(a.p.alive() for a in started):  # type: ignore[union-attr]
            self._cancel()
        for a in started:
            with contextlib.suppress(OSError, ValueError):
                if a.p.popen.stdin:  # type: ignore[union-attr]
                    a.p.popen.stdin.close()  # type: ignore[union-attr]
        late = self.cancelled is not None and time.time() - self.cancelled > CANCEL_WAIT
        deadline = time.time() + (0 if late else 10)
        for a in started:
            with contextlib.suppress(Exception):
                a.p.popen.wait(timeout=max(0.1, deadline - time.time()))  # type: ignore[union-attr]
        for a in started:
            proc.stop(a.p, timeout=5)  # type: ignore[arg-type]
            if self.procs is not None:
                self.procs.discard(a.p)  # type: ignore[arg-type]
            if a.reader is not None:
                a.reader.join(timeout=5)

    def _conclude(self, started: float, failed: Agent | None) -> dict:
        rows = self.merged()
        if rows:
            with self.lock:
                self.sink("timeline", rows)
        if failed is not None:
            raise XcbError(f"campaign {self.spec.campaign_id}: client host {failed.name}: "
                           f"{failed.failure()}")
        if self.rule is not None and self.level_end is None:  # the agents ended it themselves
            ends = {((a.campaign or {}).get("settings") or "") for a in self.agents}
            how = "stopped" if self.stop_event is not None and self.stop_event.is_set() else \
                "failing" if any('"ended_by": "failing"' in s for s in ends) else "hosts"
            self._end(how, rows[-1]["t"] if rows else time.time() - started)
        hosts = {a.name: {"slots": a.spec.concurrency, "files": a.spec.files,
                          "transport": getattr(a.host, "transport", None),
                          "address": getattr(a.host, "address", None),
                          "clock_offset_s": a.offset,
                          "rtt_s": (self.offsets.get(a.name) or {}).get("rtt_s"),
                          "agent_clock": (a.hello or {}).get("clock"),
                          "agent_version": (a.hello or {}).get("version")}
                 for a in self.agents}
        host_rows = {a.name: a.campaign for a in self.agents if a.campaign is not None}
        if not host_rows:
            raise XcbError(f"campaign {self.spec.campaign_id}: no client host sent its records")
        lost = {a.name: a.failure() for a in self.agents if a.lost}
        for name, why in lost.items():
            with self.lock:
                self.sink("findings", [finding(
                    self.cell_id, f"client host {name} lost mid-level ({self.spec.campaign_id})",
                    f"its agent's stream ended without its records: {why}; the level kept the "
                    f"other hosts' records and {name}'s buckets up to then",
                    "check the host (a Slurm node: `scontrol show node`); run the level again",
                    severity="error")])
        merged_bytes = sum(r["bytes"] for r in rows)
        row = merge.merge_campaigns(
            host_rows, campaign_id=self.spec.campaign_id, concurrency=self.spec.concurrency,
            level=self.level_end, hosts=hosts,
            extra={"lost": {n: {**hosts[n], "why": w} for n, w in lost.items()},
                   "timeline": {"buckets": len(rows), "bytes": merged_bytes,
                                "hosts_bytes": sum(sum(int(t.get("bytes") or 0) for t in a.timeline)
                                                   for a in self.agents)}})
        with self.lock:
            self.sink("campaigns", [row])
        return row


def run_distributed(spec: CampaignSpec, *, dest: Any, hosts: list[Any], sink: Sink,
                    source: Any = None, offsets: dict[str, dict] | None = None, cell_id: str = "",
                    procs: proc.ProcessSet | None = None, raw_dir: Path | None = None,
                    stop_event=None, transport_for: Callable[[Any], Any] | None = None) -> dict:
    """Run ``spec`` from the client ``hosts`` into ``dest``; returns the level's CAMPAIGN row."""
    if not hosts:
        raise XcbError("campaign: no client host to run from")
    if transport_for is None:
        transport_for = tf
    if spec.mode != "push" and source is not None:
        prestage(spec, dest, source, [h.name for h in hosts])
    return Coordinator(spec, dest=dest, source=source, hosts=hosts, offsets=offsets or {},
                       sink=sink, cell_id=cell_id, procs=procs, raw_dir=raw_dir,
                       transport_for=transport_for, stop_event=stop_event).run()


def prestage(spec: CampaignSpec, dest: Any, source: Any, names: list[str]) -> None:
    """TPC sources staged once, before any agent starts (two agents staging the same names at
    once could truncate a file another one already reads)."""
    seen: set[int] = set()
    for s in host_specs(spec, names).values():
        if s.files in seen:
            continue
        seen.add(s.files)
        c = Campaign(s, dest, source)
        stage_source(c.dataset, c.source_endpoint(), [c.source_name(i) for i in range(len(c.dataset))])
