"""A compromised client host's campaign agent (a real process on the coordinator's pipe): the
tables it names, the sizes it sends and the values in its rows are checked before anything is
written; what it cannot say fails its host's share in one line, and nothing lands outside the
run. Plus a Hypothesis fuzz of agent messages and of FTS and Prometheus answers."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xcbench.campaign.spec import CampaignSpec
from xcbench.scaleout import agent_messages, fts3
from xcbench.scaleout.distributed import Agent, Coordinator
from xcbench.store.rundir import RunDir
from xcbench.telemetry import prometheus as prom
from xcbench.telemetry.promapi import PromError

FUZZ = settings(deadline=None, derandomize=True, database=None, max_examples=150,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SPEC = CampaignSpec(campaign_id="lvl", files=2, file_size=1 << 20)
GOOD = {"table": "transfers", "rows": [{"transfer_id": "t1", "file_index": 0, "start_time": 1.0,
                                        "finish_time": 2.0, "file_state": "FINISHED"}]}


def _coordinator(run: RunDir) -> Coordinator:
    c = object.__new__(Coordinator)
    c.spec, c.sink = SPEC, run.append
    c.lock = __import__("threading").Lock()
    return c


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def _agent_says(tmp_path: Path, script: str) -> tuple[Agent, RunDir]:
    """Run ``script`` as the agent (its stdout the stream) and read it as the coordinator."""
    run = RunDir.create(tmp_path / "store", name="r")
    raw = run.path / "raw" / "agents" / "lvl.c1.jsonl"
    raw.parent.mkdir(parents=True, exist_ok=True)
    a = Agent(SimpleNamespace(name="c1"), None, SPEC, 0.0, raw)
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE)
    a.p = SimpleNamespace(popen=p)  # type: ignore[assignment]
    _coordinator(run)._read(a)
    p.wait(30)
    return a, run


def test_a_table_name_that_is_a_path_is_refused_and_nothing_is_written_outside(tmp_path):
    before = _files(tmp_path)
    a, run = _agent_says(tmp_path, f"""
        import json
        for t in ("../../../pwned", "/etc/cron.d/x", "transfers/../../x", "verdicts"):
            print(json.dumps({{"table": t, "rows": [{{"transfer_id": "x"}}]}}), flush=True)
        print(json.dumps({json.dumps(GOOD)}), flush=True)
    """)
    assert a.error is not None and "../../../pwned" in a.error and "not one of" in a.error
    outside = {p for p in _files(tmp_path) - before if run.path not in (p, *p.parents)}
    assert outside == {tmp_path / "store"}  # the store dir itself, nothing else
    assert sorted(p.name for p in (run.path / "records").iterdir()) == ["transfers.jsonl"]


def test_a_line_without_end_costs_the_cap_not_memory(tmp_path):
    a, _ = _agent_says(tmp_path, """
        import sys
        chunk = "x" * (1 << 20)
        for _ in range(40):  # 40 MiB without a newline, then a proper end
            sys.stdout.write(chunk)
        sys.stdout.write("\\n" + '{"end": {}}' + "\\n")
    """)
    assert a.error is not None and "longer than 8 MiB" in a.error and a.ended


def test_rows_with_values_the_merge_cannot_take_are_refused(tmp_path):
    a, run = _agent_says(tmp_path, """
        import json
        print(json.dumps({"table": "timeline", "rows": [{"wall": "soon", "t": 1}]}))
        print(json.dumps({"table": "timeline", "rows": [{"wall": 1e400 if False else 1, "t": 1,
                                                           "bytes": {"a": 1}}]}))
        print(json.dumps({"hello": ["not", "a", "mapping"]}))
    """)
    assert a.error is not None and "wall: not a finite number" in a.error
    assert a.timeline == [] and a.hello is None


_RUNS = itertools.count()


@FUZZ
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(
                        st.sampled_from(["table", "rows", "hello", "error", "end", "wall", "t",
                                         "bytes", "transfer_id", "x"]) | st.text(max_size=8),
                        c, max_size=5), max_leaves=25))
def test_fuzz_agent_messages_never_raise_and_write_only_known_tables(tmp_path, msg):
    run = RunDir.create(tmp_path / "store", name=f"r{next(_RUNS)}")
    c = _coordinator(run)
    a = Agent(SimpleNamespace(name="c1"), None, SPEC, 0.0, None)
    why = agent_messages.check(msg)
    if why is None:
        c._take(a, msg)
    for p in (run.path / "records").glob("*"):
        assert p.stem in agent_messages.AGENT_TABLES


# --- server answers ------------------------------------------------------------------------
JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                       | st.text(max_size=30),
                       lambda c: st.lists(c, max_size=4) | st.dictionaries(
                           st.sampled_from(["file_id", "file_state", "start_time", "finish_time",
                                            "filesize", "tx_duration", "retry", "file_metadata",
                                            "checksum", "reason", "attempt", "datetime",
                                            "dest_surl", "source_surl"]), c, max_size=8),
                       max_leaves=30)


class _Ctx:
    def __init__(self, files, retries):
        self.files, self.retries = files, retries

    def get(self, path):
        return json.dumps(self.retries if path.endswith("/retries") else self.files)


@FUZZ
@given(st.lists(JSONISH, max_size=4), JSONISH)
def test_fuzz_fts_answers_give_rows_or_one_line_never_a_traceback(files, retries):
    from xcbench.errors import XcbError
    try:
        rows = fts3.harvest(_Ctx(files, retries), "job1", SPEC, "cell", "fts3",
                            window=(1_700_000_000.0, 1_700_000_100.0))
    except XcbError as e:
        assert "\n" not in str(e)
        return
    timeline = fts3.timeline_rows(rows, SPEC, "cell")
    assert len(timeline) <= 100 + 2 * fts3.CLOCK_SKEW + 2


class _Client:
    url = "http://127.0.0.1:9"
    timeout = 1.0

    def __init__(self, answer):
        self.answer = answer

    def query(self, q, at=None, timeout=None):
        return self.answer

    def query_range(self, q, start, end, step):
        return self.answer

    def get(self, path, params, timeout=None):
        return self.answer

    def close(self):
        pass


PROM_ANSWER = st.recursive(st.none() | st.booleans() | st.integers() | st.floats()
                           | st.text(max_size=20),
                           lambda c: st.lists(c, max_size=4) | st.dictionaries(
                               st.sampled_from(["metric", "value", "values", "instance",
                                                "nodename", "device", "yaml", "__name__"]),
                               c, max_size=5), max_leaves=30)


@FUZZ
@given(st.lists(PROM_ANSWER, max_size=3) | PROM_ANSWER, st.booleans())
def test_fuzz_prometheus_answers_are_data_or_a_finding_never_a_traceback(tmp_path, answer, ask):
    findings: list = []
    s = prom.PrometheusSampler(_Client(answer), cell_id="c", step=None if ask else 1.0,
                               sink=lambda t, rows: findings.extend(rows),
                               raw_dir=tmp_path / "raw")
    s.start()
    s.sample(1.0, 1.0)
    try:
        s.level_end(0.0, 2.0, {})
    except PromError:  # pragma: no cover - the sampler turns it into a finding
        raise AssertionError("a PromError escaped") from None
    assert all(p.is_relative_to(tmp_path / "raw") for p in tmp_path.rglob("*"))


def test_an_agents_error_is_one_line():
    assert agent_messages.error_text({"error": "bad\n\x1b[2Jthing\r\n" + "x" * 10_000}) == \
        "bad [2Jthing " + "x" * (agent_messages.MAX_ERROR - 15)
