"""The fio JSON+ parser against real fio 3.33 output captured on this machine (tests/data/fio).

Every figure is recomputed here from the raw JSON, independently of xcbench.probe.fio, and must equal
what the parser reports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from xcbench.errors import XcbError
from xcbench.probe import fio
from xcbench.store.tables import PROBE

DATA = Path(__file__).parents[2] / "data" / "fio"


def raw(name: str) -> dict:
    text = (DATA / name).read_text()
    return json.loads(text[text.index("\n{") + 1:] if not text.startswith("{") else text)


def rows_of(name: str, jobfile: str | None = None, **kw) -> list[dict]:
    text = None if jobfile is None else "".join((DATA / f).read_text() for f in jobfile.split())
    return fio.parse(fio.load_file(DATA / name), cell_id="cell0", jobfile=text, **kw)


def pct(lat: dict, p: float) -> float:
    return lat["percentile"][f"{p:.6f}"] / 1000.0


def np_percentile(bins: dict, p: float) -> int:
    """fio's rule, written differently: first value whose cumulative count >= p% of N."""
    values = np.array(sorted(int(k) for k in bins))
    counts = np.array([bins[str(v)] if str(v) in bins else bins[v] for v in values])
    cum = np.cumsum(counts)
    return int(values[np.searchsorted(cum, p / 100.0 * cum[-1], side="left")])


def test_rows_have_the_probe_columns():
    for name in ("normal.json", "errors.json", "steadystate.json", "clientserver.json"):
        for row in rows_of(name):
            assert tuple(row) == PROBE


def test_local_job_figures_equal_fios_json():
    data = raw("normal.json")
    rows = {r["job"]: r for r in rows_of("normal.json")}
    assert set(rows) == {"randwrite", "write", "read"}
    for job in data["jobs"]:
        ddir = "read" if job["jobname"] == "read" else "write"
        st, r = job[ddir], rows[job["jobname"]]
        opts = {**data["global options"], **job["job options"]}
        assert r["host"] == "local" and r["cell_id"] == "cell0"
        assert r["rw"] == opts["rw"]
        assert r["bs"] == int(opts["bs"])
        assert r["iodepth"] == int(opts["iodepth"]) and r["numjobs"] == int(opts["numjobs"])
        assert r["iops"] == st["iops"] > 0
        assert r["bw"] == st["bw_bytes"] > 0
        assert r["lat_mean_us"] == pytest.approx(st["lat_ns"]["mean"] / 1000.0)
        assert r["lat_p50_us"] == pytest.approx(pct(st["lat_ns"], 50))
        assert r["lat_p99_us"] == pytest.approx(pct(st["lat_ns"], 99))
        assert r["lat_p999_us"] == pytest.approx(pct(st["lat_ns"], 99.9))
        assert r["runtime_s"] == st["runtime"] / 1000.0
        assert r["errors"] == 0 and r["ss_reached"] is None
        assert r["engine"] == "libaio" and r["direct"] is True
    # the 4 KiB job is the IOPS one: iops * bs is its bandwidth (to fio's rounding)
    rw = rows["randwrite"]
    assert rw["iops"] * rw["bs"] == pytest.approx(rw["bw"], rel=1e-3)


def test_errors_are_counted():
    data = {j["jobname"]: j for j in raw("errors.json")["jobs"]}
    rows = {r["job"]: r for r in rows_of("errors.json")}
    # stopped at the first ENOSPC: error set, no total_err -> one error
    assert data["full-stop"]["error"] == 28 and "total_err" not in data["full-stop"]
    assert rows["full-stop"]["errors"] == 1
    # continue_on_error: fio's own count
    assert rows["full-continue"]["errors"] == data["full-continue"]["total_err"] == 1
    assert data["verify-bad"]["error"] == 84
    assert rows["verify-bad"]["errors"] == data["verify-bad"]["total_err"] == 16
    assert rows["plain-write"]["errors"] == 0
    # what did get written before the target filled up is still reported as fio says
    assert rows["full-stop"]["bw"] == data["full-stop"]["write"]["bw_bytes"]
    assert rows["verify-bad"]["rw"] == "read"


def test_steady_state_reached_or_not():
    data = {j["jobname"]: j for j in raw("steadystate.json")["jobs"]}
    rows = {r["job"]: r for r in rows_of("steadystate.json")}
    assert data["randwrite"]["steadystate"]["attained"] == 1
    assert rows["randwrite"]["ss_reached"] is True
    # fio stopped the job early once steady state was attained
    assert rows["randwrite"]["runtime_s"] < 6.0
    assert data["ss-never"]["steadystate"]["attained"] == 0
    assert rows["ss-never"]["ss_reached"] is False
    assert rows["ss-never"]["runtime_s"] == data["ss-never"]["write"]["runtime"] / 1000.0
    assert rows["randwrite"]["engine"] == "psync" and rows["randwrite"]["direct"] is False


def test_percentile_rule_reproduces_fio_on_every_job():
    """Walking a json+ histogram gives exactly fio's own percentiles (all of fio's list)."""
    for name in ("normal.json", "clientserver.json", "steadystate.json"):
        data = raw(name)
        for job in data.get("jobs", []) + data.get("client_stats", []):
            for ddir in ("read", "write"):
                lat = job[ddir].get("lat_ns", {})
                if not lat.get("N") or "bins" not in lat:
                    continue
                for p, value in lat["percentile"].items():
                    assert fio.percentile_from_bins(lat["bins"], float(p)) == value, (name, p)
                    assert np_percentile(lat["bins"], float(p)) == value


def test_client_server_rows_per_host_and_aggregate():
    data = raw("clientserver.json")
    stats = [j for j in data["client_stats"] if j["jobname"] != "All clients"]
    rows = rows_of("clientserver.json", jobfile="clientserver.h0.fio clientserver.h1.fio")
    hosts = {f"{j['hostname']}:{j['port']}" for j in stats}
    assert len(hosts) == 2
    assert {r["host"] for r in rows} == hosts | {"all"}
    for job in ("randwrite", "write"):
        parts = [j for j in stats if j["jobname"] == job]
        per = {r["host"]: r for r in rows if r["job"] == job}
        for j in parts:
            r = per[f"{j['hostname']}:{j['port']}"]
            assert r["iops"] == j["write"]["iops"] and r["bw"] == j["write"]["bw_bytes"]
            assert r["lat_p99_us"] == pytest.approx(pct(j["write"]["lat_ns"], 99))
        agg = per["all"]
        assert agg["iops"] == pytest.approx(sum(j["write"]["iops"] for j in parts))
        assert agg["bw"] == sum(j["write"]["bw_bytes"] for j in parts)
        n = sum(j["write"]["lat_ns"]["N"] for j in parts)
        mean = sum(j["write"]["lat_ns"]["mean"] * j["write"]["lat_ns"]["N"] for j in parts) / n
        assert agg["lat_mean_us"] == pytest.approx(mean / 1000.0)
        merged: dict[str, int] = {}
        for j in parts:
            for k, v in j["write"]["lat_ns"]["bins"].items():
                merged[k] = merged.get(k, 0) + v
        for col, p in (("lat_p50_us", 50), ("lat_p99_us", 99), ("lat_p999_us", 99.9)):
            assert agg[col] == pytest.approx(np_percentile(merged, p) / 1000.0)
        assert agg["runtime_s"] == max(j["write"]["runtime"] for j in parts) / 1000.0
        assert agg["numjobs"] == sum(int(per[h]["numjobs"]) for h in hosts)
    # fio leaves "job options" out of the second group in client mode: the job file fills in
    assert "job options" not in next(j for j in stats if j["jobname"] == "write")
    write = {r["host"]: r for r in rows if r["job"] == "write"}
    assert all(r["bs"] == 1 << 20 and r["iodepth"] == 4 for r in write.values())


def test_client_server_without_jobfile_still_reports_figures():
    rows = rows_of("clientserver.json")
    write = [r for r in rows if r["job"] == "write"]
    assert {r["rw"] for r in write} == {"write"}
    assert all(r["bs"] == 1 << 20 for r in write)  # io_bytes / total_ios


def test_summary_prefers_the_aggregate():
    rows = rows_of("clientserver.json", jobfile="clientserver.h0.fio clientserver.h1.fio")
    summ = fio.summary(rows)
    assert {(r["job"], r["host"]) for r in summ} == {("randwrite", "all"), ("write", "all")}
    local = fio.summary(rows_of("normal.json"))
    assert {r["host"] for r in local} == {"local"} and len(local) == 3


def test_load_output_tolerates_text_around_the_json():
    text = (DATA / "clientserver.json").read_text()
    assert not text.startswith("{")
    assert "client_stats" in fio.load_output(text + "fio: some trailing line\n")
    with pytest.raises(ValueError):
        fio.load_output("fio: pid=1, err=2/file:filesetup.c:1\n")
    with pytest.raises(XcbError, match="not fio JSON"):
        fio.load_file(DATA / "errors.fio")


def test_client_args_and_command():
    assert fio.client_arg("127.0.0.1:8766") == "127.0.0.1,8766"
    assert fio.client_arg("node1") == "node1"
    with pytest.raises(XcbError, match="fio-hosts"):
        fio.client_arg("a:b:c")
    cmd = fio.command(["j0.fio", "j1.fio"], output="o.json", hosts=["h1:1", "h2"])
    assert cmd == ["fio", "--output-format=json+", "--output=o.json",
                   "--client=h1,1", "j0.fio", "--client=h2", "j1.fio"]
    assert fio.command(["j.fio"], output="o.json")[-1] == "j.fio"


def test_jobfile_options():
    glob, jobs = fio.jobfile_options((DATA / "errors.fio").read_text())
    assert glob["bs"] == "64k" and jobs["verify-bad"]["continue_on_error"] == "verify"
    assert jobs["full-continue"]["stonewall"] == "1"


def test_nan_in_fio_json_is_read():
    """fio 3.33 writes a bare -nan for the slope of a one-sample steady-state window."""
    text = (DATA / "steadystate-nan.json").read_text()
    assert '"slope" : -nan' in text
    with pytest.raises(ValueError):
        json.loads(text)
    (row,) = rows_of("steadystate-nan.json")
    data = fio.load_file(DATA / "steadystate-nan.json")
    assert data["jobs"][0]["steadystate"]["slope"] != data["jobs"][0]["steadystate"]["slope"]
    assert row["ss_reached"] is True and row["iops"] == data["jobs"][0]["write"]["iops"] > 0
    # a string that merely contains "nan" is left alone
    assert fio.load_output('{"jobs": [], "x": "banana, inf"}')["x"] == "banana, inf"


def test_rados_engine_output():
    """A probe rendered from rados.fio.j2 on the dev cluster's EC 2+1 pool (numjobs 2)."""
    data = raw("rados.json")
    rows = {r["job"]: r for r in rows_of("rados.json")}
    assert list(rows) == ["randwrite", "write", "read"]
    for job in data["jobs"]:
        ddir = "read" if job["jobname"] == "read" else "write"
        r, st = rows[job["jobname"]], job[ddir]
        assert r["engine"] == "rados" and r["numjobs"] == 2 and r["iodepth"] == 8
        assert r["iops"] == st["iops"] > 0 and r["bw"] == st["bw_bytes"] > 0
        assert r["lat_p999_us"] == pytest.approx(pct(st["lat_ns"], 99.9))
    assert rows["write"]["bs"] == rows["read"]["bs"] == 4 << 20
