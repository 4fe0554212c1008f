"""Plan specs and flags: bad input is one XcbError line naming the file (or flag) and the field."""

import json

import pytest
import yaml

from xcbench.cli import main
from xcbench.errors import XcbError
from xcbench.figures.units import parse_capacity, parse_rate
from xcbench.plan.presets import resolve_target
from xcbench.plan.spec import example_path, examples, load_cluster, load_gateway

GOOD = {
    "name": "t", "hosts": 12,
    "network": {"public": {"nics": 2, "speed": "25Gb/s"}},
    "drives": {"per_host": 24, "kind": "hdd", "size": "18TB", "iops": 200, "bandwidth": "250MB/s"},
    "protection": "ec8+3",
}


def write(tmp_path, data, name="site.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data))
    return p


def error_of(tmp_path, data, sets=()):
    p = write(tmp_path, data)
    with pytest.raises(XcbError) as e:
        load_cluster(p, list(sets))
    msg = str(e.value)
    assert "\n" not in msg
    return msg, str(p)


def test_examples_load():
    assert {"tier1-hdd-ec8+3", "tier1-hdd-rep3", "nvme-ec4+2", "devcluster"} <= set(examples())
    for name in examples():
        spec, gw = load_cluster(example_path(name))
        load_gateway(None, gw, spec.source)
        assert spec.hosts >= 1


def test_units():
    assert parse_rate("100Gb/s") == 100e9 / 8
    assert parse_rate("1.22Tbps") == pytest.approx(1.22e12 / 8)
    assert parse_rate("250MB/s") == 250e6
    assert parse_rate("1GiB/s") == 2 ** 30
    assert parse_capacity("18TB") == 18e12
    assert parse_capacity("16TiB") == 16 * 2 ** 40
    for bad in ("100", "fast", "-25Gb/s"):
        with pytest.raises(ValueError):
            parse_rate(bad)


@pytest.mark.parametrize("mutate, field, words", [
    (lambda d: d.update(protection={"kind": "erasure", "k": 0, "m": 2}), "protection.k", ">= 1"),
    (lambda d: d.update(protection="ec0+3"), "protection.k", ">= 1"),
    (lambda d: d.update(protection="rep0"), "protection.size", ">= 1"),
    (lambda d: d.update(protection="raid6"), "protection", "rep<N>"),
    (lambda d: d["network"]["public"].update(speed="-25Gb/s"), "network.public.speed", "negative"),
    (lambda d: d["network"]["public"].update(speed=25), "network.public.speed", "no unit"),
    (lambda d: d["drives"].update(iops=-5), "drives.iops", "> 0"),
    (lambda d: d["drives"].pop("iops"), "drives.iops", "missing"),
    (lambda d: d.pop("hosts"), "hosts", "missing"),
    (lambda d: d.pop("network"), "network", "missing"),
    (lambda d: d["drives"].update(iosp=3), "drives.iosp", "unknown field"),
    (lambda d: d.update(hosts=2.5), "hosts", "whole number"),
    (lambda d: d.update(hosts=8), "protection", "distinct hosts"),
    (lambda d: d["drives"].update(kind="tape"), "drives.kind", "not one of"),
    (lambda d: d.update(write={"object_size": "4M", "stripe_unit": "3M"}), "write.object_size", "multiple"),
])
def test_bad_cluster_spec_names_file_and_field(tmp_path, mutate, field, words):
    data = json.loads(json.dumps(GOOD))
    mutate(data)
    msg, path = error_of(tmp_path, data)
    assert msg.startswith(f"{path}: {field}: "), msg
    assert words in msg


def test_set_overrides_and_is_named_in_errors(tmp_path):
    p = write(tmp_path, GOOD)
    spec, _ = load_cluster(p, ["cluster.hosts=40", "cluster.protection=rep3", "gateway.nics=4"])
    assert spec.hosts == 40 and spec.protection.label == "rep3"
    msg, _ = error_of(tmp_path, GOOD, ["cluster.protection.k=0", "cluster.protection.kind=erasure",
                                       "cluster.protection.m=2"])
    # protection was a string in the file; --set turned it into a mapping field by field
    assert msg.startswith("--set: protection.k: must be >= 1"), msg
    with pytest.raises(XcbError, match="section.field=value"):
        load_cluster(p, ["hosts=3"])


def test_bad_gateway_spec(tmp_path):
    p = write(tmp_path, {"nics": 0}, "gw.yaml")
    with pytest.raises(XcbError, match=rf"^{p}: nics: must be >= 1"):
        load_gateway(p, None, "x")
    p = write(tmp_path, {"gateway": {"checksum": "later"}}, "gw2.yaml")
    with pytest.raises(XcbError, match=rf"^{p}: gateway.checksum: 'later' is not one of"):
        load_gateway(p, None, "x")
    with pytest.raises(XcbError, match=r"^--set: gateway.speed: "):
        load_gateway(None, {}, "site.yaml", ["gateway.speed=fast"])


def test_bad_targets():
    with pytest.raises(XcbError, match="^--rate: "):
        resolve_target(rate="-100Gb/s")
    with pytest.raises(XcbError, match="^--rate: must be > 0"):
        resolve_target(rate="0Gb/s")
    with pytest.raises(XcbError, match="^--write-fraction: "):
        resolve_target("ska-aa4", write_fraction=1.5)
    with pytest.raises(XcbError, match="^--file-size: "):
        resolve_target("ska-aa4", file_size="big")
    with pytest.raises(XcbError, match="give --target PRESET or --rate"):
        resolve_target()
    t = resolve_target(rate="100Gb/s", write_fraction=0.8, file_size="6.5G")
    assert t.rate == 12.5e9 and t.file_size == int(6.5 * 2 ** 30)


def test_cli_errors_are_one_line(tmp_path, capsys):
    data = json.loads(json.dumps(GOOD))
    data["protection"] = {"kind": "erasure", "k": 0, "m": 3}
    p = write(tmp_path, data)
    assert main(["plan", "--rate", "100Gb/s", "--cluster-spec", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{p}: protection.k: must be >= 1 (got 0)" in err
    assert main(["plan", "--rate", "100Gb/s", "--nic-saturation", "1.5"]) == 2
    assert "--nic-saturation: 1.5 is outside" in capsys.readouterr().err
