"""Level probes: the job fio runs at each campaign level (as many jobs as transfers, new files of
the campaign's size in the gateway's write size), the settle step before it, and the noise of
its figure from fio's own interval samples (a real fio JSON+ output and its bandwidth logs)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from xcbench.backends.base import Target
from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.errors import XcbError
from xcbench.probe import levels, noise, settle
from xcbench.probe.fio import jobfile_options
from xcbench.system import proc

M = 1 << 20
DATA = Path(__file__).resolve().parents[2] / "data" / "fio"


def cell(**kw) -> Cell:
    base = dict(id="lv1", label="cephfs su=4M rep3", backend="cephfs", layout=Layout(4 * M, 1, 4 * M),
                pool=PoolSpec("replicated", size=3), file_size=16 * M, concurrency=(1, 4),
                probe={"runtime": 3, "iodepth": 4, "numjobs": 1, "size": 64 * M, "direct": False})
    return Cell(**{**base, **kw})


def render(c: Cell, level: int, kind: str, tmp_path: Path, target: Target | None = None) -> dict:
    t = target or Target(cell_id=c.id, backend=c.backend, path=str(tmp_path), pool="xcb-rep3")
    text = levels.render_level(c, t, level, kind, prefix=f"xcb-probe.{c.id}.ab12",
                               log_stem=tmp_path / "log", conf="/etc/ceph/ceph.conf", ceph_id="admin")
    if shutil.which("fio"):  # fio itself accepts every option
        jf = tmp_path / f"{kind}{level}.fio"
        jf.write_text(text)
        cp = proc.run(["fio", "--parse-only", str(jf)], check=False)
        assert cp.returncode == 0, cp.stdout + cp.stderr
    glob, jobs = jobfile_options(text)
    (name, job), = jobs.items()
    return {"glob": glob, "name": name, **job}


@pytest.mark.parametrize("level", [1, 4, 16])
def test_mount_job_writes_as_the_gateway_does(tmp_path, level):
    j = render(cell(), level, "mount", tmp_path)
    assert j["name"] == f"write-c{level}"
    assert j["numjobs"] == str(level) and j["iodepth"] == "1"  # one writer per transfer
    assert j["glob"]["ioengine"] == "psync" and j["glob"]["direct"] == "0"  # buffered, as xrootd
    assert j["bs"] == str(4 * M)  # the campaign client's default write size
    # new files of the campaign's size, created, closed and removed every loop
    assert (j["nrfiles"], j["filesize"], j["size"]) == ("1", str(16 * M), str(16 * M))
    assert j["create_on_open"] == "1" and j["unlink_each_loop"] == "1" and j["unlink"] == "1"
    assert int(j["loops"]) > 1000 and "time_based" not in j
    # steady by fio's own test, bounded; fio's interval samples logged for the noise
    # the window from fio's first 1-s tick after the ramp: ~0.9 s in (levels.STEADY)
    assert (j["steadystate"], j["ss_dur"], j["ss_ramp"]) == ("bw:10%", "3", "500ms")
    assert int(j["runtime"]) == levels.LEVEL_RUNTIME
    assert j["write_bw_log"] == str(tmp_path / "log") and j["log_avg_msec"] == str(levels.LOG_MSEC)


def test_write_size_is_the_campaigns_chunk_size(tmp_path):
    assert render(cell(campaign={"chunk_size": "1M"}), 2, "mount", tmp_path)["bs"] == str(M)
    assert render(cell(file_size=2 * M), 2, "mount", tmp_path)["bs"] == str(2 * M)  # one write a file
    with pytest.raises(XcbError, match="cell lv1: campaign.chunk_size: 'lots'"):
        levels.write_size(cell(campaign={"chunk_size": "lots"}))


def test_matrix_steady_settings_override(tmp_path):
    c = cell(probe={"ss": "bw:5%", "ss_dur": 6, "ss_ramp": 2, "runtime": 30})
    j = render(c, 1, "mount", tmp_path)
    assert (j["steadystate"], j["ss_dur"], j["ss_ramp"], j["runtime"]) == ("bw:5%", "6", "2", "30")


def render_pool(c: Cell, level: int, tmp_path: Path, objects: int) -> dict:
    t = Target(cell_id=c.id, backend=c.backend, path=str(tmp_path), pool="xcb-rep3")
    text = levels.render_level(c, t, level, "pool", prefix=f"xcb-probe.{c.id}.ab12", log_stem=tmp_path / "log",
                               conf="/etc/ceph/ceph.conf", ceph_id="admin", objects=objects)
    if shutil.which("fio"):
        jf = tmp_path / f"pool{level}.fio"
        jf.write_text(text)
        cp = proc.run(["fio", "--parse-only", str(jf)], check=False)
        assert cp.returncode == 0, cp.stdout + cp.stderr
    glob, jobs = jobfile_options(text)
    (name, job), = jobs.items()
    return {"glob": glob, "name": name, **job}


def test_pool_job_writes_new_objects_as_the_striper_does(tmp_path):
    """stripe_count 1: one object after the other, each of the layout's object size, written
    once (not time-based: no object is rewritten), in the gateway's write size."""
    j = render_pool(cell(), 4, tmp_path, objects=120)
    assert j["name"] == "pool-c4" and j["glob"]["ioengine"] == "rados"
    assert j["glob"]["pool"] == "xcb-rep3" and j["numjobs"] == "4" and j["iodepth"] == "1"
    assert (j["nrfiles"], j["filesize"], j["size"]) == ("120", str(4 * M), str(120 * 4 * M))
    assert j["openfiles"] == "1" and j["file_service_type"] == "sequential"
    assert "time_based" not in j and "time_based" not in j["glob"] and j["bs"] == str(4 * M)
    # stripe_count 4, stripe unit 1 MiB: four objects at a time, a stripe unit each in turn
    j = render_pool(cell(layout=Layout(1 * M, 4, 4 * M)), 2, tmp_path, objects=64)
    assert j["openfiles"] == "4" and j["file_service_type"] == "roundrobin" and j["bs"] == str(M)
    assert j["filesize"] == str(4 * M)
    assert levels.pool_objects("xcb-probe.lv1.ab12", 4, 3) == [
        f"xcb-probe.lv1.ab12.pool-c4.{j}.{f}" for j in range(4) for f in range(3)]


def test_a_pool_job_has_objects_for_its_steady_test_at_its_share_of_the_best_rate():
    c = cell()  # 4 MiB objects, fio's steady test: a 500 ms ramp and 3 s: 4.5 s of objects
    assert levels.new_seconds(c) == 4.5
    assert levels.objects_per_job(c, 4, 100e6) == math.ceil(1.25 * 100e6 * 4.5 / (4 * M))
    assert levels.objects_per_job(c, 8, 1.0) == 1
    assert levels.per_job(1, None, None) == 400e6  # before any pool level: FIRST_BYTES_PER_S
    assert levels.per_job(4, 800e6, None) == 200e6  # the cell's own probe, shared
    # after c=1 at 260 MB/s: a c=2 job may reach 260 (the total doubling), a c=8 job 2 x 450 / 8
    assert levels.per_job(2, 260e6, 260e6) == 260e6
    assert levels.per_job(8, 450e6, 260e6) == pytest.approx(112.5e6)
    assert levels.new_seconds(cell(probe={"ss_dur": 30, "ss_ramp": "2s", "runtime": 12})) == 12.0


def test_what_each_target_is_probed_on(tmp_path):
    assert levels.targets(Target(cell_id="a", backend="cephfs", path="/x", pool="p")) == ["mount", "pool"]
    assert levels.targets(Target(cell_id="a", backend="rados", pool="p")) == ["pool"]
    assert levels.targets(Target(cell_id="a", backend="tmpfs", path="/x")) == ["mount"]


class Rates:
    """The storage's write rate as a settle step reads it, one reading per call."""

    def __init__(self, values):
        self.values = list(values)
        self.calls = 0

    def rate(self) -> float:
        self.calls += 1
        return self.values.pop(0) if self.values else self.last

    @property
    def last(self) -> float:
        return 1e9


def test_settle_waits_for_idle_storage(tmp_path):
    # 100 MB/s job: idle is below 1 MB/s, QUIET readings in a row
    w = Rates([50e6, 0.5e6, 20e6, 0.2e6, 0.1e6])
    got = settle.flush_and_wait(w, str(tmp_path), 100e6)
    assert got["settled"] and w.calls == 5 and got["settle_rate"] == 0.1e6


def test_settle_is_bounded_in_time(tmp_path, monkeypatch):
    monkeypatch.setattr(settle, "MAX_S", 0.3)
    w = Rates([])
    monkeypatch.setattr(Rates, "rate", lambda self: (__import__("time").sleep(0.1), 80e6)[1])
    got = settle.flush_and_wait(w, str(tmp_path), 100e6)
    assert not got["settled"] and 0.3 <= got["settle_s"] < 2


def test_settle_without_cluster_only_flushes(tmp_path):
    got = settle.flush_and_wait(None, str(tmp_path), 100e6)
    assert got["settled"] and got["settle_s"] < 5 and math.isnan(got["settle_rate"])


def test_noise_from_real_fio_logs():
    """fio 3.33, write-c2 (two psync jobs of new 16 MiB files): the per-interval sums of the two
    jobs' bandwidth logs agree with fio's own bandwidth in its JSON+."""
    data = json.loads((DATA / "level-write-c2.json").read_text())
    w = data["jobs"][0]["write"]
    got = noise.from_logs(DATA / "level-write-c2", 500, ramp_s=1.0, end_ms=w["runtime"])
    # the jobs ran 4881 ms: 9 whole intervals, every one logged; the first second left out
    assert got["bw_n"] == 7
    assert got["bw_steady"] == pytest.approx(w["bw_bytes"], rel=0.05)
    assert 0 < got["bw_rel_se"] < got["bw_cv"] < 0.2
    # by hand: the sum of both jobs per interval
    a = [bps for _, bps in noise.read_log(DATA / "level-write-c2_bw.1.log")]
    b = [bps for _, bps in noise.read_log(DATA / "level-write-c2_bw.2.log")]
    assert noise.series(noise.logs(DATA / "level-write-c2"), 500, w["runtime"]) == [
        x + y for x, y in zip(a, b, strict=True)]


def test_noise_counts_an_interval_a_job_did_not_log_as_its_zero():
    """fio 3.33, fio's rados engine, 8 jobs of 4 MiB writes under a 66 MB/s blkio throttle: each
    job completes ~2 writes a second, so fio logs no line for many of its 0.5-s intervals. Those
    are zeros: the ceiling agrees with fio's own bandwidth, as the device's (64.3 MB/s) did.
    Keeping only the intervals every job logged gave 83.9 MB/s, above the throttle."""
    stem = DATA / "pool-c8-throttled"
    w = json.loads(stem.with_suffix(".json").read_text())["jobs"][0]["write"]
    assert len(noise.logs(stem)) == 8 and any(len(noise.read_log(p)) < 15 for p in noise.logs(stem))
    got = noise.from_logs(stem, 500, ramp_s=1.0, end_ms=w["runtime"])
    assert got["bw_n"] == 14  # 16 whole intervals in the jobs' 8187 ms, less the first second
    assert got["bw_steady"] == pytest.approx(w["bw_bytes"], rel=0.1)
    assert got["bw_steady"] < 66e6 * 1.05  # never above the throttle the device was held to


def test_noise_series_fills_unlogged_intervals_with_zeros(tmp_path):
    (tmp_path / "s_bw.1.log").write_text("500, 100, 1, 0, 0\n1000, 100, 1, 0, 0\n1500, 100, 1, 0, 0\n"
                                         "2000, 100, 1, 0, 0\n2300, 50, 1, 0, 0\n")
    (tmp_path / "s_bw.2.log").write_text("1000, 300, 1, 0, 0\n2000, 200, 1, 0, 0\n2700, 9, 1, 0, 0\n")
    # job 2 logged nothing in intervals 0 and 2; the lines off a boundary (2300, 2700 ms) are
    # intervals cut short by the jobs' end, left out; without a known end the series stops at the
    # first job's last whole interval
    assert noise.series(noise.logs(tmp_path / "s"), 500) == [100 * 1024, 400 * 1024, 100 * 1024,
                                                            300 * 1024]


def test_noise_series_runs_to_the_jobs_end_through_a_stall(tmp_path):
    """CI saw this: two psync jobs on a ceph-fuse mount log to 2.5 s, then no write completes,
    and fio's ``ss=bw:10%`` stops them at 3.9 s (two equal readings are "steady"). The stall is
    the mount's, and its zeros belong in the ceiling: ending at the last line left 2 samples
    after the ramp, both from before the stall."""
    for j in (1, 2):
        (tmp_path / f"s_bw.{j}.log").write_text("".join(f"{500 * i + j - 1}, 98400, 1, 0, 0\n"
                                                        for i in range(1, 6)))
    busy = 2 * 98400 * 1024
    assert noise.series(noise.logs(tmp_path / "s"), 500, 3896) == [busy] * 5 + [0.0, 0.0]
    got = noise.from_logs(tmp_path / "s", 500, ramp_s=1.0, end_ms=3896)
    assert got["bw_n"] == 5 and got["bw_steady"] == pytest.approx(busy * 3 / 5)
    assert got["bw_cv"] > 0.5  # the stall shows as noise, not as a steady ceiling
    # a line a few ms past the reported runtime is never cut
    assert len(noise.series(noise.logs(tmp_path / "s"), 500, 2480)) == 5


def test_noise_counts_correlated_samples_as_fewer():
    iid = [100.0, 120.0, 90.0, 110.0, 95.0, 115.0, 105.0, 85.0]
    drift = sorted(iid)  # the same values, each next to a like one
    a, b = noise.summary(iid, 500), noise.summary(drift, 500)
    assert a["bw_cv"] == pytest.approx(b["bw_cv"])
    assert b["bw_rel_se"] > a["bw_rel_se"]
    assert a["bw_rel_se"] >= a["bw_cv"] / math.sqrt(len(iid)) - 1e-12
    assert math.isnan(noise.summary([5.0, 6.0], 500)["bw_rel_se"])  # too few samples


def test_default_write_size_is_the_campaign_clients():
    from xcbench.campaign.spec import CampaignSpec
    assert levels.WRITE_SIZE == CampaignSpec.chunk_size
