"""Typed manifest: the one place of the schema version and its upgrade; JSON round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcbench.errors import XcbError
from xcbench.store.manifest import SCHEMA_VERSION, CellState, Manifest
from xcbench.store.upgrade import TABLES_VERSION


def test_a_schema_1_manifest_becomes_typed_state():
    m = Manifest.from_dict({"schema_version": 1, "run_id": "old", "start": "s", "end": "e",
                            "status": "complete", "matrix": None,
                            "cells": {"abc": {"status": "complete", "target": {"path": "/x"}},
                                      "def": {}}}, Path("/store/old"))
    assert m.schema_version == SCHEMA_VERSION and m.upgraded_from == 1
    assert m.fingerprint == {}
    assert isinstance(m.cells["def"], CellState)
    assert m.cells["def"].status == "complete" and m.cells["def"].label == "def"
    assert m.cells["abc"].extra == {"target": {"path": "/x"}} and m.cells["abc"].done


def test_a_schema_0_manifest_with_a_list_of_cells_gets_its_run_id_from_the_path():
    m = Manifest.from_dict({"cells": [{"id": "abc", "label": "tmpfs"}]}, Path("/store/older"))
    assert m.upgraded_from == 0 and m.run_id == "older" and m.status == "unknown"
    assert m.cells["abc"].label == "tmpfs" and m.cells["abc"].status == "unknown"


def test_current_manifest_round_trips_unknown_keys_included():
    data = {"schema_version": SCHEMA_VERSION, "tables_version": TABLES_VERSION, "run_id": "r", "start": "s", "end": None,
            "status": "complete", "matrix": {"path": "m.yaml"}, "fingerprint": {"host": {}},
            "options": {"repeats": None}, "warnings": ["w"], "future_key": [1],
            "cells": {"c": {"label": "l", "status": "failed", "error": "e", "settings": {},
                            "seconds": 1.5}}}
    m = Manifest.from_dict(data, Path("r"))
    assert m.upgraded_from is None and m.extra == {"future_key": [1]}
    assert m.to_dict() == data


def test_a_newer_schema_is_refused():
    with pytest.raises(XcbError, match=r"schema_version 4 is newer than this xcbench"):
        Manifest.from_dict({"schema_version": SCHEMA_VERSION + 1}, Path("r"))


def test_cell_update_sorts_known_fields_from_extra():
    c = CellState()
    c.update({"status": "running", "verify": {"ok": True}})
    assert c.status == "running" and c.extra == {"verify": {"ok": True}}
    assert c.to_dict() == {"label": "", "settings": {}, "status": "running", "verify": {"ok": True}}
