"""A run that `xcbench confirm` tested shows each verdict's outcome and both rates in its report."""

from __future__ import annotations

import json

from tests.support.synthrun import make_run, mixed_cells
from xcbench.analysis.report.document import render_report
from xcbench.analysis.verdicts.experiment import judge
from xcbench.selftest.confirm import arms, write


def test_the_report_shows_the_confirmations_of_a_run(tmp_path):
    cells = mixed_cells()[:1]
    for c in cells:
        c.concurrency, c.files = (2,), 8
    path, _ = make_run(tmp_path / "r", cells)
    md = render_report([path], "md", tmp_path / "before.md").read_text()
    assert "Confirmations" not in md  # never confirmed: no section
    cid = json.loads((path / "manifest.json").read_text())["cells"].popitem()[0]
    x = {"cell_id": cid, "concurrency": 2, "direction": "write", "verdict": "gateway",
         "experiment": "relieve", "what": "the gateway's CPU quota 0.2 -> 0.4 cores",
         **judge("relieve", 2.0, [((2 ** 30, 0.02), (2 * 2 ** 30, 0.03))] * 2),
         **arms([{"arm": "control", "bytes_per_s": 2 ** 30, "rel_se": 0.02},
                 {"arm": "changed", "bytes_per_s": 2 * 2 ** 30, "rel_se": 0.03}])}
    nt = {"cell_id": cid, "concurrency": 2, "direction": "write", "verdict": "host-cpu",
          "outcome": "not testable here", "why": "the roles share this host's CPU"}
    write(path, {"run": str(path), "confirmations": [x, nt], "ok": True})
    md = render_report([path], "md", tmp_path / "after.md").read_text()
    assert "## Confirmations (xcbench confirm)" in md
    assert "| gateway | confirmed | the gateway's CPU quota 0.2 -> 0.4 cores | 8.59 ± 2.0 % | 17.2 ± 3.0 % |" in md
    assert "x2.00" in md and "prediction error +0 %" in md  # the measured ratio beside the predicted, whole
    assert "| host-cpu | not testable here | the roles share this host's CPU |" in md
    html = render_report([path], "html", tmp_path / "after.html").read_text()
    assert "Confirmations (xcbench confirm)" in html and "not testable here" in html
