"""A command loads each run it shows once: one RunData, handed to the verdicts, the HTML and
Markdown reports and the closing table (xcbench.analysis.conclude for a run just made; `report`,
`compare`, `plan --calibrate` for stored runs). Counted by wrapping RunData's constructor while
each command's conclude path runs on a small stored run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.synthrun import SynthCell, make_run
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.cli import build_parser, main
from xcbench.commands import run as run_cmd
from xcbench.run.runner import RunStopped
from xcbench.selftest import capping
from xcbench.store.rundir import RunDir

M4 = 4 << 20


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    """A small finished run (two cells, two levels) with no verdicts stored yet."""
    cells = [SynthCell("tmpfs", concurrency=(1, 4), files=12, file_size=M4, repeats=1),
             SynthCell("cephfs", (M4, 1, M4), "rep1", concurrency=(1, 4), files=12, file_size=M4,
                       repeats=1, fio_bw=300e6)]
    path, _ = make_run(tmp_path_factory.mktemp("stored"), cells, name="small")
    for f in [path / "verdicts.parquet", path / "records" / "verdicts.jsonl"]:
        f.unlink(missing_ok=True)
    return path


@pytest.fixture
def copy(stored, tmp_path) -> Path:
    dest = tmp_path / "store" / stored.name
    shutil.copytree(stored, dest)
    return dest


@pytest.fixture
def loads(monkeypatch) -> list[str]:
    """The run ids of every RunData made from now on."""
    made: list[str] = []
    init = RunData.__init__

    def counted(self, run):
        init(self, run)
        made.append(self.run_id)
    monkeypatch.setattr(RunData, "__init__", counted)
    return made


@pytest.mark.parametrize("flags", [[], ["--format", "md"], ["--json"], ["--no-report"]])
def test_run_and_demo_conclude_from_one_load(copy, loads, monkeypatch, flags, capsys):
    """`xcbench run` and `demo` (both end in commands.run.execute): the verdicts, both reports and
    the closing table from one RunData."""
    monkeypatch.setattr(run_cmd, "run_matrix", lambda *a, **kw: RunDir.open(copy))
    opts = run_cmd.options(build_parser().parse_args(["run", "m.yaml", "--store", str(copy.parent),
                                                      *flags]))
    assert run_cmd.execute(None, None, opts) == 0
    out = capsys.readouterr().out
    assert loads == [copy.name]
    run = RunDir.open(copy)
    assert len(run.table("verdicts")) == 4  # 2 cells x 2 levels, stored
    report = "--no-report" not in flags
    assert (copy / "report.html").exists() == (report and "md" not in flags)
    assert (copy / "report.md").exists() == report
    if "--json" in flags:  # the closing table, as data
        assert len(json.loads(out)["points"]) == 4
    else:
        assert "what capped each level" in out and "verdicts: " in out


def test_an_interrupted_run_is_concluded_from_one_load(copy, loads, monkeypatch):
    def stopped(*a, **kw):
        raise RunStopped(RunDir.open(copy))
    monkeypatch.setattr(run_cmd, "run_matrix", stopped)
    opts = run_cmd.options(build_parser().parse_args(["run", "m.yaml", "--store", str(copy.parent)]))
    assert run_cmd.execute(None, None, opts) == 130
    assert loads == [copy.name] and len(RunDir.open(copy).table("verdicts")) == 4


def test_a_self_test_run_is_concluded_from_one_load(copy, loads, monkeypatch):
    monkeypatch.setattr(capping, "run_matrix", lambda *a, **kw: RunDir.open(copy))
    run = capping.run_concluded(None, None, capping.options(copy.parent, "x"))
    assert loads == [copy.name] and len(run.table("verdicts")) == 4


@pytest.mark.parametrize("fmt", [["--format", "html"], ["--format", "md"], ["--format", "text"],
                                 ["--json"]])
def test_report_loads_each_run_once(copy, loads, fmt, capsys):
    other = copy.parent / "other"
    shutil.copytree(copy, other)
    assert main(["report", str(copy), *fmt]) == 0
    assert loads == [copy.name]
    if "html" in fmt:  # two runs render as Markdown does, with their plots (seconds more)
        return
    loads.clear()
    assert main(["report", str(copy), str(other), *fmt, "--out", str(copy.parent / "both")]) == 0
    assert sorted(loads) == sorted([copy.name, "other"])


def test_compare_loads_each_run_once(copy, loads, capsys):
    other = copy.parent / "other"
    shutil.copytree(copy, other)
    assert main(["compare", str(copy), str(other)]) == 0
    assert sorted(loads) == sorted([copy.name, "other"])


def test_plan_calibrate_loads_each_run_once(copy, loads, capsys):
    assert main(["plan", "--target", "hl-lhc-t1", "--calibrate", str(copy)]) == 0
    assert loads == [copy.name]
