"""Shared test configuration. The ceph_cluster fixture comes from xcbench.pytest_plugin."""
