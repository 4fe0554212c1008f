"""Version and clock checks through the local transport (the ssh ones: tests/integration)."""

import pytest

from xcbench import __version__
from xcbench.errors import XcbError
from xcbench.hosts import checks, local_inventory, parse_inventory


def test_versions_local():
    assert checks.check_versions(local_inventory()) == {"local": __version__}


def test_version_missing_names_the_host():
    inv = parse_inventory({"hosts": {"a": {"roles": ["client"], "xcbench": "false"}}}, "h.yaml")
    with pytest.raises(XcbError, match=r"^host a: no xcbench there"):
        checks.check_versions(inv)


def test_version_differs_names_the_host():
    inv = parse_inventory({"hosts": {"a": {"roles": ["client"]},
                                     "b": {"roles": ["gateway"], "xcbench": "echo xcbench 0.0.1"}}},
                          "h.yaml")
    with pytest.raises(XcbError, match=rf"^host b: xcbench 0.0.1 there, {__version__} here"):
        checks.check_versions(inv)


def test_clock_offset_local_is_small():
    off = checks.clock_offsets(local_inventory())["local"]
    assert off["rtt_s"] > 0
    assert abs(off["offset_s"]) <= off["rtt_s"] / 2 + 0.005  # the same clock


def test_clock_fails_with_one_line(monkeypatch):
    monkeypatch.setattr(checks, "CLOCK", ["sh", "-c", "echo notatime"])
    with pytest.raises(XcbError, match="host local: clock check failed"):
        checks.clock_offsets(local_inventory())


def test_version_command_that_does_not_exist_names_the_host(tmp_path):
    gone = str(tmp_path / "no" / "xcbench")  # a path, so no PATH lookup: the exec itself fails
    inv = parse_inventory({"hosts": {"a": {"roles": ["client"], "xcbench": gone}}}, "h.yaml")
    with pytest.raises(XcbError, match=r"^host a: cannot run .*No such file or directory; install"):
        checks.check_versions(inv)
