"""Shared test configuration. The ceph_cluster fixture comes from xcbench.pytest_plugin."""

# Hypothesis: no per-example deadline — these machines are shared and noisy, and a slow example
# is not a wrong one (speed targets live in benchmarks/).
from hypothesis import settings  # noqa: E402

pytest_plugins = ["pytester"]  # tests/unit/test_skip_guard.py runs inner pytest sessions

settings.register_profile("xcbench", deadline=None)
settings.load_profile("xcbench")

# Under CI=true a skip outside the allow-list fails (tests/skip_guard.py says why and how to allow).
from tests.skip_guard import pytest_make_collect_report, pytest_runtest_makereport  # noqa: E402,F401
