"""A campaign dataset: file count x size distribution, content generated from a seed.

Every file is a sequence of whole *blocks* taken from a small pool (SHAKE-256 of the seed, so
the bytes are the same on every machine and Python version) followed by one tail slice of a
block at a seeded offset. Because the adler32 of each pool block is computed once, the adler32 of
any file is known by combining block checksums (zlib's adler32_combine, in Python): no file is
ever read or even built to know its checksum, and a writer hands the pool's bytes objects to the
client without copying them.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import random
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path

from xcbench.errors import XcbError
from xcbench.system.scratch import write_new

SIZE_DISTS = ("fixed", "uniform", "lognormal")
_BASE = 65521  # largest prime below 2**16 (adler32's modulus)


def adler32_combine(adler1: int, adler2: int, len2: int) -> int:
    """adler32 of A+B from adler32(A), adler32(B) and len(B) (zlib's adler32_combine)."""
    rem = len2 % _BASE
    sum1 = adler1 & 0xFFFF
    sum2 = (rem * sum1) % _BASE
    sum1 += (adler2 & 0xFFFF) + _BASE - 1
    sum2 += ((adler1 >> 16) & 0xFFFF) + ((adler2 >> 16) & 0xFFFF) + _BASE - rem
    if sum1 >= _BASE:
        sum1 -= _BASE
    if sum1 >= _BASE:
        sum1 -= _BASE
    if sum2 >= (_BASE << 1):
        sum2 -= (_BASE << 1)
    if sum2 >= _BASE:
        sum2 -= _BASE
    return sum1 | (sum2 << 16)


def format_adler32(value: int) -> str:
    return f"{value & 0xFFFFFFFF:08x}"


def file_sizes(files: int, mean: int, dist: str, seed: int, spread: float = 0.5) -> list[int]:
    """Deterministic sizes: fixed; uniform in mean*(1±spread); lognormal with this mean and
    sigma=spread (mu = ln(mean) - sigma²/2 so the expected size is ``mean``)."""
    if dist not in SIZE_DISTS:
        raise XcbError(f"campaign: size_dist: {dist!r} is not one of {', '.join(SIZE_DISTS)}")
    if files < 1 or mean < 1:
        raise XcbError(f"campaign: files ({files}) and file_size ({mean}) must be >= 1")
    if dist == "fixed":
        return [mean] * files
    rng = random.Random(f"xcbench-sizes:{seed}")
    if dist == "uniform":
        lo, hi = mean * (1 - spread), mean * (1 + spread)
        return [max(1, round(rng.uniform(lo, hi))) for _ in range(files)]
    mu = math.log(mean) - spread * spread / 2
    return [max(1, round(rng.lognormvariate(mu, spread))) for _ in range(files)]


@functools.lru_cache(maxsize=4)
def _pool(seed: int, block_size: int, blocks: int) -> tuple[tuple[bytes, ...], tuple[int, ...]]:
    """The immutable block pool of a seed and its adler32s: made once per process (~0.3 s of
    CPU for 16 x 4 MiB), shared by every campaign with the same seed and block size."""
    pool = tuple(hashlib.shake_256(f"xcbench-dataset:{seed}:{b}".encode()).digest(block_size)
                 for b in range(blocks))
    return pool, tuple(zlib.adler32(b) for b in pool)


class Dataset:
    """``files`` files of ``sizes`` bytes; content and adler32 from ``seed``."""

    def __init__(self, sizes: list[int], seed: int = 0, *, block_size: int = 4 << 20,
                 pool_blocks: int = 16, prefix: str = "f"):
        if block_size < 4096 or block_size % 4096:
            raise XcbError(f"campaign: block_size {block_size} must be a multiple of 4096")
        self.sizes = list(sizes)
        self.seed = seed
        self.block_size = block_size
        self.prefix = prefix
        self._pool, self._pool_adler = _pool(seed, block_size, pool_blocks)
        self._layouts: dict[int, tuple[list[int], int, int, int]] = {}
        self._adler: dict[int, str] = {}
        self._lock = threading.Lock()

    @classmethod
    def generate(cls, files: int, file_size: int, size_dist: str = "fixed", seed: int = 0,
                 spread: float = 0.5, **kw) -> Dataset:
        return cls(file_sizes(files, file_size, size_dist, seed, spread), seed, **kw)

    def __len__(self) -> int:
        return len(self.sizes)

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes)

    @property
    def ident(self) -> str:
        """Short id of the content (same seed, sizes and block layout -> same files)."""
        h = hashlib.sha1(f"{self.seed}:{self.block_size}:{len(self._pool)}:{self.sizes}".encode())
        return h.hexdigest()[:10]

    def name(self, i: int) -> str:
        return f"{self.prefix}{i:06d}"

    def size(self, i: int) -> int:
        return self.sizes[i]

    def _layout(self, i: int) -> tuple[list[int], int, int, int]:
        """(full block ids, tail block id, tail offset, tail length) of file ``i``."""
        lay = self._layouts.get(i)
        if lay is None:
            rng = random.Random(f"xcbench-file:{self.seed}:{i}")
            size, bs, n = self.sizes[i], self.block_size, len(self._pool)
            blocks = [rng.randrange(n) for _ in range(size // bs)]
            tail = size % bs
            tail_block = rng.randrange(n)
            tail_off = rng.randrange((bs - tail) // 4096 + 1) * 4096 if tail else 0
            lay = (blocks, tail_block, tail_off, tail)
            self._layouts[i] = lay
        return lay

    def chunks(self, i: int) -> Iterator[bytes]:
        """The file's bytes, one block (a shared bytes object, not a copy) at a time."""
        blocks, tb, toff, tail = self._layout(i)
        for b in blocks:
            yield self._pool[b]
        if tail:
            yield self._pool[tb][toff:toff + tail]

    def read_range(self, i: int, offset: int, length: int) -> bytes:
        """Bytes ``offset .. offset+length`` of file ``i`` (clipped at its end), regenerated
        from the block pool: what a random or vector read of the stored file must return."""
        blocks, tb, toff, tail = self._layout(i)
        end, bs = min(offset + length, self.sizes[i]), self.block_size
        parts, pos = [], max(offset, 0)
        while pos < end:
            k, within = divmod(pos, bs)
            src = self._pool[blocks[k]] if k < len(blocks) else \
                self._pool[tb][toff:toff + tail]
            piece = src[within:within + (end - pos)]
            parts.append(piece)
            pos += len(piece)
        return b"".join(parts)

    def adler32(self, i: int) -> str:
        """adler32 of file ``i`` as 8 hex digits, from the block checksums only."""
        value = self._adler.get(i)
        if value is None:
            blocks, tb, toff, tail = self._layout(i)
            acc = 1  # adler32 of the empty string
            for b in blocks:
                acc = adler32_combine(acc, self._pool_adler[b], self.block_size)
            if tail:
                acc = adler32_combine(acc, zlib.adler32(self._pool[tb][toff:toff + tail]), tail)
            value = self._adler[i] = format_adler32(acc)
        return value

    def materialise(self, i: int, path: str | os.PathLike,
                    owner: tuple[int, int] | None = None) -> Path:
        """Write file ``i`` to ``path`` (for a TPC source dir or a gfal2 file:// source) without
        following any link in its directory (xcbench.system.scratch.write_new); ``owner``: (uid, gid)
        it is given to, set on the new file's descriptor."""
        p = Path(path)
        return write_new(p.parent, p.name, self.chunks(i), mode=0o644, owner=owner)

    def describe(self) -> dict:
        sizes = self.sizes
        return {"files": len(sizes), "bytes": sum(sizes), "min_size": min(sizes),
                "max_size": max(sizes), "mean_size": sum(sizes) / len(sizes), "seed": self.seed,
                "block_size": self.block_size, "pool_blocks": len(self._pool), "id": self.ident,
                "content": "SHAKE-256(seed, block) blocks; adler32 by adler32_combine"}
