"""The result store under faults: torn lines, an atomic resume, rows that cannot be written."""

from __future__ import annotations

import errno
import json
import os

from tests.support.synthrun import SynthCell, make_run
from xcbench.analysis.report.document import render_report
from xcbench.campaign.rows import Buffered
from xcbench.store import reserve
from xcbench.store.manifest import LostRows, Manifest
from xcbench.store.rundir import RunDir, read_jsonl
from xcbench.telemetry.base import Sampler, TelemetryRunner


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path, capsys):
    jl = tmp_path / "t.jsonl"
    jl.write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": "y"}\n{"a": 3, "b')
    df = read_jsonl(jl)
    assert list(df["a"]) == [1, 2]
    assert "torn last record skipped" in capsys.readouterr().err


def test_appending_after_a_torn_line_starts_a_new_line_and_resume_drops_it(tmp_path):
    run = RunDir.create(tmp_path, name="r", fingerprint=False)
    jl = run.path / "records" / "t.jsonl"
    jl.write_text('{"n": 1}\n{"n": 2')  # a kill mid-write
    run.append("t", [{"n": 3}])
    run.close()
    assert jl.read_text() == '{"n": 1}\n{"n": 2\n{"n": 3}\n'  # the new record is whole
    again = RunDir.open(run.path)
    again.resume()
    assert list(again.table("t")["n"]) == [1, 3]


def test_resume_rewrites_atomically_and_a_finished_run_loses_only_the_torn_line(tmp_path, monkeypatch):
    run = RunDir.create(tmp_path, name="r", fingerprint=False)
    run.state.cell("a").status = "complete"
    run.append("t", [{"cell_id": "a", "n": 1}])
    run.finalize("complete")
    jl = run.path / "records" / "t.jsonl"
    with open(jl, "a") as fh:
        fh.write('{"cell_id": "a", "n"')
    replaced = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (replaced.append((str(a), str(b))), real(a, b)))
    again = RunDir.open(run.path)
    again.resume()
    assert (str(jl.with_suffix(".jsonl.tmp")), str(jl)) in replaced
    assert [json.loads(x)["n"] for x in jl.read_text().splitlines()] == [1]
    assert any("torn" in w for w in again.state.warnings or [])
    assert not list((run.path / "records").glob("*.tmp"))


def test_rows_that_cannot_be_written_are_counted_not_raised(tmp_path, monkeypatch):
    run = RunDir.create(tmp_path, name="r", fingerprint=False)
    run.append("samples", [{"v": 1}])
    import xcbench.store.rundir as store

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(store, "write_all", full)
    run.append("samples", [{"v": 2}, {"v": 3}])
    run.append("samples", [{"v": 4}])
    run.append("transfers", [{"v": 5}])
    m = json.loads((run.path / "manifest.json").read_text())
    assert m["lost_rows"]["samples"]["rows"] >= 2 and "ENOSPC" not in m["lost_rows"]["samples"]["error"]
    assert "No space left" in m["lost_rows"]["samples"]["error"]
    monkeypatch.undo()
    run.finalize("complete")
    state = RunDir.open(run.path).state
    assert state.lost_rows["samples"] == LostRows(3, state.lost_rows["samples"].error,
                                                  state.lost_rows["samples"].first,
                                                  state.lost_rows["samples"].last)
    assert state.lost_rows["transfers"].rows == 1
    assert any(w.startswith("records lost: samples: 3 rows") for w in state.warnings)
    assert list(run.table("samples")["v"]) == [1]


def test_a_full_disk_whose_room_others_take_still_gets_the_manifest(tmp_path, monkeypatch):
    """Every new block is taken (another writer fills the disk): each save still lands, in the
    blocks the run's slots hold, and the slots are kept for the saves after it."""
    import xcbench.store.rundir as store
    run = RunDir.create(tmp_path, name="r", fingerprint=False)
    slots = {s: os.stat(run.path / s).st_blocks for s in reserve.SLOTS}
    assert all(b * 512 >= reserve.RESERVE for b in slots.values())  # allocated, not sparse

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(store, "write_json", full)
    monkeypatch.setattr(store, "write_all", full)
    for n in range(1, 4):
        run.append("samples", [{"v": n}])
        run.state.cell(f"c{n}").status = "complete"
        assert run.save_manifest() and run.unsaved is None
        m = json.loads((run.path / "manifest.json").read_text())  # padded with spaces: whole
        assert m["lost_rows"]["samples"]["rows"] == n and f"c{n}" in m["cells"]
        big = [s for s in reserve.SLOTS if os.stat(run.path / s).st_size >= reserve.RESERVE]
        assert big, "a full-size slot is left for the next save"
    assert os.stat(run.path / "manifest.json").st_size == reserve.RESERVE
    monkeypatch.undo()  # room again: the final manifest is compact and the slots are gone
    run.finalize("complete")
    assert os.stat(run.path / "manifest.json").st_size < reserve.RESERVE
    assert not [p.name for p in run.path.iterdir() if p.name.startswith(".reserve")]
    assert RunDir.open(run.path).state.lost_rows["samples"].rows == 3


def test_a_manifest_larger_than_a_slot_is_not_saved_and_the_old_one_stays(tmp_path, monkeypatch):
    import xcbench.store.rundir as store
    run = RunDir.create(tmp_path, name="r", fingerprint=False)
    before = (run.path / "manifest.json").read_text()

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(store, "write_json", full)
    run.state.warn("x" * reserve.RESERVE)
    assert not run.save_manifest()
    assert "no reserve slot" in run.unsaved
    assert (run.path / "manifest.json").read_text() == before
    assert all(os.stat(run.path / s).st_size == reserve.RESERVE for s in reserve.SLOTS)


def test_a_short_write_is_cut_back_to_whole_lines(tmp_path, monkeypatch):
    run = RunDir.create(tmp_path, name="r", fingerprint=False)
    run.append("t", [{"n": 1}])
    calls = []
    real = os.write

    def half(fd, data):
        calls.append(1)
        if len(calls) == 1:
            return real(fd, bytes(data[:5]))  # the disk filled after 5 bytes
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "write", half)
    run.append("t", [{"n": 2, "pad": "x" * 100}])
    monkeypatch.undo()
    run.close()
    assert (run.path / "records" / "t.jsonl").read_text() == '{"n": 1}\n'
    assert run.state.lost_rows["t"].rows == 1


def test_manifest_lost_rows_round_trip(tmp_path):
    m = Manifest(run_id="r")
    assert m.lost("samples", 4, "OSError: [Errno 28] No space left on device")
    assert not m.lost("samples", 1, "OSError: [Errno 28] No space left on device")
    back = Manifest.from_dict(m.to_dict(), tmp_path)
    assert back.lost_rows["samples"].rows == 5 and back.lost_rows["samples"].first
    assert "lost_rows" not in Manifest(run_id="r").to_dict()


def test_the_report_says_what_was_lost(tmp_path):
    path, _ = make_run(tmp_path, [SynthCell("tmpfs", concurrency=(2,), files=8)])
    run = RunDir.open(path)
    run.state.lost("samples", 17, "OSError: [Errno 28] No space left on device")
    run.save_manifest()
    html = render_report([path], "html", tmp_path / "r.html").read_text()
    assert "Records lost" in html and ">17<" in html and "No space left on device" in html
    md = render_report([path], "md", tmp_path / "r.md").read_text()
    assert "| samples | 17 | OSError: [Errno 28] No space left on device |" in md


class _Counter(Sampler):
    name = "count"

    def sample(self, wall, mono):
        return [self.row(wall, mono, "n", 1.0)]


def test_a_failing_telemetry_sink_loses_rows_but_sampling_goes_on():
    calls = []

    def sink(table, rows):
        calls.append(table)
        raise OSError(errno.ENOSPC, "No space left on device")
    tr = TelemetryRunner([_Counter()], interval=0.01, sink=sink)
    with tr:
        while len(calls) < 5:
            pass
    assert tr.lost["samples"]["rows"] >= 5 and "No space left" in tr.lost["samples"]["error"]
    assert tr.ticks >= 5


def test_a_failing_campaign_sink_is_counted_and_the_flush_goes_on():
    seen = []

    def sink(table, rows):
        if table == "timeline":
            raise OSError(errno.EIO, "I/O error")
        seen.append(table)
    out = Buffered(sink)
    out.add("timeline", [{"t": 1}, {"t": 2}])
    out.add("transfers", [{"i": 1}])
    out.flush()
    out.add("timeline", [{"t": 3}])
    out.flush()
    assert seen == ["transfers"]
    assert out.lost["timeline"]["rows"] == 3 and "I/O error" in out.lost["timeline"]["error"]


def test_the_campaign_monitor_and_its_optimizer_outlive_a_failing_sink():
    """Disk full behind the campaign's sink: the monitor keeps sampling the timeline and the
    optimizer keeps deciding; the rows are counted as lost."""
    import threading
    import time

    from xcbench.campaign import CampaignSpec, OptimizerSpec
    from xcbench.campaign.dispatch import Campaign
    from xcbench.campaign.drivercpu import DriverCpu
    from xcbench.campaign.rows import Timeline

    def sink(table, rows):
        raise OSError(errno.ENOSPC, "No space left on device")
    spec = CampaignSpec(files=4, file_size="1M", concurrency=4,
                        optimizer=OptimizerSpec(interval=0.5))
    c = Campaign(spec, "root://127.0.0.1:1", sink=sink)
    c.cpu = DriverCpu()  # what run() sets up before the monitor starts
    done = threading.Event()
    t = threading.Thread(target=c.monitor.loop, args=(done, Timeline("", "x", 4, 0), None))
    t.start()
    deadline = time.monotonic() + 30
    while len(c.out.kept.get("timeline", [])) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    done.set()
    t.join()
    assert len(c.out.kept["timeline"]) >= 3 and c.out.kept.get("optimizer")
    assert c.out.lost["timeline"]["rows"] >= 3 and "No space left" in c.out.lost["timeline"]["error"]
