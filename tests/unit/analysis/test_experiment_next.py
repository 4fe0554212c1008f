"""What to do next: the experiment that settles an inconclusive or borderline level, and the
sizing hint only for a run fit for sizing."""

from __future__ import annotations

from xcbench.analysis.verdicts.experiment_next import fit_for_sizing, one_box, settle


def _row(verdict: str, near=(), c=4, cell="rados ec2+1", cid="c7f88e1ddf00", give=0.5) -> dict:
    return {"cell": cell, "cell_id": cid, "concurrency": c, "direction": "write", "verdict": verdict,
            "near": list(near), "cpu_to_give": give}


def test_a_borderline_level_gets_the_confirm_line_testing_each_candidate():
    (line,) = settle([_row("host-cpu", ["ec-overhead"]), _row("gateway")], "/r/x", one_box=False)
    assert line == ("rados ec2+1 c=4: host-cpu ~ ec-overhead: xcbench confirm /r/x --cell c7f88e1ddf "
                    "--level 4 --test host-cpu --test ec-overhead")


def test_host_cpu_is_never_suggested_where_no_cpu_could_be_given():
    # its only experiment there (a quota below the roles' use) confirms whatever capped the level
    (line,) = settle([_row("host-cpu", ["ec-overhead"], give=0.0)], "/r/x", one_box=True)
    assert "--test ec-overhead" in line and "--test host-cpu" not in line
    assert "no CPU to give here" in line and "--hosts FILE" in line
    (line,) = settle([_row("host-cpu", ["ec-overhead"], give=None)], "/r/x", one_box=False)
    assert "--test host-cpu" not in line


def test_host_cpu_on_one_box_also_suggests_hosts_of_their_own():
    (line,) = settle([_row("host-cpu", ["storage-bandwidth"])], "/r/x", one_box=True)
    assert "--test storage-bandwidth" in line and "--hosts FILE" in line


def test_an_inconclusive_level_with_no_candidate_gets_repeats_or_another_level():
    (line,) = settle([_row("inconclusive", c=2)], "/r/x", one_box=False)
    assert "--repeats 2" in line and "c=4" in line and "confirm" not in line
    (line,) = settle([_row("inconclusive", ["gateway"])], "/r/x", one_box=False)
    assert "--test gateway" in line and "--test inconclusive" not in line


def test_a_level_named_plainly_needs_nothing():
    assert settle([_row("gateway"), _row("storage-iops")], "/r/x", one_box=True) == []


def test_a_run_mostly_host_cpu_on_one_box_is_not_fit_for_sizing():
    rows = [_row("host-cpu")] * 3 + [_row("gateway")]
    assert not fit_for_sizing(rows, one_box=True)
    assert fit_for_sizing(rows, one_box=False)  # hosts of their own: the host's CPU is a figure
    assert fit_for_sizing([_row("host-cpu"), _row("gateway"), _row("storage-iops")], one_box=True)
    assert not fit_for_sizing([], one_box=False)


def test_one_box_reads_the_manifests_hosts():
    assert one_box({}) and one_box({"hosts": {}})
    assert not one_box({"hosts": {"gw1": {"address": "10.0.0.2"}}})
