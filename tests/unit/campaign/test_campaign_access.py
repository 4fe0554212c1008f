"""Read access patterns, the mixed campaign's interleaving, and the dataset's byte ranges that
random and vector reads are verified against."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xcbench.campaign.access import direction_of, parse_access, ranges
from xcbench.campaign.dataset import Dataset
from xcbench.campaign.spec import CampaignSpec, check_campaign_settings
from xcbench.errors import XcbError


@pytest.fixture(scope="module")
def ds():
    return Dataset([3 * 8192 + 100, 8192, 5000], seed=3, block_size=8192, pool_blocks=4)


def whole(ds, i):
    return b"".join(ds.chunks(i))


@settings(max_examples=200, deadline=None)
@given(i=st.integers(0, 2), off=st.integers(0, 30000), n=st.integers(0, 30000))
def test_read_range_is_the_file_s_bytes(ds, i, off, n):
    assert ds.read_range(i, off, n) == whole(ds, i)[off:off + n]


def test_whole_range_has_the_known_adler32(ds):
    for i in range(len(ds)):
        data = ds.read_range(i, 0, ds.size(i))
        assert len(data) == ds.size(i)
        assert f"{zlib.adler32(data):08x}" == ds.adler32(i)


def test_ranges_are_inside_the_file_and_repeatable():
    acc = parse_access({"pattern": "random", "size": "4K", "count": 50})
    r = ranges(acc, 100_000, 1, 2, 7)
    assert r == ranges(acc, 100_000, 1, 2, 7) and r != ranges(acc, 100_000, 1, 2, 8)
    assert len(r) == 50 and all(0 <= o and o + n <= 100_000 and n == 4096 for o, n in r)
    assert ranges(acc, 1000, 1, 2, 7)[0] == (0, 1000)  # a small file is read whole


@pytest.mark.parametrize("files, fraction", [(10, 0.5), (16, 0.25), (7, 0.3), (100, 0.9)])
def test_mixed_interleaves_the_read_share(files, fraction):
    dirs = [direction_of("mixed", fraction, s) for s in range(files)]
    assert abs(dirs.count("read") - fraction * files) <= 1
    assert "read" in dirs and "write" in dirs
    assert direction_of("read", fraction, 3) == "read" and direction_of("write", 0.5, 3) == "write"


def test_spec_normalises_and_names_bad_fields():
    spec = CampaignSpec(direction="mixed", access={"pattern": "readv", "size": "64K"})
    assert spec.access == {"pattern": "readv", "size": 65536, "count": 16}
    assert CampaignSpec().access == {"pattern": "full", "size": None, "count": None}
    with pytest.raises(XcbError, match="direction: 'up' is not one of"):
        CampaignSpec(direction="up")
    assert check_campaign_settings({"read_fraction": 0, "access": "zigzag"}) == [
        ("read_fraction", "0 is not a number between 0 and 1 (exclusive: a mixed campaign "
         "both reads and writes)"),
        ("access.pattern", "'zigzag' is not one of full, random, readv")]


def test_timeline_splits_bytes_by_direction():
    from xcbench.campaign.rows import Timeline
    tl = Timeline("c", "k", 4, 0, start=100.0)
    a = tl.sample(101.0, 10_000, 2, 0, 0, read_bytes=3_000)
    b = tl.sample(102.0, 25_000, 2, 1, 0, read_bytes=3_000)
    c = tl.sample(103.0, 30_000, 0, 2, 0)  # a write-only caller never passes read bytes
    assert (a["bytes_read"], a["bytes_written"]) == (3_000, 7_000)
    assert (b["bytes_read"], b["bytes_written"]) == (0, 15_000)
    assert (c["bytes_read"], c["bytes_written"]) == (0, 5_000)
    assert all(r["bytes_read"] + r["bytes_written"] == r["bytes"] for r in (a, b, c))
