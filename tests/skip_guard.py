"""Under ``CI=true`` a skipped test is a failed test, unless this allow-list names it.

A skip passes, so a suite whose prerequisites went missing (no cgroups, no sshd, no Chromium, no
fio) would pass while testing nothing. CI installs every prerequisite (``make setup``), so there a
skip means something is wrong. The few skips that are right even on a complete machine are listed
in ``ALLOWED``, each with why; a skip whose test id matches none of them becomes a failure that
says how to allow it. ``tests/conftest.py`` imports the hooks; outside CI nothing changes.
"""

from __future__ import annotations

import fnmatch
import os

import pytest

# test node id (fnmatch pattern) -> why a skip there is right on a complete CI machine
ALLOWED: dict[str, str] = {
    "tests/integration/selftest/test_selftest.py::test_full_selftest":
        "the ~10 min full self-test runs only when asked for (-m slow, `make slow`, `make selftest`)",
    "tests/integration/network/test_baseline.py::test_audit_says_whether_fq_exists_rather_than_assuming":
        "a host that already uses fq has nothing to report (this kernel has no fq)",
    "tests/integration/hosts/test_hosts.py::test_the_cpu_quota_holds":
        "a shared machine so busy that an unconfined busy loop gets under 1.5x the quota cannot "
        "show the quota binding (the test prints what it measured)",
    "tests/integration/ceph/test_cluster.py::test_ensure_pool":
        "creates and deletes a pool: only on a cluster xcbench made, never on one given by --ceph-conf",
    "tests/integration/ceph/test_cluster.py::test_pools_create_exists_use":
        "creates and deletes pools: only on a cluster xcbench made, never on one given by --ceph-conf",
    "tests/integration/run/test_run.py::test_osd_dies_during_ec_campaign":
        "kills an OSD: only on the embedded mini cluster, never on one given by --ceph-conf",
}

HOW = ("a skip under CI=true is a failure: install what the test needs (`make setup`), or, if the "
       "skip is right even on a complete machine, add its test id and the reason to ALLOWED in "
       "tests/skip_guard.py")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def allowed(nodeid: str, table: dict[str, str] | None = None) -> str | None:
    """The allow-list's reason for a skip of ``nodeid`` (parameters ignored), or None."""
    base = nodeid.split("[", 1)[0]
    for pattern, why in (ALLOWED if table is None else table).items():
        if fnmatch.fnmatchcase(nodeid, pattern) or fnmatch.fnmatchcase(base, pattern):
            return why
    return None


def _skip_reason(report) -> str:
    lr = report.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:  # (path, line, "Skipped: why")
        return str(lr[2]).removeprefix("Skipped: ")
    return str(lr)


def _fail_if_not_allowed(report) -> None:
    if not (in_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return
    if allowed(report.nodeid) is not None:
        return
    report.outcome = "failed"
    report.longrepr = f"skipped under CI=true: {_skip_reason(report)}\n{HOW}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_if_not_allowed(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    # a module that skips itself at import (pytest.skip(allow_module_level=True), importorskip)
    outcome = yield
    _fail_if_not_allowed(outcome.get_result())
