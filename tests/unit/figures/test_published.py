"""One schema of published figures (xcbench.figures.published) for a matrix's ``reference:`` and a
plan's ``published:``: the same section checked by the same validator, one line naming the file
and the field; the repository's matrices and plans valid under it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from xcbench.cli import main
from xcbench.errors import XcbError
from xcbench.figures.published import check_source, check_value
from xcbench.matrix import load_matrix
from xcbench.plan.spec import example_path, examples, load_cluster

ROOT = Path(__file__).resolve().parents[3]
MATRIX = {"name": "t", "backends": {"cephfs": {
    "layouts": [{"stripe_unit": "4M", "stripe_count": 1, "object_size": "4M"}], "pools": ["rep3"]}},
    "reference": {"source": "Someone, CHEP 2024",
                  "rows": [{"stripe_unit": "4M", "stripe_count": 1, "object_size": "4M",
                            "io_rate_gib_s": 2.8}]}}


def _problems():
    said: list[tuple[str, str]] = []
    return said, lambda name, msg: said.append((name, msg))


def test_values_in_their_units():
    said, problem = _problems()
    assert check_value("24Gb/s", "B/s", "value", problem) == (3e9,)
    assert check_value(["2GiB/s", "3GiB/s"], "B/s", "value", problem) == (2 * 2**30, 3 * 2**30)
    assert check_value(2.8, "B/s", "io_rate_gib_s", problem, scale=2**30) == (2.8 * 2**30,)
    assert check_value(1000, "op/s", "value", problem) == (1000.0,)
    assert not said
    for bad, unit in ((24, "B/s"), ("1k", "op/s"), (["3Gb/s", "1Gb/s"], "B/s"), (-1, "op/s"),
                      ([1, 2, 3], "op/s"), ("0Gb/s", "B/s")):
        said, problem = _problems()
        assert check_value(bad, unit, "value", problem) is None
        assert len(said) == 1 and said[0][0] == "value", (bad, said)


def test_the_section_around_the_figures():
    said, problem = _problems()
    head = check_source({"source": " RAL,\n CHEP 2024 ", "url": "https://x", "conditions": {"pool": "ec8+3"}},
                        problem)
    assert not said and head.source == "RAL, CHEP 2024" and head.conditions == {"pool": "ec8+3"}
    said, problem = _problems()
    check_source({"source": "", "note": 3, "conditions": [1]}, problem)
    assert [n for n, _ in said] == ["source", "note", "conditions"]


def _plan(tmp_path, **head) -> Path:
    data = yaml.safe_load(example_path("ral-dev-chep2024").read_text())
    data["published"].update(head)
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def _matrix(tmp_path, **head) -> Path:
    data = {**MATRIX, "reference": {**MATRIX["reference"], **head}}
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


@pytest.mark.parametrize("head, field, message", [
    ({"url": 5}, "url", "5 is not text"),
    ({"conditions": "EC"}, "conditions", "'EC' is not a mapping"),
    ({"source": " "}, "source", "missing: name the publication"),
])
def test_one_validator_for_both_one_line_naming_file_and_field(tmp_path, capsys, head, field, message):
    m = _matrix(tmp_path, **head)
    with pytest.raises(XcbError) as e:
        load_matrix(str(m))
    assert str(e.value).startswith(f"{m}: reference: {field}: {message}") and "\n" not in str(e.value)
    p = _plan(tmp_path, **head)
    with pytest.raises(XcbError) as e:
        load_cluster(p)
    assert str(e.value).startswith(f"{p}: published.{field}: {message}") and "\n" not in str(e.value)
    assert main(["plan", "--rate", "1Gb/s", "--cluster-spec", str(p)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_plan_may_say_where_and_on_what_like_a_matrix(tmp_path):
    spec, _ = load_cluster(_plan(tmp_path, url="https://indico.cern.ch/x", conditions={"pool": "EC 8+3"}))
    assert spec.published and all(f["url"] == "https://indico.cern.ch/x" and
                                  f["conditions"] == {"pool": "EC 8+3"} for f in spec.published)


def test_the_repositorys_matrices_and_plans_are_valid():
    refs = [p for p in sorted((ROOT / "layouts").glob("*.yaml")) if "reference:" in p.read_text()]
    assert refs, "no matrix with a reference: the test would check nothing"
    for p in refs:
        assert load_matrix(str(p)).reference["rows"], p
    published = [n for n in examples() if load_cluster(example_path(n))[0].published]
    assert len(published) >= 2
