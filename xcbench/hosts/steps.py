"""Transport ``slurm``: a command on a node of an allocation runs as a job step.

    srun --jobid=J --nodes=1 --nodelist=NODE --ntasks=1 --kill-on-bad-exit=1 --overlap \\
         --job-name=xcb-<pid>-<tag>-<what>-NODE-<n> --quiet --chdir=/tmp \\
         --export=ALL,XCBENCH_SCRATCH_TAG=<run's tag> [--cpus-per-task=C] -- argv

The step's stdin and stdout are srun's: an agent speaks the same typed, bounded messages over
them as over ssh (xcbench.scaleout.agent, xcbench.gateway.agent). No key, no host key, no file
copied but what a command reads on its stdin. ``--overlap``: the run's steps on one node (an
agent, a clock check, a gateway agent) share the node's CPUs rather than queue for them.
Stopping srun (proc.stop: SIGTERM, then SIGKILL) makes Slurm signal the step's processes;
each step's name starts with the allocation's prefix, recorded before the first step starts,
so the next command cancels what a killed one left (xcbench.hosts.slurm_sweep.sweep). The
run's scratch tag marks every dir an agent makes on the node (xcbench.system.scratch): the run
removes what its agents left there when it ends, and so does the next command after a kill -9.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.hosts.slurm_sweep import export
from xcbench.hosts.transport import KINDS, Transport, _env_argv
from xcbench.system import proc

WORD_RE = re.compile(r"^[a-z][a-z0-9-]{1,30}$")


def what(argv: Sequence[str]) -> str:
    """A step's name word: the xcbench subcommand it runs, else the program's name."""
    args = list(argv)
    while args and (args[0] == "env" or "=" in args[0]):
        args.pop(0)
    for i, a in enumerate(args):
        if os.path.basename(a) == "xcbench" or (a == "-m" and args[i + 1:i + 2] == ["xcbench"]):
            rest = [w for w in args[i + (2 if a == "-m" else 1):] if WORD_RE.match(w)]
            return rest[0] if rest else "xcbench"
    return os.path.basename(args[0]) if args else "step"


class SlurmTransport(Transport):
    """A node of an allocation (``host.slurm``: xcbench.hosts.slurm.Allocation)."""

    kind = "slurm"
    shares_fs = False  # a node's files are its own: agents carry what they need on stdin

    def _allocation(self) -> Any:
        alloc = getattr(self.host, "slurm", None)
        if alloc is None:
            raise XcbError(f"host {self.host.name}: transport slurm without an allocation")
        return alloc

    def srun(self, word: str) -> list[str]:
        """srun's options for one step on this node (its name recorded in the allocation)."""
        alloc = self._allocation()
        cpus = alloc.request.cpus_per_task
        return ["srun", f"--jobid={alloc.job_id}", "--nodes=1", f"--nodelist={self.host.name}",
                "--ntasks=1", "--kill-on-bad-exit=1", "--overlap", "--quiet", "--chdir=/tmp",
                f"--job-name={alloc.step_name(self.host.name, word)}", export(alloc.scratch),
                *([f"--cpus-per-task={cpus}"] if cpus else []), "--"]

    def wrap(self, argv: Sequence[object], env: Mapping[str, object] | None = None, *,
             tied: bool = False, stdin: bool = False) -> list[str]:
        args = _env_argv(argv, env)
        return [*self.srun(what(args)), *args]

    def ready(self) -> None:
        self._allocation()

    def spawn(self, argv: Sequence[object], *, name: str, log: str | os.PathLike | None = None,
              env: Mapping[str, object] | None = None, procs: proc.ProcessSet | None = None,
              pipe: bool = False, log_cap: int | None = None) -> proc.Proc:
        # stdin always ours: srun forwards its EOF to the task (a step never reads a terminal)
        return proc.spawn(self.wrap(argv, env), name=name, log=log, procs=procs, pipe=pipe,
                          stdin=True, log_cap=log_cap)

    def run(self, argv: Sequence[object], *, env: Mapping[str, object] | None = None,
            **kw: Any) -> proc.Completed:
        kw.setdefault("input", "")  # never this command's stdin (a terminal)
        return proc.run(self.wrap(argv, env), **kw)

    def put(self, local: str | os.PathLike, remote: str) -> None:
        """The file's bytes through the step's stdin (no shared filesystem assumed)."""
        data = Path(local).read_bytes()
        self.run(["sh", "-c", 'mkdir -p "$(dirname "$0")" && cat > "$0"', remote], input=data,
                 text=False, timeout=600)

    def get(self, remote: str, local: str | os.PathLike) -> None:
        out = self.run(["cat", remote], text=False, timeout=600)
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        Path(local).write_bytes(out.stdout)  # type: ignore[arg-type]


KINDS["slurm"] = SlurmTransport
