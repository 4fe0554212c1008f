"""A run closes here, once: one RunData for the verdicts, the reports and the closing table.

The runner measures and finalizes (xcbench.run.runner.run_matrix: the records as Parquet, the
status stamped) and imports nothing of the analysis; whoever ran the matrix (`xcbench run`,
`xcbench demo`, the self-test's and `xcbench confirm`'s runs) then calls :func:`conclude`, which
loads the run once, stores its verdicts and renders its reports from that one load, and hands it
back for the closing table (xcbench.analysis.report.glance).
"""

from __future__ import annotations

from xcbench.analysis.report.document import render_run_report
from xcbench.analysis.verdicts.attribution import write_verdicts
from xcbench.analysis.verdicts.run_data import RunData
from xcbench.store.rundir import RunDir


def conclude(run: RunDir, report: str | None = None) -> RunData:
    """The run's verdicts stored (a resumed run: those of the cells attributed again replaced)
    and, with ``report`` (html | md), its report rendered (html: the Markdown beside it); each
    best effort, so a failure is a warning of the run and loses no record. Returns the RunData
    both came from."""
    rd = RunData(run)
    try:
        write_verdicts(rd)
    except Exception as e:  # noqa: BLE001 - the records are safe; say why there are no verdicts
        run.warn(f"attribution: {type(e).__name__}: {e}")
    if report:
        render_run_report(rd, report)
    run.save_manifest()  # the report's paths, the warnings
    rd.reread()
    return rd
