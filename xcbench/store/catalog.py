"""The runs of a result store: listing them and finding one by path, id, prefix or 'latest'."""

from __future__ import annotations

import os
from pathlib import Path

from xcbench.errors import XcbError
from xcbench.store.rundir import RunDir, default_store


def list_runs(store: str | os.PathLike) -> list[RunDir]:
    """Runs in ``store``, oldest first; directories that are not runs are skipped."""
    store = Path(store)
    if not store.is_dir():
        raise XcbError(f"{store}: no such result store (pass --store DIR or set XCBENCH_STORE)")
    runs = []
    for d in sorted(store.iterdir()):
        if (d / "manifest.json").exists():
            try:
                runs.append(RunDir.open(d))
            except XcbError:
                continue  # unreadable or newer: `runs show` on it says why
    runs.sort(key=lambda r: (str(r.state.start or ""), r.path.name))
    return runs


def resolve_run(spec: str | os.PathLike, store: str | os.PathLike | None = None) -> RunDir:
    """RUN given as a run dir path, a run id (or unique prefix) in ``store``, or 'latest'."""
    p = Path(spec)
    if (p / "manifest.json").exists() or (p.name == "manifest.json" and p.exists()):
        return RunDir.open(p)
    store = Path(store) if store is not None else default_store()
    if str(spec) == "latest":
        runs = list_runs(store)
        if not runs:
            raise XcbError(f"{store}: no runs yet")
        return runs[-1]
    if (store / str(spec) / "manifest.json").exists():
        return RunDir.open(store / str(spec))
    if store.is_dir() and os.sep not in str(spec):
        hits = sorted(d.name for d in store.iterdir()
                      if d.name.startswith(str(spec)) and (d / "manifest.json").exists())
        if len(hits) == 1:
            return RunDir.open(store / hits[0])
        if hits:
            raise XcbError(f"run {spec}: ambiguous in {store} ({', '.join(hits)})")
    raise XcbError(f"run {spec}: not a run directory, nor a run id in {store}")
