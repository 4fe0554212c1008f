"""Ceph's rules for layouts and pool protection, in the one place they live (xcbench.ceph)."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xcbench import cell
from xcbench.cell.layout import Layout, parse_xattr
from xcbench.cell.protection import PoolSpec, Protection, label_fields
from xcbench.errors import XcbError
from xcbench.matrix import schema as matrix_schema
from xcbench.plan import spec as plan_spec

K, M = 1 << 10, 1 << 20


def test_one_class_each():
    assert cell.Layout is Layout and matrix_schema.Layout is Layout
    assert cell.PoolSpec is Protection and PoolSpec is Protection and plan_spec.Protection is Protection


# ---- Layout -------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout,field,why", [
    # Ceph: EINVAL, stripe_unit not a multiple of CEPH_MIN_STRIPE_UNIT (64 KiB)
    (Layout(100000, 1, 400000), "stripe_unit", "not a multiple of 64 KiB"),
    (Layout(96 * K, 1, 192 * K), "stripe_unit", "not a multiple of 64 KiB"),
    (Layout(0, 1, 4 * M), "stripe_unit", "positive multiple of 64 KiB"),
    # Ceph: EINVAL, object_size not a multiple of stripe_unit (3 MiB su with 4 MiB objects)
    (Layout(3 * M, 1, 4 * M), "object_size", "not a multiple of stripe_unit 3M"),
    (Layout(4 * M, 1, 0), "object_size", "not a multiple of stripe_unit"),
    # Ceph: EINVAL, stripe_count 0
    (Layout(4 * M, 0, 4 * M), "stripe_count", "at least 1"),
    # accepted by setxattr, but writes past osd_max_object_size fail with EFBIG
    (Layout(4 * M, 1, 256 * M), "object_size", "osd_max_object_size 128M"),
])
def test_layout_rejections_name_the_field(layout, field, why):
    problems = layout.problems(128 * M)
    assert problems[0][0] == field and why in problems[0][1]
    with pytest.raises(XcbError, match=rf"^cell c1: {field}: "):
        layout.check(128 * M, where="cell c1")


def test_layout_problems_are_all_listed_but_object_size_only_against_a_valid_stripe_unit():
    assert [f for f, _ in Layout(100000, 0, 333333).problems()] == ["stripe_unit", "stripe_count"]
    assert [f for f, _ in Layout(64 * K, 0, 100 * K).problems()] == ["stripe_count", "object_size"]


def test_layout_max_object_size_only_when_known():
    big = Layout(4 * M, 1, 1 << 30)
    assert big.problems() == [] and big.problems(1 << 30) == []
    assert big.problems((1 << 30) - 1)[0][0] == "object_size"


@pytest.mark.parametrize("layout", [Layout(64 * K, 8, 128 * M), Layout(4 * M, 1, 4 * M),
                                    Layout(1 * M, 4, 4 * M)])
def test_valid_layouts_pass(layout):
    assert layout.problems(128 * M) == [] and layout.check(128 * M) is layout


def test_layout_spellings():
    lay = Layout(1 * M, 4, 4 * M)
    assert lay.xattr(7) == "stripe_unit=1048576 stripe_count=4 object_size=4194304 pool=7"
    assert parse_xattr(lay.xattr("xcb-rep1").encode() + b"\0") == {
        "stripe_unit": 1 * M, "stripe_count": 4, "object_size": 4 * M, "pool": "xcb-rep1"}
    assert lay.striper_params("xcb-gw", "xcb-ec2-1") == "xcb-gw@xcb-ec2-1,4,1048576,4194304"
    assert Layout.of(lay) is lay and Layout.of(parse_xattr(lay.xattr(1))) == lay


# ---- Protection ---------------------------------------------------------------------------------
@pytest.mark.parametrize("value,label", [
    ("replicated", "rep3"), ("rep", "rep3"), ("unprotected", "rep1"), ("rep1", "rep1"), ("rep3", "rep3"), ("replicated 3", "rep3"), ("r3", "rep3"),
    ("REP2", "rep2"), ({"replicated": 2}, "rep2"), ({"rep": 4}, "rep4"),
    ("ec2+1", "ec2+1"), ("ec8-3", "ec8+3"), ("ec 4 + 2", "ec4+2"), ({"ec": "8+3"}, "ec8+3"),
    ({"ec": {"k": 4, "m": 2}}, "ec4+2"), ({"kind": "erasure", "k": 6, "m": 3}, "ec6+3"),
    ({"kind": "replicated", "size": 3}, "rep3"), ({"kind": "replicated"}, "rep3")])
def test_protection_forms(value, label):
    assert Protection.parse(value).label == label


@pytest.mark.parametrize("value,why", [
    ("mirrored", "is not a pool"), ("raid6", "is not a pool"), (3, "is not a pool"),
    ({"ec": "x+1"}, "is not a pool"), ({"kind": "erasure", "k": "8", "m": 3}, "is not a pool"),
    ({"kind": "striped", "size": 2}, "is not a pool"),
    ("ec0+1", "EC needs k >= 1 and m >= 1"), ("ec2+0", "EC needs k >= 1 and m >= 1"),
    ("rep0", "replicated size must be >= 1"), ("ec-1+2", "EC needs k >= 1")])
def test_protection_rejections(value, why):
    with pytest.raises(ValueError, match=why):
        Protection.parse(value)


def test_label_fields_keeps_what_was_written():
    assert label_fields("replicated") == {"kind": "replicated"}
    assert label_fields("rep0") == {"kind": "replicated", "size": 0}
    assert label_fields("ec8+3") == {"kind": "erasure", "k": 8, "m": 3}
    assert label_fields("ec8") is None and label_fields("raid6") is None


def test_protection_names_and_arithmetic():
    rep, ec = Protection("replicated", size=3), Protection("erasure", k=8, m=3)
    assert (rep.name, rep.profile, rep.label) == ("xcb-rep3", None, "rep3")
    assert (ec.name, ec.profile, ec.label) == ("xcb-ec8-3", "xcb-ec8-3", "ec8+3")
    assert rep.raw_ratio == 3.0 and ec.raw_ratio == pytest.approx(11 / 8)
    assert (rep.shards, ec.shards, rep.read_shards, ec.read_shards) == (3, 11, 1, 8)
    assert rep.fanout_write == 2.0 and ec.fanout_write == pytest.approx(10 / 8)
    assert rep.fanin_read == 0.0 and ec.fanin_read == pytest.approx(7 / 8)


@pytest.mark.parametrize("prot,osds,why", [
    (Protection("erasure", k=6, m=3), 3, "k+m = 9 needs 9 OSDs, the cluster has 3"),
    (Protection("replicated", size=4), 3, "size 4 needs 4 OSDs"),
    (Protection("erasure", k=1, m=1), 3, "k >= 2"),  # Ceph's EC plugins refuse k=1
    (Protection("erasure", k=2, m=0), 3, "EC needs k >= 1 and m >= 1"),
    (Protection("mirrored"), 3, "unknown pool kind 'mirrored'")])
def test_check_creatable(prot, osds, why):
    with pytest.raises(XcbError, match=f"^pool {re.escape(prot.name)}: .*{re.escape(why)}"):
        prot.check_creatable(osds)


def test_creatable_on_enough_osds():
    Protection("erasure", k=2, m=1).check_creatable(3)
    Protection("replicated", size=3).check_creatable(3)


@given(st.integers(1, 64), st.integers(1, 16), st.integers(1, 12))
def test_label_round_trips(k, m, size):
    for p in (Protection("erasure", k=k, m=m), Protection("replicated", size=size)):
        assert Protection.parse(p.label) == p and Protection.parse(p.name.removeprefix("xcb-")
                                                                   .replace("-", "+")) == p


def test_cell_ids_hash_the_same_fields():
    """A cell's id hashes asdict(layout/pool): the field names and order must not drift."""
    from dataclasses import fields
    assert [f.name for f in fields(Layout)] == ["stripe_unit", "stripe_count", "object_size"]
    assert [f.name for f in fields(Protection)] == ["kind", "size", "k", "m"]
