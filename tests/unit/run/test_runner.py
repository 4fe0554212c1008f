"""The runner on constructed runs (no cluster): resume supersedes what did not finish, a torn
JSONL line is dropped, verdicts of cells attributed again are replaced (the conclusion, after
the runner finished the run), the stop flag."""

from __future__ import annotations

import json

from tests.support.synthrun import SynthCell
from xcbench.analysis.conclude import conclude
from xcbench.analysis.verdicts import attribution
from xcbench.matrix import Matrix
from xcbench.run.runner import Runner, RunOptions, StopFlag, _finish, open_or_create
from xcbench.store.rundir import RunDir


def _cells():
    return [SynthCell("tmpfs", None, None).cell(),
            SynthCell("cephfs", (4 << 20, 1, 4 << 20), "rep1").cell()]


def _matrix(cells) -> Matrix:
    return Matrix("m.yaml", "m", "", cells, {})


def _stopped_run(tmp_path):
    """A run whose first cell completed and whose second was interrupted mid-campaign."""
    a, b = _cells()
    run = RunDir.create(tmp_path, name="r", matrix={"path": "m.yaml"}, fingerprint=False)
    run.register_cells([a, b])
    run.set_cell(a.id, status="complete")
    run.set_cell(b.id, status="interrupted")
    run.append("transfers", [{"cell_id": a.id, "n": 1}, {"cell_id": b.id, "n": 2},
                             {"cell_id": a.id, "n": 3}])
    run.finalize("interrupted")
    with open(run.path / "records" / "transfers.jsonl", "a") as fh:
        fh.write('{"cell_id": "' + b.id[:4])  # a hard kill mid-write
    return run, a, b


def test_resume_supersedes_the_records_of_unfinished_cells_and_drops_a_torn_line(tmp_path):
    run, a, b = _stopped_run(tmp_path)
    assert (run.path / "transfers.parquet").exists()
    again = open_or_create(_matrix([a, b]), RunOptions(resume=run.path))
    kept = [json.loads(x) for x in (run.path / "records" / "transfers.jsonl").read_text().splitlines()]
    assert [r["n"] for r in kept] == [1, 3]
    old = [json.loads(x) for x in
           (run.path / "records" / "superseded" / "transfers.jsonl").read_text().splitlines()]
    assert [r["n"] for r in old] == [2]
    assert not list(run.path.glob("*.parquet"))  # derived: rewritten by finalize()
    m = json.loads((run.path / "manifest.json").read_text())
    assert m["status"] == "running" and len(m["resumed"]) == 1
    assert again.cells[a.id].done and not again.cells[b.id].done


def test_resume_of_a_finished_run_moves_nothing(tmp_path):
    a, _ = _cells()
    run = RunDir.create(tmp_path, name="r", fingerprint=False)
    run.register_cells([a])
    run.set_cell(a.id, status="degraded")
    run.append("transfers", [{"cell_id": a.id}])
    run.finalize("complete")
    RunDir.open(run.path).resume()
    assert not (run.path / "records" / "superseded").exists()
    assert len((run.path / "records" / "transfers.jsonl").read_text().splitlines()) == 1


def test_execute_runs_only_the_cells_not_done(tmp_path, monkeypatch):
    run, a, b = _stopped_run(tmp_path)
    run = open_or_create(_matrix([a, b]), RunOptions(resume=run.path))
    ran = []
    monkeypatch.setattr(Runner, "_cell", lambda self, cell: ran.append(cell.id))
    with StopFlag() as stop:
        runner = Runner(_matrix([a, b]), None, run, RunOptions(baseline=False), stop)
        runner.execute()
    assert ran == [b.id]
    assert not runner.scratch.exists()


def test_conclude_replaces_the_verdicts_of_cells_attributed_again(tmp_path, monkeypatch):
    run, a, b = _stopped_run(tmp_path)
    run = open_or_create(_matrix([a, b]), RunOptions(resume=run.path))
    run.append("verdicts", [{"cell_id": a.id, "verdict": "gateway", "concurrency": 1},
                            {"cell_id": b.id, "verdict": "old", "concurrency": 1}])
    run.set_cell(b.id, status="complete")
    monkeypatch.setattr(attribution, "attribute_data", lambda rd, others=(): [
        {"cell_id": b.id, "verdict": "storage-bandwidth", "concurrency": 1}])
    _finish(run, "complete")
    rd = conclude(run)
    want = sorted([(a.id, "gateway"), (b.id, "storage-bandwidth")])
    for v in (RunDir.open(run.path).table("verdicts"), rd.stored_verdicts):  # the Parquet, and as loaded
        assert sorted(zip(v["cell_id"], v["verdict"], strict=True)) == want
    assert (run.path / "verdicts.parquet").exists()
    m = json.loads((run.path / "manifest.json").read_text())
    assert m["status"] == "complete"  # the resume said it dropped the torn line, nothing else
    assert m["warnings"] == ["records/transfers.jsonl: 1 torn line(s) dropped (a hard kill mid-write)"]
    # in the records too: a resume drops the Parquet files and the verdicts stay
    RunDir.open(run.path).resume()
    v = RunDir.open(run.path).table("verdicts")
    assert sorted(zip(v["cell_id"], v["verdict"], strict=True)) == want


def test_conclude_records_an_attribution_failure_as_a_warning(tmp_path, monkeypatch):
    run, a, b = _stopped_run(tmp_path)
    run = open_or_create(_matrix([a, b]), RunOptions(resume=run.path))

    def boom(rd, others=()):
        raise ValueError("no data")
    monkeypatch.setattr(attribution, "attribute_data", boom)
    _finish(run, "complete")
    conclude(run)
    m = json.loads((run.path / "manifest.json").read_text())
    assert m["status"] == "partial"  # cell b is not done
    assert m["warnings"][-1] == "attribution: ValueError: no data"


def test_a_full_disk_at_the_final_manifest_is_one_warning_and_a_resumable_run(tmp_path, monkeypatch):
    """The store fills for good just before the run ends, and the run began with too little room
    for its reserve slots (xcbench.store.reserve): no traceback, one line that says the run is
    resumable and how, and the manifest on disk stays whole."""
    import errno

    import xcbench.store.rundir as store
    from xcbench.store import reserve
    a, b = _cells()
    run = RunDir.create(tmp_path, name="r", matrix={"path": "m.yaml"}, fingerprint=False)
    reserve.release(run.path)  # as make() leaves a disk with no room for them
    run.register_cells([a, b])
    run.set_cell(a.id, status="complete")
    run.append("transfers", [{"cell_id": a.id, "n": 1}])
    before = (run.path / "manifest.json").read_text()

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(store, "write_json", full)
    run.set_cell(b.id, status="complete")  # measured, but the manifest cannot say so any more
    _finish(run, "complete")  # must not raise
    conclude(run)
    assert (run.path / "manifest.json").read_text() == before  # whole, and where it was
    said = [w for w in run.state.warnings if "manifest.json not updated" in w]
    assert len(said) == 1 and "\n" not in said[0]
    assert "No space left on device" in said[0] and f"xcbench run --resume {run.path}" in said[0]
    monkeypatch.undo()  # room again: the resume finishes the run and loses no record
    again = open_or_create(_matrix([a, b]), RunOptions(resume=run.path))
    assert again.cells[a.id].status == "complete" and again.cells[b.id].status == "pending"
    assert list(again.table("transfers")["n"]) == [1]
