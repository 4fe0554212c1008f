"""Campaign datasets: deterministic sizes and bytes, adler32 known without reading a file."""

import random
import zlib

import pytest

from xcbench.campaign.dataset import Dataset, adler32_combine, file_sizes
from xcbench.errors import XcbError


def test_adler32_combine_matches_zlib():
    rng = random.Random(1)
    for _ in range(50):
        a, b = rng.randbytes(rng.randrange(0, 5000)), rng.randbytes(rng.randrange(0, 5000))
        assert adler32_combine(zlib.adler32(a), zlib.adler32(b), len(b)) == zlib.adler32(a + b)


@pytest.mark.parametrize("dist", ["fixed", "uniform", "lognormal"])
def test_every_file_checksum_is_known_without_reading_it(dist):
    d = Dataset.generate(12, 3 << 20, dist, seed=7, block_size=1 << 20)
    for i in range(len(d)):
        data = b"".join(d.chunks(i))
        assert len(data) == d.size(i)
        assert f"{zlib.adler32(data):08x}" == d.adler32(i)


def test_same_seed_same_content_other_seed_other_content(tmp_path):
    a = Dataset.generate(3, 100_000, "uniform", seed=1, block_size=64 << 10)
    b = Dataset.generate(3, 100_000, "uniform", seed=1, block_size=64 << 10)
    c = Dataset.generate(3, 100_000, "uniform", seed=2, block_size=64 << 10)
    assert [a.adler32(i) for i in range(3)] == [b.adler32(i) for i in range(3)]
    assert a.ident == b.ident != c.ident
    assert a.adler32(0) != c.adler32(0)
    p = a.materialise(1, tmp_path / "f1")
    assert p.read_bytes() == b"".join(b.chunks(1))
    assert not (tmp_path / "f1.part").exists()


def test_small_files_differ_from_each_other():
    d = Dataset.generate(50, 10_000, "fixed", seed=0, block_size=1 << 20)
    assert len({d.adler32(i) for i in range(50)}) > 40


def test_size_distributions():
    assert file_sizes(4, 1000, "fixed", 0) == [1000] * 4
    u = file_sizes(2000, 1000, "uniform", 0, spread=0.5)
    assert min(u) >= 500 and max(u) <= 1500
    assert sum(u) / len(u) == pytest.approx(1000, rel=0.03)
    ln = file_sizes(4000, 6_500_000, "lognormal", 3, spread=0.5)
    assert sum(ln) / len(ln) == pytest.approx(6_500_000, rel=0.05)  # mean kept
    assert file_sizes(5, 10, "lognormal", 3) == file_sizes(5, 10, "lognormal", 3)
    with pytest.raises(XcbError, match="size_dist"):
        file_sizes(1, 1, "pareto", 0)
