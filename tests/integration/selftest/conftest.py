"""The self-test modules' state fixture: the run's state home in the test's tmp dir, and after
the test no quota group of the module's ``QUOTA_GROUPS`` (name prefixes) and no registry entry
left behind."""

from __future__ import annotations

import pytest

from tests.support.quota import left_groups
from xcbench.system.cgroups import Registry


@pytest.fixture
def state(request, tmp_path, monkeypatch):
    monkeypatch.setenv("XCBENCH_STATE", str(tmp_path / "state"))
    yield tmp_path / "state"
    assert left_groups(*request.module.QUOTA_GROUPS) == [], "a quota group was left behind"
    assert Registry(tmp_path / "state").entries() == []
