"""fio job templates: rendering from a cell, StrictUndefined, and fio's own --parse-only check."""

from __future__ import annotations

import pytest

from tests.support.fio_parse import parse_only
from xcbench.backends.base import Target
from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.errors import XcbError
from xcbench.probe import jobfiles
from xcbench.probe.fio import jobfile_options
from xcbench.probe.job_settings import MAX_BS, settings
from xcbench.system.templates import render

RADOS_CTX = dict(cell_id="c1", label="rados su=4M sc=1 os=4M rep1", conf="/etc/ceph/ceph.conf",
                 ceph_id="admin", pool="xcb-rep1", prefix="xcb-probe.c1",
                 patterns=["randwrite", "write", "read"], runtime=3, ramp=1, iodepth=8, numjobs=2,
                 objects=4, iops_objects=16, object_size=4 << 20, bw_bs=4 << 20, ss=None)
FILES_CTX = dict(cell_id="c2", label="tmpfs 1G", directory="/dev/shm/x", prefix="xcb-probe.c2",
                 patterns=["randwrite", "write", "read"], runtime=3, ramp=0, ioengine="libaio",
                 direct=1, iodepth=8, numjobs=1, file_size=64 << 20, bw_bs=4 << 20, ss=None)




def test_rados_template(tmp_path):
    text = render("xcbench.fio_jobs", "rados.fio.j2", **RADOS_CTX)
    glob, jobs = jobfile_options(text)
    assert glob["ioengine"] == "rados" and glob["pool"] == "xcb-rep1"
    assert glob["clientname"] == "admin" and glob["conf"] == "/etc/ceph/ceph.conf"
    assert glob["filename_format"] == "xcb-probe.c1.$jobname.$jobnum.$filenum"
    assert list(jobs) == ["randwrite", "write", "read"]
    assert (jobs["randwrite"]["rw"], jobs["randwrite"]["bs"]) == ("randwrite", "4096")
    assert jobs["randwrite"]["nrfiles"] == "16"
    assert jobs["randwrite"]["size"] == str(16 * (4 << 20))
    assert (jobs["write"]["rw"], jobs["write"]["bs"], jobs["write"]["nrfiles"]) == \
        ("write", str(4 << 20), "4")
    assert jobs["read"]["touch_objects"] == "0"
    for job in jobs.values():
        assert job["iodepth"] == "8" and job["numjobs"] == "2" and "stonewall" in job
        assert "steadystate" not in job
    assert "; IOPS" in text and "; Bandwidth" in text  # comments say what each job measures
    parse_only(tmp_path, text)


def test_files_template_and_steady_state(tmp_path):
    ss = {"ss": "iops_slope:0.3%", "ss_dur": 20, "ss_ramp": 5}
    text = render("xcbench.fio_jobs", "files.fio.j2", **{**FILES_CTX, "ss": ss,
                                                         "patterns": ["write"]})
    glob, jobs = jobfile_options(text)
    assert glob["ioengine"] == "libaio" and glob["direct"] == "1"
    assert glob["directory"] == "/dev/shm/x" and glob["unlink"] == "1"
    assert list(jobs) == ["write"]
    assert jobs["write"]["steadystate"] == "iops_slope:0.3%"
    assert (jobs["write"]["ss_dur"], jobs["write"]["ss_ramp"]) == ("20", "5")
    assert jobs["write"]["size"] == str(64 << 20)
    parse_only(tmp_path, text)


@pytest.mark.parametrize("template,ctx,missing", [
    ("rados.fio.j2", RADOS_CTX, "pool"),
    ("rados.fio.j2", RADOS_CTX, "iops_objects"),
    ("files.fio.j2", FILES_CTX, "direct"),
    ("files.fio.j2", FILES_CTX, "ss"),
])
def test_missing_variable_fails_loudly(template, ctx, missing):
    ctx = {k: v for k, v in ctx.items() if k != missing}
    with pytest.raises(XcbError, match=f"{template}.*'{missing}' is undefined"):
        render("xcbench.fio_jobs", template, **ctx)


def test_render_jobs_from_a_cell(tmp_path):
    cell = Cell(id="abc123", label="rados su=1M sc=4 os=4M ec2+1", backend="rados",
                layout=Layout(1 << 20, 4, 4 << 20), pool=PoolSpec("erasure", k=2, m=1),
                probe={"runtime": 2, "iodepth": 4, "numjobs": 3, "size": 32 << 20,
                       "patterns": ["read", "randwrite"], "ss": "bw_slope:1%", "ss_dur": 1})
    target = Target(cell_id=cell.id, backend="rados", pool="xcb-ec2-1", layout=cell.layout)
    p = settings(cell)
    assert p["patterns"] == ["randwrite", "read"]  # writes first, whatever the order given
    assert p["bw_bs"] == 4 << 20  # object-sized
    prefixes = jobfiles.name_prefixes(cell, ["127.0.0.1:1", "127.0.0.1:2"])
    texts = jobfiles.render_jobs(cell, target, p, prefixes=prefixes, conf="/x.conf", ceph_id="admin")
    assert len(texts) == 2
    glob, jobs = jobfile_options(texts[1])
    assert glob["filename_format"].startswith("xcb-probe.abc123.h1.")
    assert jobs["read"]["nrfiles"] == "8" and jobs["randwrite"]["nrfiles"] == "16"
    assert jobs["read"]["numjobs"] == "3" and jobs["read"]["steadystate"] == "bw_slope:1%"
    names = jobfiles.object_names(cell, p, prefixes)
    assert len(names) == 2 * 3 * (16 + 8)
    assert "xcb-probe.abc123.h0.read.2.7" in names
    parse_only(tmp_path, texts[0])


def test_settings_defaults_and_errors():
    cell = Cell(id="t1", label="tmpfs", backend="tmpfs", tmpfs_size=1 << 30, file_size=16 << 20)
    p = settings(cell)
    assert p["patterns"] == ["randwrite", "write", "read"]
    assert (p["runtime"], p["iodepth"], p["numjobs"], p["size"]) == (10, 16, 1, 16 << 20)
    assert p["bw_bs"] == 4 << 20 and p["ss_spec"] is None
    with pytest.raises(XcbError, match="cell t1: probe: patterns: 'randread'"):
        settings(cell, ["randread"])
    big = Cell(id="t2", label="cephfs", backend="cephfs", layout=Layout(4 << 20, 1, 128 << 20),
               pool=PoolSpec("replicated"), file_size=1 << 30)
    assert settings(big)["bw_bs"] == MAX_BS  # 128 MiB writes exceed osd_max_write_size
