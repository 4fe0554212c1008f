"""Telemetry devices: the registry, --telemetry parsing, build(), `telemetry list`, and each
device sampled at its own interval."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support.samplers import Collect, Counting, FakeTime
from xcbench.cli import main
from xcbench.errors import XcbError
from xcbench.telemetry import DEVICES, TelemetryRunner, build, parse_selection, wants

MATRIX = Path(__file__).resolve().parents[3] / "layouts" / "quick.yaml"


def test_every_device_says_what_it_records_and_its_interval():
    assert {"host", "gateway", "ceph", "roles"} <= set(DEVICES)
    for name, d in DEVICES.items():
        assert d.name == name and d.records and "\n" not in d.records
        assert d.interval > 0


def test_default_selection_is_every_device_at_its_default():
    assert parse_selection(None) == {n: d.interval for n, d in DEVICES.items()}
    assert parse_selection("none") == {}


def test_selection_with_intervals():
    assert parse_selection("host:0.5,ceph:2") == {"host": 0.5, "ceph": 2.0}
    assert parse_selection(" gateway , host ") == {"gateway": 1.0, "host": 1.0}
    assert wants("host:0.5", "host") and not wants("host:0.5", "gateway") and wants(None, "gateway")


@pytest.mark.parametrize("text, says", [
    ("host,disk", "unknown device 'disk'"), ("", "unknown device ''"),
    ("host:0", "interval must be a number of seconds > 0"),
    ("host:-1", "interval must be"), ("ceph:fast", "interval must be"), ("host:inf", "interval must"),
    ("host:nan", "interval must"), ("host,host:2", "given twice"),
])
def test_bad_selections_are_one_line_errors(text, says):
    with pytest.raises(XcbError) as e:
        parse_selection(text)
    assert says in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("text", ["host,nosuch", "ceph:0"])
def test_run_rejects_a_bad_selection_with_one_line_and_exit_2(text, capsys, tmp_path):
    rc = main(["run", str(MATRIX), "--telemetry", text, "--store", str(tmp_path),
               "--ceph-conf", str(tmp_path / "never-read.conf")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "--telemetry" in err and "ceph.conf" not in err
    assert not list(tmp_path.iterdir())  # nothing was created


def test_telemetry_list_says_what_each_device_records(capsys):
    assert main(["telemetry", "list"]) == 0
    out = capsys.readouterr().out
    for d in DEVICES.values():
        assert d.name in out
    assert main(["telemetry", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in listed] == list(DEVICES)
    assert all(d["records"] and d["interval"] > 0 for d in listed)


class Listener:
    addr = ("127.0.0.1", 9)


def _ctx(pool=None, cluster=None, listener=None):
    return dict(cell=SimpleNamespace(id="c1"), target=SimpleNamespace(pool=pool), gateway=None,
                listener=listener, cluster=cluster, sink=Collect())


def test_build_leaves_out_devices_that_do_not_apply_to_the_cell():
    r = build(None, **_ctx())  # tmpfs-like: no pool, no cluster, no listener
    assert [s.name for s in r.samplers] == ["host", "roles"]
    r = build(None, **_ctx(pool="p", cluster=SimpleNamespace(), listener=Listener()))
    assert [s.name for s in r.samplers] == ["host", "gateway", "ceph", "roles"]
    assert r.cell_id == "c1" and r.intervals == {"host": 1.0, "gateway": 1.0, "ceph": 1.0,
                                                 "roles": 1.0}
    r = build("ceph:2,host:0.5", **_ctx(pool="p", cluster=SimpleNamespace(), listener=Listener()))
    assert [s.name for s in r.samplers] == ["ceph", "host"]
    assert r.intervals == {"ceph": 2.0, "host": 0.5}
    assert build("ceph", **_ctx()) is None and build("none", **_ctx()) is None


def test_each_device_is_sampled_at_its_own_interval():
    class Host(Counting):
        name = "host"

    class Ceph(Counting):
        name = "ceph"

    fake, sink = FakeTime(), Collect()
    host, ceph = Host(), Ceph()
    r = TelemetryRunner([host, ceph], interval=0.5, intervals={"host": 0.5, "ceph": 2.0},
                        sink=sink, clock=fake.clock, mono=fake.mono_clock, sleep=fake.sleep).start()
    fake.step(8)
    assert fake._slept.acquire(timeout=10)  # rounds at 100.0 .. 104.0
    assert [row["mono"] for row in sink.rows("samples", "host")] == [100 + 0.5 * k for k in range(9)]
    assert [row["mono"] for row in sink.rows("samples", "ceph")] == [100.0, 102.0, 104.0]
    fake._slept.release()
    fake.finish(r)


def test_intervals_that_are_not_multiples_keep_their_own_grid():
    class A(Counting):
        name = "a"

    class B(Counting):
        name = "b"

    fake, sink = FakeTime(), Collect()
    r = TelemetryRunner([A(), B()], intervals={"a": 0.75, "b": 1.0}, sink=sink,
                        clock=fake.clock, mono=fake.mono_clock, sleep=fake.sleep).start()
    fake.step(6)
    assert fake._slept.acquire(timeout=10)
    a = [row["mono"] for row in sink.rows("samples", "a")]
    b = [row["mono"] for row in sink.rows("samples", "b")]
    assert a == [100.0, 100.75, 101.5, 102.25, 103.0]
    assert b == [100.0, 101.0, 102.0, 103.0]
    fake._slept.release()
    fake.finish(r)


def test_a_bad_per_device_interval_is_refused():
    with pytest.raises(ValueError):
        TelemetryRunner([], intervals={"host": 0}, sink=Collect())
