"""The striping arithmetic against a unit-by-unit walk of Ceph's file_to_extents mapping."""

import itertools

import pytest

from xcbench.cell.layout import (
    Layout,
    cephfs_objects,
    object_count,
    object_sizes,
    striper_objects,
)
from xcbench.errors import XcbError

K, M = 1 << 10, 1 << 20


def walk(size: int, s: Layout) -> dict[int, int]:
    """Reference: map every stripe unit (or its tail) of the file to (object, end offset)."""
    spo = s.object_size // s.stripe_unit
    out: dict[int, int] = {}
    off = 0
    while off < size:
        block = off // s.stripe_unit
        stripeno, stripepos = divmod(block, s.stripe_count)
        objectsetno = stripeno // spo
        objectno = objectsetno * s.stripe_count + stripepos
        length = min(s.stripe_unit, size - off)
        end = (stripeno % spo) * s.stripe_unit + length
        out[objectno] = max(out.get(objectno, 0), end)
        off += length
    return out


def test_ten_mib_one_stripe():
    s = Layout(4 * M, 1, 4 * M)
    assert object_sizes(10 * M, s) == {0: 4 * M, 1: 4 * M, 2: 2 * M}
    assert striper_objects("f", 10 * M, s) == {
        "f.0000000000000000": 4 * M, "f.0000000000000001": 4 * M, "f.0000000000000002": 2 * M}


def test_ten_mib_four_stripes():
    # 10 units of 1 MiB round-robin over 4 objects: 3,3,2,2 units.
    s = Layout(1 * M, 4, 4 * M)
    assert object_sizes(10 * M, s) == {0: 3 * M, 1: 3 * M, 2: 2 * M, 3: 2 * M}
    assert object_count(10 * M, s) == 4


def test_second_object_set_and_tail():
    s = Layout(1 * M, 2, 2 * M)  # set = 4 MiB over objects 0,1; then 2,3
    assert object_sizes(5 * M + 10, s) == {0: 2 * M, 1: 2 * M, 2: 1 * M, 3: 10}


def test_empty_and_tiny_files():
    s = Layout(64 * K, 3, 128 * K)
    assert object_sizes(0, s) == {}
    assert striper_objects("x", 0, s) == {"x.0000000000000000": 0}  # striper metadata object
    assert cephfs_objects(0x10000000000, 0, s) == {}
    assert object_sizes(1, s) == {0: 1}


def test_cephfs_names():
    s = Layout(4 * M, 1, 4 * M)
    assert list(cephfs_objects(0x10000000abc, 9 * M, s)) == [
        "10000000abc.00000000", "10000000abc.00000001", "10000000abc.00000002"]


@pytest.mark.parametrize("su,sc,os_", [
    (64 * K, 1, 64 * K), (64 * K, 3, 256 * K), (128 * K, 2, 512 * K), (1 * M, 4, 4 * M),
    (4 * M, 1, 4 * M), (4 * M, 8, 64 * M)])
def test_matches_unit_walk(su, sc, os_):
    s = Layout(su, sc, os_)
    sizes = sorted({0, 1, su - 1, su, su + 1, os_, os_ + 7, s.set_size - 1, s.set_size,
                    s.set_size + su + 3, 3 * s.set_size + 2 * su - 5, 10 * M, 10 * M + 12345})
    for size in sizes:
        got = object_sizes(size, s)
        assert got == walk(size, s), (size, s)
        assert object_count(size, s) == len(got)
        assert sum(got.values()) == size


def test_matches_unit_walk_small_grid():
    for su_k, sc, mult in itertools.product((64, 192), (1, 2, 5), (1, 3)):
        s = Layout(su_k * K, sc, su_k * K * mult)
        for size in range(0, 3 * s.set_size + 1, 41 * K + 3):
            assert object_sizes(size, s) == walk(size, s)


def test_of_layout():
    assert Layout.of({"stripe_unit": 1 * M, "stripe_count": 4, "object_size": 4 * M}) == Layout(1 * M, 4, 4 * M)


@pytest.mark.parametrize("su,sc,os_,field", [
    (100000, 1, 400000, "stripe_unit"), (0, 1, 4 * M, "stripe_unit"),
    (3 * M, 1, 4 * M, "object_size"), (64 * K, 0, 64 * K, "stripe_count"),
    (4 * M, 1, 256 * M, "object_size")])
def test_check_names_field(su, sc, os_, field):
    with pytest.raises(XcbError, match=rf"cell c1: {field}: "):
        Layout(su, sc, os_).check(128 * M, where="cell c1")


def test_check_accepts_valid():
    Layout(64 * K, 8, 128 * M).check(128 * M)
    Layout(4 * M, 1, 4 * M).check(None)


def test_decode_xrdcks_record_as_xrdceph_stored_it():
    # The XrdCks.adler32 xattr XrdCeph 5.5.3 (+cksio) left on a first object on the dev cluster:
    # name[16], fmTime int64 BE, csTime int32 BE, 2 reserved, length, value[64].
    from xcbench.backends.rados.objects import checksums, decode_cks, striper_meta
    raw = (b"adler32" + b"\0" * 9 + b"\0\0\0\0k\x02\x06\xff" + b"\0" * 4 + b"\0\0\0\x04"
           + b"\xc4\x86\x1ag" + b"\0" * 60)
    rec = decode_cks(raw)
    assert rec == {"name": "adler32", "value": "c4861a67", "fm_time": 0x6B0206FF, "cs_time": 0}
    attrs = {"XrdCks.adler32": raw, "striper.size": b"10485760", "striper.layout.stripe_count": b"4",
             "lock.striper.lock": b"\x01\x01"}
    assert checksums(attrs) == {"adler32": "c4861a67"}
    assert striper_meta(attrs) == {"striper.size": 10485760, "striper.layout.stripe_count": 4}
    with pytest.raises(ValueError):
        decode_cks(raw[:50])
