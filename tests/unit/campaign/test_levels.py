"""Time-based campaign levels: the steady rule on constructed series, the duration bounds, the
matrix keys (one line naming file, cell and field), and the steady window of a level."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xcbench.campaign.spec import CampaignSpec, level_rule
from xcbench.errors import XcbError
from xcbench.figures.level_rule import LevelRule, parse_fraction, parse_seconds
from xcbench.figures.steady import block_rates, steady_table
from xcbench.matrix import ClusterFacts, load_matrix

FACTS = ClusterFacts(osd_max_object_size=128 << 20, num_osds=3, num_hosts=1)
RULE = LevelRule(min=5, max=30, rule="autoterm", window=10, points=5, tolerance=0.10)


def series(rates):
    """1-s buckets ending at t = 1, 2, ... with these rates (bytes per bucket)."""
    return np.arange(1, len(rates) + 1, dtype=float), np.asarray(rates, dtype=float)


# ---- the rule on constructed series ---------------------------------------------------------
def test_a_flat_rate_after_a_ramp_is_steady():
    t, b = series([10, 40, 80] + [100] * 12)
    steady, spread = RULE.check(t, b)
    assert steady and spread == pytest.approx(0.0)


def test_a_drift_beyond_the_tolerance_is_not_steady_by_either_rule():
    t, b = series([100 + 4 * i for i in range(20)])  # +4 %/s of the start: ~35 % over 10 s
    assert RULE.check(t, b)[0] is False
    slope = LevelRule(min=5, max=30, rule="slope", window=10, points=5, tolerance=0.10)
    steady, drift = slope.check(t, b)
    assert not steady and drift == pytest.approx(40 / np.mean(b[-10:]), rel=0.01)


def test_noise_within_the_tolerance_is_steady_and_beyond_it_is_not():
    rng = np.random.default_rng(7)
    t, quiet = series(100 * (1 + rng.uniform(-0.04, 0.04, 30)))
    assert RULE.check(t, quiet)[0]  # 2-s blocks of ±4 % noise stay within 10 %
    t, loud = series(np.tile([40.0, 160.0, 160.0, 40.0], 8))  # blocks alternate 100/100/...
    loud[-4:] = [200, 200, 10, 10]  # ... until the last blocks swing by 90 %
    assert not RULE.check(t, loud)[0]


def test_noise_has_no_slope_but_a_step_has():
    rng = np.random.default_rng(3)
    t, b = series(100 * (1 + rng.uniform(-0.15, 0.15, 30)))
    slope = LevelRule(min=5, max=30, rule="slope", window=10, points=10, tolerance=0.25)
    assert slope.check(t, b)[0]
    t, step = series([100.0] * 25 + [50.0] * 5)
    assert not slope.check(t, step)[0]


def test_the_rule_waits_for_a_whole_window_and_none_never_ends_a_level():
    t, b = series([100] * 9)
    assert RULE.check(t, b) == (False, pytest.approx(math.nan, nan_ok=True))
    none = LevelRule(min=5, max=30, rule="none", window=10, points=5, tolerance=0.1)
    assert not none.check(*series([100] * 30))[0]
    assert not RULE.check(*series([0] * 20))[0]  # nothing moved is not "steady"


def test_block_rates_spread_bucket_bytes_over_time():
    t = np.array([1.0, 2.0, 3.0, 4.0])
    assert block_rates(t, [10, 20, 30, 40], 0.0, 4.0, 2).tolist() == [15.0, 35.0]
    assert block_rates(t, [10, 20, 30, 40], 1.5, 3.5, 2).tolist() == [25.0, 35.0]  # halves of buckets


# ---- bounds and settings -------------------------------------------------------------------
@pytest.mark.parametrize("text,seconds", [(20, 20.0), ("20s", 20.0), ("1.5m", 90.0), ("1h", 3600.0),
                                          (2.5, 2.5)])
def test_durations(text, seconds):
    assert parse_seconds(text) == seconds


@pytest.mark.parametrize("bad", ["fast", "-3s", float("nan"), float("inf"), True, "1d"])
def test_bad_durations(bad):
    with pytest.raises(ValueError):
        parse_seconds(bad)


@pytest.mark.parametrize("text,frac", [("10%", 0.10), (7.5, 0.075), (0.2, 0.2), ("0.5%", 0.005)])
def test_tolerances(text, frac):
    assert parse_fraction(text) == pytest.approx(frac)


@pytest.mark.parametrize("duration,steady,field", [
    ({"min": 30, "max": 20}, None, "duration.min"),
    ({"min": 5}, None, "duration.max"),
    ({"max": "forever"}, None, "duration.max"),
    ({"max": 1e9}, None, "duration.max"),
    ({"max": 20, "mni": 5}, None, "duration.mni"),
    ({"max": 20}, {"rule": "magic"}, "steady.rule"),
    ({"max": 20}, {"points": 1}, "steady.points"),
    ({"max": 20}, {"points": 2.5}, "steady.points"),
    ({"max": 20}, {"window": "30s"}, "steady.window"),
    ({"max": 20}, {"window": "3s", "points": 5}, "steady.window"),
    ({"max": 20}, {"tolerance": "0%"}, "steady.tolerance"),
    ({"max": 20}, {"tolerance": "100%"}, "steady.tolerance"),
    ({"max": 20}, {"tolerence": "5%"}, "steady.tolerence"),
    (None, {"rule": "autoterm"}, "steady"),
])
def test_bad_level_settings_name_their_field(duration, steady, field):
    with pytest.raises(XcbError, match=f"^campaign: {field.replace('.', '[.]')}: "):
        level_rule(duration, steady)


def test_defaults_and_the_minimum_is_at_least_the_window():
    r = level_rule({"max": "1m"}, {"window": "15s"})
    assert (r.min, r.max, r.rule, r.window, r.points, r.tolerance) == (15, 60, "autoterm", 15, 5, 0.1)
    assert level_rule(None, None) is None and level_rule(30, None).min == 30
    assert "15 s" in r.describe() and "autoterm" in r.describe() and "not steady" in r.describe()


def test_a_time_based_spec_must_be_able_to_cycle_its_dataset():
    with pytest.raises(XcbError, match="delete_after_verify"):
        CampaignSpec(duration={"max": 10}).check_cycling()
    with pytest.raises(XcbError, match="files"):
        CampaignSpec(duration={"max": 10}, overwrite=True, files=2, concurrency=4).check_cycling()
    spec = CampaignSpec(duration={"max": 10}, overwrite=True, files=4, concurrency=4)
    spec.check_cycling()
    assert spec.level.max == 10
    with pytest.raises(XcbError, match="steady.rule"):  # a steady alone is checked on its own
        CampaignSpec(steady={"rule": "magic"})
    assert CampaignSpec().level is None  # the file-count mode stays the default


# ---- matrix keys -----------------------------------------------------------------------------
CELL = "cell tmpfs 1G o1 push"


@pytest.mark.parametrize("campaign,field", [
    ("{duration: {min: 20s, max: 10s}}", "campaign.duration.min"),
    ("{duration: {min: 20s, max: .inf}}", "campaign.duration.max"),
    ("{duration: {max: 60s}, steady: {rule: autoterm, window: 10s, points: 7, tolerance: 150%}}",
     "campaign.steady.tolerance"),
    ("{steady: {rule: slope}}", "campaign.steady"),
    ("{duration: {max: 60s}, delete_after_verify: false}", "campaign.delete_after_verify"),
    ("{duration: {max: 60s}, delete_after_verify: false, overwrite: true}", "campaign.overwrite"),
])
def test_bad_level_keys_in_a_matrix_name_file_cell_field(tmp_path, campaign, field):
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent(f"""
        defaults: {{concurrency: [1, 4], files: 2, campaign: {campaign}}}
        backends: {{tmpfs: {{size: 1G}}}}
    """))
    with pytest.raises(XcbError) as exc:
        load_matrix(path, facts=FACTS)
    msg = str(exc.value)
    # a field of the section is named where it is written (defaults.campaign: duration.min),
    # a rule across fields on the cell (cell ...: campaign.delete_after_verify)
    assert "\n" not in msg and msg.startswith(f"{path}: ")
    assert f"{path}: defaults.campaign: {field.removeprefix('campaign.')}:" in msg or \
        (msg.startswith(f"{path}: {CELL} (") and f": {field}:" in msg)


def test_level_keys_merge_from_defaults_and_backend(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent("""
        defaults: {campaign: {steady: {rule: slope, window: 6s, points: 3, tolerance: 5%}}}
        backends: {tmpfs: {size: 1G, campaign: {duration: {min: 10s, max: 20s}}}}
    """))
    cell = load_matrix(path, facts=FACTS).cells[0]
    spec = CampaignSpec(delete_after_verify=True, **cell.campaign)
    assert (spec.level.rule, spec.level.window, spec.level.min, spec.level.tolerance) == \
        ("slope", 6, 10, 0.05)


def test_cli_rejects_a_bad_duration_with_exit_2(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("defaults: {campaign: {duration: {max: soon}}}\nbackends: {tmpfs: {size: 1G}}\n")
    cp = subprocess.run([sys.executable, "-m", "xcbench", "matrix", "check", str(path)],
                        capture_output=True, text=True)
    assert cp.returncode == 2 and "campaign.duration.max" in cp.stdout + cp.stderr
    assert "Traceback" not in cp.stderr


def test_the_demo_gives_every_level_a_steady_window_of_at_least_15_s():
    m = load_matrix(str(Path(__file__).resolve().parents[3] / "layouts" / "quick.yaml"), facts=FACTS)
    for c in m.cells:
        rule = CampaignSpec(delete_after_verify=True, **c.campaign).level
        assert rule is not None and rule.window >= 15 and rule.min >= rule.window


# ---- the steady window of a time-based level --------------------------------------------------
def _timeline(rates, cid="c1"):
    t = np.arange(1, len(rates) + 1, dtype=float)
    return pd.DataFrame({"cell_id": "x", "campaign_id": cid, "concurrency": 4, "repeat": 0,
                         "t": t, "wall": 1000.0 + t, "bytes": rates, "rate": rates,
                         "active": 4, "done": 0, "failed": 0})


def test_a_level_window_is_the_one_its_rule_judged():
    tl = _timeline([10, 50] + [100] * 10 + [60, 20])  # drain after the end at t = 12
    level = {"ended_by": "steady", "t_end": 12.0, "window": [2.0, 12.0],
             "rule": {"rule": "autoterm"}}
    row = steady_table(tl, levels={"c1": level}).iloc[0]
    assert (row["method"], row["ended_by"], row["steady_at"]) == ("autoterm", "steady", 12.0)
    assert (row["t_start"], row["t_end"], row["window_n"]) == (2.0, 12.0, 10)
    assert row["window_mean"] == 100 and (row["wall_start"], row["wall_end"]) == (1002.0, 1012.0)


def test_a_level_that_hit_its_maximum_is_not_steady():
    tl = _timeline([100, 50, 150, 60, 140, 70, 130])
    level = {"ended_by": "max", "t_end": 7.0, "window": [3.0, 7.0], "rule": {"rule": "autoterm"}}
    row = steady_table(tl, levels={"c1": level}).iloc[0]
    assert row["method"] == "not steady" and row["ended_by"] == "max" and math.isnan(row["steady_at"])
    assert row["window_n"] == 4
    plain = steady_table(tl).iloc[0]
    assert plain["ended_by"] == "files" and plain["method"] != "not steady"


# ---- fingerprints ----------------------------------------------------------------------------
def test_fingerprints_ignore_ports_and_paths_and_name_what_changed():
    from xcbench.store.fingerprint import cell_fingerprint, fingerprint_diff
    gw = {"backend": "cephfs", "origins": 1, "tunables": {"async": False, "buffers_maxbsz": 16 << 20},
          "oss": None, "templates": {"xrootd.cfg.j2": "ab"}}
    pool = {"name": "xcb-rep3", "settings": {"size": 3, "pool_id": 4, "pg_num": 32}}
    a = cell_fingerprint(layout={"stripe_unit": 4 << 20, "pool": "xcb-rep3"}, pool=pool, gateway=gw,
                         versions="v1", configs={"xrootd-gw.cfg": "1111"})
    b = cell_fingerprint(layout={"stripe_unit": 4 << 20, "pool": "xcb-rep3"},
                         pool={**pool, "settings": {**pool["settings"], "pool_id": 9}},
                         gateway=gw, versions="v1", configs={"xrootd-gw.cfg": "2222"})
    assert a["digest"] == b["digest"] and fingerprint_diff(a, b) == []
    c = cell_fingerprint(layout={"stripe_unit": 4 << 20, "pool": "xcb-rep3"}, pool=pool, versions="v1",
                         gateway={**gw, "tunables": {**gw["tunables"], "buffers_maxbsz": 8 << 20}})
    assert c["digest"] != a["digest"] and fingerprint_diff(a, c) == ["gateway.tunables.buffers_maxbsz"]
    assert fingerprint_diff(a, {**a, "versions": "v2"}) == ["versions"]


def test_compare_flags_only_the_cells_whose_fingerprint_changed(tmp_path):
    from tests.support.synthrun import SynthCell, make_run
    from xcbench.analysis.verdicts.compare import compare_data
    from xcbench.analysis.verdicts.run_data import RunData
    from xcbench.store.fingerprint import cell_fingerprint
    cells = [SynthCell("tmpfs", None, None, concurrency=(4,), files=8, repeats=1)]
    p1, ids = make_run(tmp_path / "a", cells)
    p2, _ = make_run(tmp_path / "b", cells)
    runs = []
    for p, maxbsz in ((p1, 16), (p2, 16)):
        from xcbench.store.rundir import RunDir
        rd = RunDir.open(p)
        for cid in rd.cells:
            rd.set_cell_fingerprint(cid, gateway={"tunables": {"buffers_maxbsz": maxbsz}},
                                    configs={"x.cfg": str(p)})
        rd.save_manifest()
        runs.append(RunData(p))
    assert not any(r["config_changed"] for r in compare_data(*runs))
    rd = RunDir.open(p2)
    for cid in rd.cells:
        rd.set_cell_fingerprint(cid, gateway={"tunables": {"buffers_maxbsz": 8}})
    rd.save_manifest()
    rows = compare_data(runs[0], RunData(p2))
    assert rows and all(r["config_fields"] == ["gateway.tunables.buffers_maxbsz"] for r in rows)
    assert cell_fingerprint  # imported for the reader: the digest rules are the same
