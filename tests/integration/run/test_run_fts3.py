"""`xcbench run` with ``campaign.engine: fts3``: each concurrency level of a cell is one FTS3 job
(against the local REST double, which copies for real with gfal2) from the run's tmpfs source
gateway into the cell's gateway. The link limits follow the levels, records stream while the job
runs and carry its id, a refused link config is a finding, and Ctrl-C cancels the job."""

from __future__ import annotations

import json
import signal

import pytest

from tests.support.faults import final_rows, flushed, lines, scene
from tests.support.fts3_double import Fts3Double

pytestmark = pytest.mark.integration
TOKEN = "fts-engine-t0ken-n0t-f0r-the-rec0rds"

MATRIX = """
name: fts-engine
defaults:
  modes: [tpc-http]
  concurrency: {levels}
  file_size: 1M
  files: {files}
  campaign: {{timeout: 60, engine: fts3, fts: {{endpoint: '{url}', token_file: '{token_file}'}}}}
backends:
  tmpfs: {{size: 48M}}
"""


def start_matrix(s, fts: Fts3Double, levels: str, files: int) -> tuple[str, str]:
    """The matrix (its FTS endpoint and token file) and the run's name; the command line names
    the endpoint too (``--fts-endpoint``, :func:`common`): a matrix alone sends no secret."""
    token_file = s.root / "fts-token"
    token_file.write_text(TOKEN + "\n")
    m = s.root / "m.yaml"
    m.write_text(MATRIX.format(levels=levels, files=files, url=fts.url, token_file=token_file))
    name = f"r{s.mark}"
    s.tokens.append(f"xcbench-{name}-")  # the run's scratch dir and the mounts under it
    return str(m), name


def common(ceph_cluster, fts: Fts3Double) -> list[str]:
    return ["--ceph-conf", str(ceph_cluster.conf), "--no-probes", "--no-baseline",
            "--telemetry", "host:0.5", "--no-report", "--fts-endpoint", fts.url]


def table(run, name: str) -> list[dict]:
    return [json.loads(ln) for ln in lines(run / "records" / f"{name}.jsonl")]


def everything_in(run) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file())


def test_run_with_fts3_engine_one_job_per_level(ceph_cluster):
    levels, files = [1, 3], 6
    with scene("xcb-run-fts-") as s, Fts3Double(token=TOKEN) as fts:
        m, name = start_matrix(s, fts, str(levels), files)
        out = s.root / "results"
        cp = s.run("run", m, "--store", str(out), "--run-name", name, *common(ceph_cluster, fts))
        assert cp.returncode == 0, cp.stderr
        run = out / name
        assert json.loads((run / "manifest.json").read_text())["status"] == "complete"
        # one job per level, every file of the dataset in it, the link limited to the level
        assert [len(j["files"]) for j in fts.submitted] == [files] * len(levels)
        assert [(c["min_active"], c["max_active"]) for c in fts.link_calls] == \
            [(lv, lv) for lv in levels]
        jobs = list(fts.jobs.values())
        assert [j["_max_active"] for j in jobs] == levels  # what FTS (the double) applied
        assert all(j["_peak_active"] <= j["_max_active"] for j in jobs)
        camps = sorted(table(run, "campaigns"), key=lambda r: r["concurrency"])
        assert [c["concurrency"] for c in camps] == levels and {c["client"] for c in camps} == {"fts3"}
        final = final_rows(run / "records" / "transfers.jsonl")
        for c, job in zip(camps, jobs, strict=True):
            st = json.loads(c["settings"])
            assert st["engine"] == "fts3" and st["fts"]["endpoint"] == fts.url
            assert st["fts"]["job_id"] == job["job_id"] and st["fts"]["link_limits"]["set"]
            assert c["finished"] == files and c["failed"] == 0
            assert c["rate"] > 0 and c["finish_time"] > c["start_time"]  # FTS's 1 s datetimes
            rows = {i: r for (cid, i), r in final.items() if cid == c["campaign_id"]}
            assert sorted(rows) == list(range(files))
            wanted = {f["file_index"]: f["checksum"].split(":")[1].lower() for f in job["files"]}
            for i, r in rows.items():
                assert r["file_state"] == "FINISHED" and r["client"] == "fts3"
                assert r["transfer_id"].startswith(job["job_id"] + "-")  # the records carry the job
                # read back from the destination by xcbench (then deleted), = the dataset's
                assert r["checksum_dest"] == r["checksum_source"] == wanted[i], r
            assert any(t["campaign_id"] == c["campaign_id"] for t in table(run, "timeline"))
        assert TOKEN.encode() not in everything_in(run)
        assert TOKEN not in cp.stdout + cp.stderr
        s.assert_clean("after an fts3 run")


def test_refused_link_limits_are_a_finding_and_fts_decides(ceph_cluster):
    with scene("xcb-run-fts-") as s, Fts3Double(token=TOKEN, config_rights=False,
                                                default_max_active=2) as fts:
        m, name = start_matrix(s, fts, "[1, 3]", 3)
        out = s.root / "results"
        cp = s.run("run", m, "--store", str(out), "--run-name", name, *common(ceph_cluster, fts))
        assert cp.returncode == 0, cp.stderr
        run = out / name
        assert fts.link_calls == [] and len(fts.submitted) == 2
        assert [j["_max_active"] for j in fts.jobs.values()] == [2, 2]  # FTS's own, not 1, 3
        found = [f for f in table(run, "findings") if "refused the link limits" in f["what"]]
        assert len(found) == 1, found  # one finding for the cell, not one per level
        assert "no config rights" in found[0]["why"]
        for c in table(run, "campaigns"):  # each level records what it asked for
            links = json.loads(c["settings"])["fts"]["link_limits"]
            assert links["set"] is False and links["requested"]["max_active"] == c["concurrency"]
        assert {r["file_state"] for r in final_rows(run / "records" / "transfers.jsonl").values()} \
            == {"FINISHED"}
        s.assert_clean("after an fts3 run without config rights")


def test_a_token_fts_refuses_fails_the_cell_in_one_line_without_the_token(ceph_cluster):
    with scene("xcb-run-fts-") as s, Fts3Double(token="the-server-wants-another") as fts:
        m, name = start_matrix(s, fts, "[1]", 1)
        out = s.root / "results"
        cp = s.run("run", m, "--store", str(out), "--run-name", name, *common(ceph_cluster, fts))
        assert cp.returncode == 1 and "Traceback" not in cp.stderr, cp.stderr
        assert fts.submitted == [] and fts.link_calls == []
        cells = json.loads((out / name / "manifest.json").read_text())["cells"]
        [cell] = cells.values()
        assert cell["status"] == "failed" and fts.url in cell["error"] and "Unauthorized" in cell["error"]
        assert "\n" not in cell["error"]
        assert TOKEN.encode() not in everything_in(out / name)
        assert TOKEN not in cp.stdout + cp.stderr
        s.assert_clean("after a refused token")


def test_ctrl_c_during_an_fts3_level_cancels_the_job(ceph_cluster):
    """The double holds every file after the first two in flight: the signal surely lands on a
    running job with transfers in flight, whatever the machine's speed."""
    files = 8
    with scene("xcb-run-fts-") as s, Fts3Double(token=TOKEN, hold_after=2) as fts:
        m, name = start_matrix(s, fts, "[2]", files)
        out = s.root / "results"
        cli = s.start("run", m, "--store", str(out), "--run-name", name, *common(ceph_cluster, fts))
        records = out / name / "records"

        def in_flight() -> bool:
            return any(j["job_state"] == "ACTIVE" and
                       any(f["file_state"] == "ACTIVE" for f in j["files"])
                       for j in list(fts.jobs.values()))
        cli.wait_for(in_flight, "an ACTIVE job with transfers in flight")
        cli.wait_for(flushed(records / "transfers.jsonl", 2), "the first files' records, streamed")
        job = next(iter(fts.jobs.values()))
        assert job["job_state"] == "ACTIVE"
        cli.p.send_signal(signal.SIGINT)
        rc = cli.finish()
        assert rc == 130, cli.stderr
        assert "Traceback" not in cli.stderr and "--resume" in cli.stderr
        assert job["_cancel"] and job["job_state"] == "CANCELED"  # through DELETE /jobs/<id>
        last = final_rows(records / "transfers.jsonl")
        assert sorted(i for _, i in last) == list(range(files))  # every file has its final row
        states = {i: r["file_state"] for (_, i), r in last.items()}
        assert states[0] == states[1] == "FINISHED"
        assert {states[i] for i in range(2, files)} == {"CANCELED"}
        man = json.loads((out / name / "manifest.json").read_text())
        assert man["status"] == "interrupted"
        s.assert_clean("after Ctrl-C during an fts3 level")
