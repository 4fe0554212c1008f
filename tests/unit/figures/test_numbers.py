"""xcbench.figures.numbers: the one test of "is it a number"."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from xcbench.figures.numbers import as_float, finite_or_none, is_finite


@pytest.mark.parametrize("v", [0, 3, -2.5, np.float64(1.5), np.int64(7), 1e300])
def test_finite_numbers(v):
    assert is_finite(v) and as_float(v) == float(v) and finite_or_none(v) == float(v)


@pytest.mark.parametrize("v", [None, math.nan, math.inf, -math.inf, True, False, np.nan, pd.NA,
                               "3", "x", [1], {}, np.bool_(True)])
def test_not_finite_numbers(v):
    assert not is_finite(v) and finite_or_none(v) is None


def test_as_float_takes_numeric_strings_and_nothing_else():
    assert as_float("2.5") == 2.5 and as_float(" 4 ") == 4.0
    for v in (None, "x", "inf", "nan", True, pd.NA, [1], 10 ** 400):
        assert math.isnan(as_float(v)), v
