"""Backend specifics live in backends/: no branch on a backend's name anywhere else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xcbench.backends.base import BACKENDS, Backend, Target, backend_class

ROOT = Path(__file__).resolve().parents[3]
BRANCH = re.compile(r"backend\s*(==|!=)|\.backend\s+(not\s+)?in\b")


def test_no_backend_name_branch_outside_backends():
    hits = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
            for d in ("xcbench", "analysis") for p in sorted((ROOT / d).rglob("*.py"))
            for n, line in enumerate(p.read_text().splitlines(), 1) if BRANCH.search(line)]
    assert hits == []


def test_the_pattern_catches_the_branches_it_is_for():
    for line in ('if target.backend == "rados":', "x = cell.backend != 'tmpfs'",
                 'if target.backend in ("rados", "cephfs"):'):
        assert BRANCH.search(line), line


@pytest.mark.parametrize("name", BACKENDS)
def test_every_backend_implements_the_whole_interface(name):
    cls = backend_class(name)
    assert issubclass(cls, Backend) and cls.name == name and not cls.__abstractmethods__
    t = Target(cell_id="c", backend=name)
    assert set(Backend.target_defaults) <= set(cls.target_defaults)
    assert t.fio_engine in ("files", "rados") and isinstance(t.client_env, dict)


def test_a_target_carries_what_its_backend_declares():
    rados, tmpfs = Target(cell_id="c", backend="rados"), Target(cell_id="c", backend="tmpfs")
    assert rados.shared_store and rados.ceph_conf_env and rados.osslib == "libXrdCeph.so"
    assert rados.client_env == {"XRD_CPUSEPGWRTRD": "0"} and rados.gateway_defaults["async"] is False
    assert not tmpfs.shared_store and tmpfs.osslib is None and tmpfs.client_env == {}
    rados.client_env["X"] = "1"  # a copy per target, not the class's dict
    assert "X" not in Target(cell_id="d", backend="rados").client_env
