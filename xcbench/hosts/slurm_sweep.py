"""What a run leaves to Slurm and on its nodes, written down before it exists, and how it goes.

``<state>/slurm/<pid>.json`` (:class:`Record`) holds, before salloc runs or the first step
starts, the allocation's job name (one xcbench asks for), the steps' name prefix, and once the
nodes are known, the nodes, the partition and account, how a node runs xcbench and the run's
**scratch tag** (every step gets it: the dirs its agents make on a node carry it in their names,
xcbench.system.scratch). From that record alone:

- :func:`clean_nodes` runs ``xcbench node-clean`` on each node, all at once, as a job step
  (``--overlap`` in the allocation while it runs, else a job of its own that waits at most
  :data:`IMMEDIATE` s for its node): the tagged dirs go, and what the node's own state home
  records of commands that died there. A run does it when it ends (its agents removed their own
  dirs; this is what a SIGKILL of one left), and the next command after a kill -9;
- :func:`sweep` (every command that starts processes, first): cancels the steps and the
  allocation a killed command left, then cleans its nodes. A node that could not be cleaned
  (down, busy with another job) stays in the record for the next command, said in one line;
  the :data:`MAX_TRIES`-th command gives up and says what is left where.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.hosts import slurm_cli as cli
from xcbench.system import proc, statedir
from xcbench.system.orphans import identity, stale_records
from xcbench.system.scratch import BASES, TAG_ENV, TAG_RE

SUBDIR = "slurm"
IMMEDIATE = 30  # s a cleanup job of its own may wait for its node (srun --immediate)
STEP_TIMEOUT = 30.0  # s node-clean may run once it started
MAX_ANSWER = 64 << 10  # characters of node-clean's answer read
MAX_TRIES = 3  # commands that try to clean a node before the last one gives up (and says where)


def records_dir() -> Path:
    return statedir.home() / SUBDIR


def export(tag: str) -> str:
    """srun's option that gives a step the run's scratch tag (and this command's environment)."""
    return f"--export=ALL,{TAG_ENV}={tag}"


class Record:
    """``<state>/slurm/<pid>.json``: what the next command needs to undo this one's Slurm work."""

    def __init__(self, directory: Path | None = None):
        self.path = (directory or records_dir()) / f"{os.getpid()}.json"
        self.data: dict[str, Any] = {"host": statedir.HOST, "uid": os.geteuid(),
                                     "owner": identity(os.getpid()) or {"pid": os.getpid()},
                                     "jobs": []}

    def add(self, **entry: Any) -> None:
        self.data["jobs"].append(entry)
        self._save()

    def _save(self) -> None:
        statedir.write_private(self.path, json.dumps(self.data, indent=1))

    def done(self, pending: Sequence[str] = ()) -> None:
        """The command ends: the record goes, unless nodes are left to clean (``pending``):
        then it stays, with only those, for the next command."""
        if not pending:
            self.path.unlink(missing_ok=True)
            return
        for e in self.data["jobs"]:
            if e.get("nodes"):
                e["nodes"] = [n for n in e["nodes"] if n in pending]
                e["tries"] = 1
        self._save()


def record_problem(path: Path, rec: Any) -> str | None:
    """Why a record may not be acted on (None: it may): ours, of this host, an owner named,
    every node a node name and the scratch tag a tag."""
    why = statedir.record_problem(path) or statedir.host_problem(rec)
    if why is not None:
        return why
    if rec.get("uid") != os.geteuid():
        return f"written by uid {rec.get('uid')!r}, not by this user"
    owner = rec.get("owner")
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int) or owner["pid"] < 2:
        return "its owner is not a process"
    if not isinstance(rec.get("jobs"), list) or not all(isinstance(j, dict) for j in rec["jobs"]):
        return "not a record of Slurm jobs"
    for e in rec["jobs"]:
        nodes, tag, xcb = e.get("nodes") or [], e.get("scratch"), e.get("xcbench") or []
        if not isinstance(nodes, list) or not all(isinstance(n, str) and cli.NODE_RE.match(n)
                                                  for n in nodes):
            return "its nodes are not node names"
        if nodes and not (isinstance(tag, str) and TAG_RE.match(tag)):
            return "its scratch tag is not a tag"
        if not isinstance(xcb, list) or not all(isinstance(x, str) and x for x in xcb):
            return "its xcbench command is not a list of words"
        if not isinstance(e.get("tries") or 0, int):
            return "its tries are not a count"
        for key in ("partition", "account"):
            if e.get(key) is not None and not (isinstance(e[key], str) and cli.NAME_RE.match(e[key])):
                return f"its {key} is not a name"
    return None


# --- the nodes' scratch ---------------------------------------------------------------------------
def clean_argv(node: str, entry: dict[str, Any], *, running: bool, name: str) -> list[str]:
    """srun's argv for node-clean on ``node``: a step of the recorded job while it runs
    (``--overlap``: beside whatever still runs there), else a job of its own on that node."""
    where = [f"--jobid={entry['job']}", "--overlap"] if running else \
        ["--time=2", f"--immediate={IMMEDIATE}",
         *([f"--partition={entry['partition']}"] if entry.get("partition") else []),
         *([f"--account={entry['account']}"] if entry.get("account") else [])]
    return ["srun", *where, "--nodes=1", f"--nodelist={node}", "--ntasks=1", "--quiet",
            "--chdir=/tmp", f"--job-name={name}", export(entry["scratch"]), "--",
            *entry["xcbench"], "node-clean"]


def _answer(out: proc.Completed) -> dict[str, Any]:
    """node-clean's JSON line (XcbError: none, or not of its shape)."""
    for line in str(out.stdout)[:MAX_ANSWER].splitlines():
        if line.startswith('{"node-clean"'):
            with contextlib.suppress(ValueError):
                got = json.loads(line)["node-clean"]
                if isinstance(got, dict) and all(isinstance(got.get(k), list) for k in ("removed", "left")):
                    return got
    err = [ln for ln in str(out.stderr).splitlines() if ln.strip()]
    raise XcbError(f"node-clean said nothing of its own (exit {out.returncode}"
                   f"{': ' + err[-1][:200] if err else ''})")


def clean_nodes(entry: dict[str, Any], *, running: bool, names: Any = None,
                timeout: float | None = None) -> tuple[dict[str, dict], dict[str, str]]:
    """node-clean on each of the entry's nodes at once; ({node: its answer}, {node: why not}).
    ``names(node)``: the step's name (default: the entry's prefix, ``node-clean``, the node)."""
    bound = timeout or (STEP_TIMEOUT + (0 if running else IMMEDIATE))
    done: dict[str, dict] = {}
    failed: dict[str, str] = {}

    def one(node: str) -> None:
        name = names(node) if names else f"{entry.get('prefix') or 'xcb-'}node-clean-{node}"
        try:
            out = proc.run(clean_argv(node, entry, running=running, name=name), timeout=bound,
                           check=False, input="")
            got = _answer(out)
            done[node] = got
            if got["left"]:
                failed[node] = f"left {'; '.join(map(str, got['left']))[:300]}"
        except XcbError as e:
            failed[node] = str(e)

    threads = [threading.Thread(target=one, args=(n,), name=f"xcb-clean-{n}", daemon=True)
               for n in entry.get("nodes") or []]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done, failed


def cleaned_line(done: dict[str, dict]) -> str:
    """What node-clean removed, per node, in a few words."""
    parts = []
    for node, a in done.items():
        what = [f"{len(a['removed'])} dirs"] if a["removed"] else []
        what += ["what commands killed there had recorded"] if a.get("reaped") else []
        if what:
            parts.append(f"{node}: {' and '.join(what)}")
    return ", ".join(parts)


def failed_line(failed: dict[str, str]) -> str:
    """The nodes not cleaned, grouped by why: "n1, n2 (why); n3 (why)"."""
    by: dict[str, list[str]] = {}
    for node, why in failed.items():
        by.setdefault(why, []).append(node)
    return "; ".join(f"{', '.join(sorted(nodes))} ({why[:200]})" for why, nodes in by.items())


# --- the next command -----------------------------------------------------------------------------
def sweep(directory: Path | None = None, wait: float = 25.0) -> str | None:
    """Cancel the steps (and the allocations xcbench asked for) of commands killed earlier and
    clean their nodes; one line saying what was done (None: nothing). A record that is not
    ours is left alone; one whose nodes could not all be cleaned stays, with those nodes."""
    done: list[str] = []
    for f, rec in stale_records(directory or records_dir(), record_problem):
        if cli.missing():
            break  # no Slurm here (any more): nothing of it can be running
        keep = False
        for entry in rec["jobs"]:
            done += _cancel_entry(entry, wait)
            if entry.get("nodes"):
                info = _job(entry)
                cleaned, failed = clean_nodes(entry, running=bool(info and info.running))
                if cleaned_line(cleaned):
                    done.append(f"removed what the run made on its nodes ({cleaned_line(cleaned)})")
                entry["nodes"] = [n for n in entry["nodes"] if n in failed]
                entry["tries"] = int(entry.get("tries") or 0) + 1
                if failed and entry["tries"] < MAX_TRIES:
                    keep = True
                    done.append(f"could not clean {failed_line(failed)} (the next command tries again)")
                elif failed:
                    done.append(f"gave up cleaning {failed_line(failed)} after {entry['tries']} tries: "
                                f"what the run left there is named *-{entry['scratch']}-* under "
                                f"{', '.join(BASES)}")
        if keep:
            statedir.write_private(f, json.dumps(rec, indent=1))
        else:
            f.unlink(missing_ok=True)
    return (f"xcbench: an earlier xcbench was killed and left Slurm work behind: "
            f"{', '.join(done)[:600]}") if done else None


def _job(entry: dict[str, Any]) -> cli.JobInfo | None:
    job = str(entry.get("job") or "")
    with contextlib.suppress(XcbError):
        return cli.job(job) if cli.JOB_RE.match(job) else None
    return None


def _cancel_entry(entry: dict, wait: float) -> list[str]:
    job, prefix, name = str(entry.get("job") or ""), entry.get("prefix"), entry.get("name")
    done: list[str] = []
    with contextlib.suppress(XcbError):
        if name and entry.get("ours"):  # the allocation xcbench asked for: all of it goes
            ids = [j.job_id for j in cli.jobs_named(str(name))]
            cli.cancel(ids)
            done += [f"cancelled allocation {i}" for i in ids]
        if cli.JOB_RE.match(job) and isinstance(prefix, str) and prefix.startswith("xcb-"):
            ids = [s.step_id for s in cli.steps(job) if s.name.startswith(prefix)]
            cli.cancel(ids)
            done += [f"cancelled step {i}" for i in ids]
            gone(job, prefix, wait if ids else 0)
    return done


def gone(job: str, prefix: str, wait: float) -> bool:
    """Wait at most ``wait`` s until no step of ``job`` named ``prefix``* is listed."""
    deadline = time.monotonic() + wait
    while True:
        left = any(s.name.startswith(prefix) for s in cli.steps(job))
        if not left or time.monotonic() >= deadline:
            return not left
        time.sleep(0.2)
