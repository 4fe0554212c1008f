"""What a run is asked to do (RunOptions: `xcbench run`'s flags, the caller's hooks) and how it
says it was stopped (RunStopped)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xcbench.run.hooks import RunHooks
from xcbench.store.rundir import RunDir
from xcbench.system.signals import Interrupted


@dataclass
class RunOptions:
    store: Path = Path("results")  # the result store (--store)
    repeats: int | None = None  # overrides every cell's repeats
    resume: Path | None = None
    scale_ec: bool = False
    fio_hosts: list[str] | None = None
    baseline: bool = True
    probes: bool = True
    campaigns: bool = True
    report: bool = True
    report_format: str = "html"
    progress: bool = True
    name: str | None = None
    telemetry: str | None = None  # devices and intervals, "host:0.5,ceph" (None: all, defaults)
    extra: dict[str, Any] = field(default_factory=dict)
    hosts: Any = None  # an xcbench.hosts.Inventory: gateways and campaigns on its hosts
    # the between-run noise term recorded in a new run's manifest, which its verdicts add to
    # each level's own noise (the caller's choice: `xcbench run` records this host's measured
    # one, analysis.verdicts.between_run.load(); the self-test's runs, compared within one
    # session on one cluster, none)
    between_run: dict[str, Any] | None = None
    hooks: RunHooks = field(default_factory=RunHooks)  # how the caller extends the run


class RunStopped(Interrupted):
    """Interrupted, with the run it stopped (finalized: ``interrupted``, resumable); str() is
    the run's path."""

    def __init__(self, run: RunDir):
        super().__init__(str(run.path))
        self.run = run
