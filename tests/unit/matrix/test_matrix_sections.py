"""The parts of a matrix its consumers check (xcbench.matrix.sections): every entry point has
every section's validator, a missing one stops load_matrix with its name (never a matrix checked
in part), and each section's bad value gives the same one-line error as when the matrix imported
its checks itself."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from xcbench.errors import XcbError
from xcbench.matrix import load_matrix, sections

ROOT = Path(__file__).resolve().parents[3]
BASE = {"name": "t", "backends": {"tmpfs": {"size": ["1G"]}},
        "defaults": {"files": 4, "file_size": "1M", "concurrency": [1]}}
# section -> (what the matrix adds, the one-line error: the texts of before the registry; the
# memory line holds this host's free memory, matched as a number)
CASES: dict[str, tuple[dict, str]] = {
    "campaign": ({"defaults": {"campaign": {"timeout": -1}}},
                 "defaults.campaign: timeout: -1 is out of range (must be > 0 and <= 2592000)"),
    "campaign.engine": ({"defaults": {"campaign": {"engine": "bogus"}}},
                        "defaults.campaign: engine: 'bogus' is not one of local, fts3"),
    "gateway.ceph": ({"defaults": {"gateway": {"ceph": {"namelib": "x"}}}},
                     "defaults.gateway: ceph.namelib: not a ceph.* directive xcbench sets (it "
                     "loads a library into the gateway) (known: nbconnections)"),
    "probe": ({"defaults": {"probe": {"patterns": ["randread"]}}},
              "defaults.probe: patterns: 'randread' is not one of randwrite, write, read"),
    "cell.levels": ({"defaults": {"campaign": {"duration": 30, "delete_after_verify": False}}},
                    "cell tmpfs 1G o1 push (6f565d4e9a): campaign.delete_after_verify: a "
                    "time-based level cycles the dataset: keep delete_after_verify (or set "
                    "overwrite) so the target never fills up"),
    "cell.dataset": ({"defaults": {"direction": ["read"], "modes": ["tpc-root"]}},
                     "cell tmpfs 1G o1 tpc-root read (3294d1d643): direction: read campaigns "
                     "read from the cell's gateway (mode push), not with mode tpc-root"),
    "cell.engine": ({"defaults": {"campaign": {"engine": "fts3"}}},
                    "cell tmpfs 1G o1 push (78229930cd): campaign.fts.endpoint: missing: engine "
                    "fts3 needs the FTS3 REST server's URL (and 2 more error(s): run `xcbench "
                    "matrix check`)"),
    "hosts": ({"hosts": {"bogus": 1}},
              "hosts: bogus: unknown key (known: bridge, hosts, ceph, prometheus)"),
    "prometheus": ({"prometheus": {"url": "http://localhost:9090", "step": -1}},
                   "prometheus: step: -1 is not a duration in (0, 3600 s] (e.g. 15s, 1m or a "
                   "number of seconds)"),
}
MEMORY = ({"defaults": {"files": 10**9}},
          r"cell tmpfs 1G o1 push \(801456772a\): files: 1000000000 files at concurrency 1 need "
          r"about 1000001024K of driver memory; this host has \d+ free beyond its reserve \(give "
          r"fewer files, or a lower concurrency\)")


def _write(tmp_path: Path, name: str, over: dict) -> Path:
    raw = copy.deepcopy(BASE)
    for key, value in over.items():
        if key == "defaults":
            raw["defaults"].update(value)
        else:
            raw[key] = value
    f = tmp_path / f"{name}.yaml"
    f.write_text(yaml.safe_dump(raw))
    return f


def test_every_section_has_a_case_here():
    assert set(CASES) == {s.name for s in sections.SECTIONS}


@pytest.mark.parametrize("name", list(CASES))
def test_a_bad_value_in_each_section_gives_its_one_line_error(tmp_path, name):
    over, line = CASES[name]
    f = _write(tmp_path, name, over)
    with pytest.raises(XcbError) as e:
        load_matrix(f)
    assert str(e.value) == f"{f}: {line}"


def test_driver_memory_is_checked_per_cell(tmp_path):
    f = _write(tmp_path, "memory", MEMORY[0])
    with pytest.raises(XcbError) as e:
        load_matrix(f)
    assert re.fullmatch(re.escape(f"{f}: ") + MEMORY[1], str(e.value)), str(e.value)


def test_each_validator_belongs_to_the_package_the_list_names():
    for s in sections.SECTIONS:
        fn = sections._validators[s.name]
        assert fn.__module__.startswith(s.module.rpartition(".")[0] + "."), (s.name, fn.__module__)


def test_a_missing_validator_stops_load_matrix_naming_it(tmp_path, monkeypatch):
    f = _write(tmp_path, "good", {})
    load_matrix(f)
    monkeypatch.setattr(sections, "_validators",
                        {k: v for k, v in sections._validators.items() if k != "hosts"})
    with pytest.raises(sections.SectionNotRegistered,
                       match=r"matrix section hosts \(hosts: \(the inventory\)\) has no validator: "
                             r"import xcbench\.hosts\.matrix_section"):
        load_matrix(f)


def test_register_takes_only_listed_sections_once():
    with pytest.raises(ValueError, match="'gatway' is not a matrix section"):
        sections.register("gatway", lambda section: [])
    with pytest.raises(ValueError, match="gateway.ceph: a validator is already registered"):
        sections.register("gateway.ceph", lambda section: [])
    sections.register("gateway.ceph", sections._validators["gateway.ceph"])  # the same: no-op


def _in_fresh_python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# the command line registers them once it parses a command that may load a matrix (node-clean,
# run on every node of a Slurm run, does not: xcbench.cli.NO_MATRIX)
CLI_MATRIX = "import xcbench.cli\nxcbench.cli.main(['matrix', 'check', '/nonexistent.yaml'])"


@pytest.mark.parametrize("entry", [CLI_MATRIX, "import xcbench.pytest_plugin", "import xcbench.run.runner"])
def test_every_entry_point_registers_every_section(entry):
    """In a fresh interpreter: what this test session imported does not count."""
    out = _in_fresh_python(f"{entry}\nfrom xcbench.matrix import sections\n"
                           f"print([s.name for s in sections.missing()])")
    assert out.splitlines()[-1] == "[]"


def test_the_command_line_alone_registers_no_section():
    out = _in_fresh_python("import xcbench.cli\nfrom xcbench.matrix import sections\n"
                           "print(len(sections.missing()) > 0)")
    assert out == "True"  # importing the command line alone loads no matrix machinery


def test_the_matrix_alone_imports_no_consumer_and_refuses_to_load(tmp_path):
    f = _write(tmp_path, "good", {})
    out = _in_fresh_python(
        "import sys\nfrom xcbench.matrix import load_matrix, sections\n"
        "print(sorted(m for m in sys.modules if m.split('.')[:2] in (['xcbench', p] for p in "
        "('campaign', 'scaleout', 'gateway', 'probe', 'hosts', 'telemetry', 'ceph', 'run'))))\n"
        f"try:\n    load_matrix({str(f)!r})\n"
        "except sections.SectionNotRegistered as e:\n    print(e)\n")
    imported, refused = out.splitlines()
    assert imported == "[]"
    assert refused.startswith("matrix section campaign (") and \
        "import xcbench.campaign.matrix_section (or xcbench.run.matrix_sections" in refused
