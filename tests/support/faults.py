"""What the fault tests share: an xcbench CLI subprocess that can be found again, and the
checks that nothing it started (process, mount) is left behind.

Each command runs with a marker in its environment (inherited by everything it starts: xrootd,
fio, ceph-fuse, xrdcp ...), TMPDIR and XCBENCH_HOME in a scratch dir of the test; its mounts land
under that dir or under /var/tmp/xcbench-<run name>-*. Other engineers' processes and mounts
on this shared machine carry neither, so the checks see only what the test made.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.support.gwcheck import xrootd_workdir
from xcbench.store.rundir import RunDir
from xcbench.system import proc
from xcbench.system.mounts import mount_table

MARK = "XCB_FAULT_TEST"


class Scene:
    """Scratch dir, marker and environment for the xcbench commands of one test."""

    def __init__(self, root: Path):
        self.root = root
        self.mark = uuid.uuid4().hex[:12]
        self.home = root / "home"
        self.tmp = root / "tmp"
        self.tmp.mkdir(mode=0o755)
        self.env = {**os.environ, MARK: self.mark, "XCBENCH_HOME": str(self.home),
                    "TMPDIR": str(self.tmp), "PYTHONUNBUFFERED": "1",
                    "PYTHONFAULTHANDLER": "1"}  # a crash shows where
        self.tokens = [str(root)]  # a mount whose path holds one of these is the test's
        self.clis: list[Cli] = []
        self.seen: dict[int, float] = {}  # pid -> create time: descendants of the commands

    def start(self, *args: str, env: dict | None = None) -> Cli:
        cli = Cli([sys.executable, "-m", "xcbench", *args], {**self.env, **(env or {})}, self.root)
        self.clis.append(cli)
        return cli

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "xcbench", *args], env=self.env,
                              cwd=self.root, capture_output=True, text=True, timeout=timeout)

    # -- what is left behind ---------------------------------------------------------------------
    def _descendants(self) -> None:
        """Remember every live descendant of the commands started: a helper run as another user
        (fio in that user's dir) starts with a small environment and no path of the scene."""
        for cli in self.clis:
            with contextlib.suppress(psutil.Error):
                for c in psutil.Process(cli.p.pid).children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        self.seen.setdefault(c.pid, c.create_time())

    def processes(self) -> dict[int, str]:
        """{pid: command} of live processes of this scene (the test's own process and zombies
        excluded): those carrying its marker, the daemons, which start with a small
        environment of their own (no marker), by a path of the scene in their command line, and
        any process seen as a descendant of the commands started (the same process: its pid and
        create time), reparented or not."""
        self._descendants()
        found = {}
        for pid, born in self.seen.items():
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(pid)
                if p.create_time() == born and p.status() != psutil.STATUS_ZOMBIE:
                    found[pid] = " ".join(p.cmdline())[:200]
        for p in psutil.process_iter(["pid", "status"]):
            if p.pid == os.getpid() or p.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            with contextlib.suppress(psutil.Error, OSError):
                cmd = " ".join(p.cmdline())
                if p.environ().get(MARK) == self.mark or any(t in cmd for t in self.tokens):
                    found[p.pid] = cmd[:200]
        return found

    def mounts(self) -> list[str]:
        return sorted(str(m) for m, _ in mount_table() if any(t in str(m) for t in self.tokens))

    def assert_clean(self, what: str = "", keep: tuple[str, ...] = ()) -> None:
        """No process, mount (but the test's own ``keep``) or process record left."""
        def mounts() -> list[str]:
            return [m for m in self.mounts() if m not in keep]
        deadline = time.monotonic() + 10  # a process reaped by init a moment after its parent
        while (self.processes() or mounts()) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = self.processes()
        assert left == {}, f"processes left behind {what}: {left}"
        assert mounts() == [], f"mounts left behind {what}: {mounts()}"
        records = list((self.home / "procs").glob("*.json")) if (self.home / "procs").exists() else []
        assert records == [], f"process records left {what}: {[r.read_text()[:300] for r in records]}"

    def cleanup(self) -> None:
        """After the test, whatever it asserted: nothing of it stays on the machine."""
        for pid in self.processes():
            proc.kill_group(pid)
        for m in reversed(self.mounts()):
            subprocess.run(["umount", "-l", m], check=False, capture_output=True)


@contextlib.contextmanager
def scene(prefix: str):
    with xrootd_workdir(prefix) as root:
        s = Scene(root)
        try:
            yield s
        finally:
            s.cleanup()


class Cli:
    """A running xcbench command; stdout and stderr read in the background."""

    def __init__(self, argv: list[str], env: dict, cwd: Path):
        self.p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.out: list[str] = []
        self.err: list[str] = []
        self._threads = [threading.Thread(target=self._read, args=(s, b), daemon=True)
                         for s, b in ((self.p.stdout, self.out), (self.p.stderr, self.err))]
        for t in self._threads:
            t.start()

    @staticmethod
    def _read(stream, buf: list[str]) -> None:
        for line in stream:
            buf.append(line)

    def wait_for(self, cond, what: str, timeout: float = 180) -> None:
        """Until ``cond()`` holds (the command must still be running)."""
        deadline = time.monotonic() + timeout
        while not cond():
            assert self.p.poll() is None, f"exited ({self.p.returncode}) before {what}:\n{self.stderr}"
            assert time.monotonic() < deadline, f"no {what} after {timeout} s:\n{self.stderr}"
            time.sleep(0.1)

    def finish(self, timeout: float = 120) -> int:
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(self._hung(timeout)) from None
        for t in self._threads:
            t.join(10)
        return rc

    def _hung(self, timeout: float) -> str:
        """Why the command did not end: its threads' stacks (SIGUSR1: xcbench.cli's
        faulthandler) and the processes below it; then it is killed."""
        tree = []
        with contextlib.suppress(psutil.Error):
            for c in psutil.Process(self.p.pid).children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    tree.append(f"  {c.pid} {c.status()} {' '.join(c.cmdline())[:160]}")
        with contextlib.suppress(OSError):
            self.p.send_signal(signal.SIGUSR1)
        time.sleep(2)
        self.p.kill()
        self.p.wait(10)
        for t in self._threads:
            t.join(5)
        return (f"the command did not end {timeout:g} s after the signal; its processes:\n"
                + "\n".join(tree) + f"\nstderr (with its threads' stacks):\n{self.stderr[-6000:]}")

    @property
    def stderr(self) -> str:
        return "".join(self.err)

    @property
    def stdout(self) -> str:
        return "".join(self.out)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True) if path.exists() else []


def flushed(path: Path, n: int = 1):
    """A condition: ``path`` holds at least ``n`` whole lines."""
    return lambda: sum(1 for ln in lines(path) if ln.endswith("\n")) >= n


def final_rows(path: Path) -> dict[tuple, dict]:
    """(campaign_id, file_index) -> the file's last TRANSFER row."""
    last: dict[tuple, dict] = {}
    for ln in lines(path):
        r = json.loads(ln)
        k = (r["campaign_id"], r["file_index"])
        if k not in last or r["retry"] >= last[k]["retry"]:
            last[k] = r
    return last


# --- `xcbench run` of a small tmpfs matrix, signalled or killed mid-campaign ----------------------
RUN_MATRIX = """
name: fault-run
defaults:
  concurrency: [1]
  file_size: 8M
  files: {files}
  campaign: {{timeout: 60}}
backends:
  tmpfs: {{size: [{sizes}]}}
"""


def run_matrix(s: Scene, files: int = 100, sizes: str = "72M, 88M") -> tuple[Path, str]:
    m = s.root / "m.yaml"
    m.write_text(RUN_MATRIX.format(files=files, sizes=sizes))
    name = f"r{s.mark}"
    s.tokens.append(f"xcbench-{name}-")  # the run's scratch dir and the mounts under it
    return m, name


@dataclass
class StartedRun:
    cli: Cli
    out: Path        # the result store
    name: str        # the run's name: out / name is its run dir
    common: list[str]  # the options a --resume repeats
    before: list[str]  # the transfer records on disk when the run was found running

    @property
    def records(self) -> Path:
        return self.out / self.name / "records"


def start_run(s: Scene, conf: Path) -> StartedRun:
    """`xcbench run` of :func:`run_matrix`'s matrix against the cluster at ``conf``, returned
    once its first transfer records are on disk (signal or kill it then)."""
    m, name = run_matrix(s)
    out = s.root / "results"
    common = ["--ceph-conf", str(conf), "--no-probes", "--no-baseline",
              "--telemetry", "host:0.5", "--no-report"]
    cli = s.start("run", str(m), "--store", str(out), "--run-name", name, *common)
    records = out / name / "records"
    cli.wait_for(flushed(records / "transfers.jsonl", 5), "the first transfer records")
    return StartedRun(cli, out, name, common, lines(records / "transfers.jsonl"))


def check_complete(run_path: Path, files: int) -> None:
    run = RunDir.open(run_path)
    assert run.status == "complete", run.manifest
    assert {c.status for c in run.cells.values()} == {"complete"}
    last = final_rows(run_path / "records" / "transfers.jsonl")
    for cid in run.cells:
        got = sorted(i for (camp, i) in last if camp.startswith(cid))
        assert got == list(range(files)), cid
        assert {r["file_state"] for (camp, _), r in last.items() if camp.startswith(cid)} == {"FINISHED"}
