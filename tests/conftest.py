"""Shared test configuration. The ceph_cluster fixture comes from xcbench.pytest_plugin."""

# Hypothesis: no per-example deadline — these machines are shared and noisy, and a slow example
# is not a wrong one (speed targets live in benchmarks/).
from hypothesis import settings  # noqa: E402

pytest_plugins = ["pytester"]  # tests/unit/test_skip_guard.py runs inner pytest sessions

settings.register_profile("xcbench", deadline=None)
settings.load_profile("xcbench")

# Under CI=true a skip outside the allow-list fails (tests/skip_guard.py says why and how to allow).
# ---- a second, unprivileged local user (shared-host tests) ----------------------------------------
import os  # noqa: E402
import secrets  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import pytest  # noqa: E402

from tests.skip_guard import pytest_make_collect_report, pytest_runtest_makereport  # noqa: E402,F401


@pytest.fixture(autouse=True)
def _signal_mask_kept():
    """A test leaves its thread's signal mask as it found it: every process started afterwards
    inherits a blocked mask (xcbench.clients.gfal2_client.new_context says how one came about)."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    yield
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before, "the test left signals blocked"


@dataclass(frozen=True)
class OtherUser:
    """Another local user of the host: ``run`` executes a command as that user."""
    name: str
    uid: int
    gid: int

    def run(self, argv: list[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(argv, user=self.uid, group=self.gid, extra_groups=[], check=True,
                              capture_output=True, text=True, timeout=60, **kw)


@pytest.fixture
def other_user():
    """A throwaway unprivileged user made for the test (useradd) and removed after (userdel)."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("making a second local user needs root and useradd")
    name = f"xcbt{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                    "--user-group", name], check=True, capture_output=True, timeout=60)
    try:
        import pwd
        pw = pwd.getpwnam(name)
        yield OtherUser(name, pw.pw_uid, pw.pw_gid)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True, timeout=60)


# ---- the state home of the test session ----------------------------------------------------------
def pytest_configure(config):
    """The commands the tests run keep their records in the checkout's git-ignored ./.xcbench
    (as asked here, not the user's default state home), unless the caller chose one: a test
    session killed with -9 leaves records the next session in this checkout reaps."""
    if not os.environ.get("XCBENCH_HOME"):
        os.environ["XCBENCH_HOME"] = str(config.rootpath / ".xcbench")
