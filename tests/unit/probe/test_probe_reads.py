"""Read probes: a reading cell gets the sequential read job, and a random-read job of its
campaign's access size when it reads with access random/readv."""

from __future__ import annotations

import pytest

from tests.support.fio_parse import parse_only
from xcbench.backends.base import Target
from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.errors import XcbError
from xcbench.probe import jobfiles, jobs
from xcbench.probe.fio import jobfile_options
from xcbench.probe.job_settings import DEFAULT_ACCESS, settings


class Reading:
    """A cell with a direction (the matrix's direction dimension), whatever Cell has yet."""

    def __init__(self, cell: Cell, direction: str):
        self._cell, self.direction = cell, direction

    def __getattr__(self, name):
        return getattr(self._cell, name)


def _rados(access=None, patterns=None) -> Cell:  # access: a mapping, or just the pattern
    return Cell(id="rd1", label="rados su=4M sc=1 os=4M ec2+1", backend="rados",
                layout=Layout(4 << 20, 1, 4 << 20), pool=PoolSpec("erasure", k=2, m=1),
                file_size=16 << 20, campaign={"access": access} if access else {},
                probe={"runtime": 2, **({"patterns": patterns} if patterns else {})})


def test_a_write_cell_keeps_its_jobs():
    p = settings(_rados(patterns=["write"]))
    assert p["jobs"] == ["write"] and p["rr_bs"] is None


@pytest.mark.parametrize("direction", ["read", "mixed"])
def test_a_reading_cell_always_gets_the_sequential_read(direction):
    p = settings(Reading(_rados(patterns=["write"]), direction))
    assert p["jobs"] == ["write", "read"]


def test_random_access_adds_a_randread_job_of_the_access_size(tmp_path):
    cell = Reading(_rados({"pattern": "random", "size": "64K", "count": 8}, ["write"]), "read")
    p = settings(cell)
    assert p["jobs"] == ["write", "read", "randread"] and p["rr_bs"] == 64 << 10
    target = Target(cell_id=cell.id, backend="rados", pool="xcb-ec2-1", layout=cell.layout)
    prefixes = jobfiles.name_prefixes(cell, [])
    (text,) = jobfiles.render_jobs(cell, target, p, prefixes=prefixes, conf="/x.conf", ceph_id="admin")
    _, jobs = jobfile_options(text)
    assert list(jobs) == ["write", "read", "randread"]
    assert (jobs["randread"]["rw"], jobs["randread"]["bs"]) == ("randread", str(64 << 10))
    assert jobs["randread"]["touch_objects"] == "0"
    names = jobfiles.object_names(cell, p, prefixes)
    # the randread job reads objects xcbench writes first, and removes afterwards
    assert "xcb-probe.rd1.randread.0.3" in names and "xcb-probe.rd1.read.0.3" in names
    parse_only(tmp_path, text)


def test_readv_on_files_is_probed_as_random_reads_aligned_for_direct_io(tmp_path):
    cell = Reading(Cell(id="fs1", label="cephfs", backend="cephfs", layout=Layout(4 << 20, 1, 4 << 20),
                        pool=PoolSpec("replicated"), file_size=32 << 20,
                        campaign={"access": {"pattern": "readv", "size": 1000, "count": 16}}), "mixed")
    p = settings(cell)
    assert p["rr_bs"] == 4096  # 1000 B rounded up to the O_DIRECT block
    target = Target(cell_id=cell.id, backend="cephfs", path="/mnt/x", layout=cell.layout)
    (text,) = jobfiles.render_jobs(cell, target, p, prefixes=jobfiles.name_prefixes(cell, []))
    _, jobs = jobfile_options(text)
    assert jobs["randread"]["bs"] == "4096" and jobs["randread"]["size"] == str(32 << 20)
    parse_only(tmp_path, text)


def test_an_access_without_a_size_reads_the_default_piece():
    p = settings(Reading(_rados("random"), "read"))
    assert p["rr_bs"] == DEFAULT_ACCESS


def test_full_file_reads_add_no_randread():
    p = settings(Reading(_rados({"pattern": "full"}), "read"))
    assert "randread" not in p["jobs"]


def test_a_bad_access_size_is_one_line_naming_cell_and_field():
    with pytest.raises(XcbError, match=r"cell rd1: probe: campaign.access.size: 'lots'"):
        settings(Reading(_rados({"pattern": "random", "size": "lots"}), "read"))


def test_each_probe_run_names_its_objects_anew(tmp_path, monkeypatch):
    """Two probes of the same cell (two hosts running the same matrix on one pool) use
    different object names, so neither removes the other's objects."""
    cell = Reading(_rados(patterns=["write"]), "write")
    target = Target(cell_id=cell.id, backend="rados", pool="xcb-ec2-1", layout=cell.layout)
    seen: list[list[str]] = []

    class Stop(Exception):
        pass

    def capture(cell, target, p, *, prefixes, **kw):
        seen.append(list(prefixes))
        raise Stop
    monkeypatch.setattr(jobs, "check_target", lambda *a: None)
    monkeypatch.setattr(jobs, "probe_conf", lambda *a: "/x.conf")
    monkeypatch.setattr(jobs, "render_jobs", capture)

    class C:
        ceph_id = "admin"
    for _ in range(2):
        with pytest.raises(Stop):
            jobs.run_probe(cell, target, cluster=C(), workdir=tmp_path, sink=None)
    (a,), (b,) = seen
    assert a != b and a.startswith(f"xcb-probe.{cell.id}.") and b.startswith(f"xcb-probe.{cell.id}.")
