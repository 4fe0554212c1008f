"""Shared test configuration. The ceph_cluster fixture comes from xcbench.pytest_plugin."""

# Hypothesis: no per-example deadline — these machines are shared and noisy, and a slow example
# is not a wrong one (speed targets live in benchmarks/).
from hypothesis import settings  # noqa: E402

settings.register_profile("xcbench", deadline=None)
settings.load_profile("xcbench")
