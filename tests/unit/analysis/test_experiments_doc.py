"""docs/experiments.md states every experiment kind of analysis.verdicts.experiment_choice, the
verdicts it tests and its rivals: the page and the code do not drift apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcbench.analysis.verdicts.experiment_choice import EXPERIMENTS

DOC = (Path(__file__).parents[3] / "docs" / "experiments.md").read_text()
ROWS = {line.split("|")[1].strip(): line for line in DOC.splitlines() if line.startswith("| ")}


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_experiment_has_its_row_with_what_it_tests_and_its_rivals(name):
    row = ROWS.get(name)
    assert row is not None, f"docs/experiments.md has no row for {name!r}"
    for verdict in EXPERIMENTS[name]["tests"]:
        assert verdict in row, (name, verdict)
    for rival in EXPERIMENTS[name]["rivals"]:
        assert rival.split(" (")[0] in row, (name, rival)
