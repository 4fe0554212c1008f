"""Autocorrelated samples for the noise tests: an AR(1) series, as a level's ~1-s blocks look
(a page-cache flush or a compaction spans several)."""

from __future__ import annotations

import math

import numpy as np


def ar1(rng: np.random.Generator, n: int, rho: float, mean: float = 100.0, cv: float = 0.1) -> np.ndarray:
    """``n`` samples of an AR(1) series of lag-1 correlation ``rho``, stationary mean ``mean``
    and coefficient of variation ``cv``."""
    e = rng.normal(0.0, cv * mean * math.sqrt(1 - rho * rho), n)
    x = np.empty(n)
    x[0] = rng.normal(0.0, cv * mean)
    for i in range(1, n):
        x[i] = rho * x[i - 1] + e[i]
    return mean + x
