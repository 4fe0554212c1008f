"""The direction dimension and the read campaign keys: crossed like streams, write cells keep
their ids, bad values one line naming file, cell or entry, and field."""

from __future__ import annotations

import pytest

from tests.support.matrices import TMPFS as BASE
from tests.support.matrices import load_text as load
from xcbench.errors import XcbError
from xcbench.matrix import cell_id


def test_direction_is_crossed_and_write_keeps_the_old_id(tmp_path):
    plain = load(tmp_path).cells[0]
    m = load(tmp_path, base=BASE.replace("files: 4}", "files: 4, direction: [write, read, mixed]}"))
    by = {c.direction: c for c in m.cells}
    assert set(by) == {"write", "read", "mixed"}
    assert by["write"].id == plain.id  # the default direction leaves the id alone
    assert "direction" not in by["write"].settings()
    assert by["read"].settings()["direction"] == "read"
    assert by["read"].id == cell_id(by["read"].settings()) != plain.id
    assert by["mixed"].label.endswith(" mixed") and by["write"].label == plain.label
    assert m.manifest()["cells"][plain.id]["direction"] == "write"


def test_exclude_by_direction(tmp_path):
    m = load(tmp_path, """
    exclude:
      - {direction: mixed}
    """, base=BASE.replace("files: 4}", "files: 4, direction: [write, mixed]}"))
    assert [c.direction for c in m.cells] == ["write"]


@pytest.mark.parametrize("extra, field, words", [
    ("direction: sideways", "direction", "not one of write, read, mixed"),
    ("campaign: {read_fraction: 1}", "read_fraction", "between 0 and 1"),
    ("campaign: {read_fraction: nan}", "read_fraction", "between 0 and 1"),
    ("campaign: {access: {pattern: zigzag}}", "access.pattern", "not one of full"),
    ("campaign: {access: {pattern: readv, size: 4M}}", "access.size", "readv chunk limit"),
    ("campaign: {access: {pattern: readv, count: 5000}}", "access.count", "readv limit"),
    ("campaign: {access: {pattern: random, size: 0}}", "access.size", ">= 1"),
    ("campaign: {access: {pattern: random, count: -1}}", "access.count", "not an integer"),
    ("campaign: {access: {pattern: full, size: 4K}}", "access.size", "whole files"),
    ("campaign: {access: {pattern: random, depth: 3}}", "access.depth", "unknown key"),
])
def test_bad_read_settings_name_file_and_field(tmp_path, extra, field, words):
    line = _refusal(tmp_path, extra)
    assert line.startswith(str(tmp_path / "m.yaml")) and f"{field}:" in line and words in line


@pytest.mark.parametrize("extra, field, words", [
    ("direction: read\n    modes: [tpc-http]", "direction", "mode push"),
    ("direction: read\n    campaign: {client: gfal2, access: {pattern: readv}}",
     "campaign.access", "XRootD client"),
    ("direction: mixed\n    campaign: {client: http}", "campaign.client", "http reads only"),
    ("campaign: {client: http}", "campaign.client", "read client"),
])
def test_cells_that_cannot_read_are_refused_at_load(tmp_path, extra, field, words):
    line = _refusal(tmp_path, extra)
    assert ": cell tmpfs" in line and f": {field}: " in line and words in line


def _refusal(tmp_path, tmpfs_keys: str) -> str:
    """The first line of the error loading the matrix whose tmpfs backend has ``tmpfs_keys``."""
    base = BASE.replace("  tmpfs: {size: 1G}", "  tmpfs:\n    size: 1G\n    " + tmpfs_keys)
    with pytest.raises(XcbError) as e:
        load(tmp_path, base=base)
    return str(e.value).splitlines()[0]


def test_read_dataset_must_fit_a_tmpfs(tmp_path):
    base = BASE.replace("files: 4}", "files: 40, direction: read}").replace("1G", "64M")
    with pytest.raises(XcbError, match=r"files: the read dataset .* does not fit"):
        load(tmp_path, base=base)


def test_good_read_settings_load(tmp_path):
    base = BASE.replace("  tmpfs: {size: 1G}", "  tmpfs:\n    size: 1G\n    direction: [read, mixed]\n"
                        "    campaign: {read_fraction: 0.25, access: {pattern: readv, size: 64K, "
                        "count: 8}}")
    m = load(tmp_path, base=base)
    assert {c.direction for c in m.cells} == {"read", "mixed"}
    assert m.cells[0].campaign["access"] == {"pattern": "readv", "size": "64K", "count": 8}
