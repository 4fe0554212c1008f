"""A matrix's ``prometheus:`` key: checked like every other key (one line naming the file and the
field, exit 2, before anything starts), the secret only ever read from a file, and the run's
Prometheus chosen by precedence: command line > matrix > inventory > embedded cluster."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from xcbench import cli
from xcbench.commands import run as run_cmd
from xcbench.errors import XcbError
from xcbench.hosts import parse_inventory
from xcbench.matrix import load_matrix
from xcbench.run.runner import RunOptions
from xcbench.telemetry.devices import DEVICES, Context, prometheus_of
from xcbench.telemetry.matrix_section import matrix_prometheus

TMPFS = {"name": "p", "defaults": {"concurrency": [1], "file_size": "1M", "files": 2},
         "backends": {"tmpfs": {"size": ["64M"]}}}


def _matrix(tmp_path: Path, prom, name: str = "m.yaml") -> Path:
    f = tmp_path / name
    f.write_text(yaml.safe_dump(dict(copy.deepcopy(TMPFS), prometheus=prom), sort_keys=False))
    return f


def _token(tmp_path: Path, text: str = "s3cr3t-token-25b\n", name: str = "token") -> Path:
    f = tmp_path / name
    f.write_text(text)
    f.chmod(0o600)
    return f


@pytest.mark.parametrize("prom,field,says", [
    ("http://p:9090", "prometheus", "must be a mapping with url"),
    ({"auth": "bearer:/x"}, "prometheus", "must be a mapping with url"),
    ({"url": "ftp://p:9090"}, "prometheus: url", "not an http(s) URL"),
    ({"url": "http://u:pw@p:9090"}, "prometheus: url", "no credentials in the URL"),
    ({"url": "http://p:9090", "auth": "token:/etc/hostname"}, "prometheus: auth", "a matrix names no credential"),
    ({"url": "http://p:9090", "auth": "bearer:missing-file"}, "prometheus: auth", "a matrix names no credential"),
    ({"url": "http://p:9090", "auth": 42}, "prometheus: auth", "non-empty string"),
    ({"url": "http://p:9090", "step": "fast"}, "prometheus: step", "not a duration"),
    ({"url": "http://p:9090", "step": 0}, "prometheus: step", "not a duration"),
    ({"url": "http://p:9090", "timeout": "2h"}, "prometheus: timeout", "not a duration"),
    ({"url": "http://p:9090", "timout": 5}, "prometheus: timout", "did you mean 'timeout'"),
])
def test_a_bad_prometheus_key_is_one_line_naming_file_and_field(tmp_path, capsys, prom, field, says):
    f = _matrix(tmp_path, prom)
    assert cli.main(["matrix", "check", str(f)]) == 2
    out, err = capsys.readouterr()
    lines = (err or out).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"xcbench: error: {f}: prometheus"), err or out
    assert field.split(": ")[-1] in lines[0] and says in lines[0] and "Traceback" not in err


def test_a_bad_prometheus_key_stops_run_before_anything_starts(tmp_path, capsys):
    f = _matrix(tmp_path, {"url": "http://127.0.0.1:9", "auth": "basic:nope"})
    store = tmp_path / "store"
    assert cli.main(["run", str(f), "--store", str(store), "--no-baseline", "--no-report"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{f}: prometheus: auth" in err[0]
    assert not store.exists() or not any(store.iterdir())  # no run directory was made


def test_a_matrix_names_no_prometheus_credential(tmp_path):
    """The token file and where it goes are the operator's (--prometheus-auth, --hosts FILE):
    a matrix naming them is refused before the file is read."""
    tok = _token(tmp_path)
    f = _matrix(tmp_path, {"url": "https://prom.example:9090/", "auth": f"bearer:{tok.name}",
                           "step": "500ms", "timeout": 3})
    with pytest.raises(XcbError, match=r"prometheus: auth: a matrix names no credential"):
        load_matrix(f)
    f2 = _matrix(tmp_path, {"url": "https://prom.example:9090/", "step": "500ms", "timeout": 3},
                 "m2.yaml")
    conf = matrix_prometheus(load_matrix(f2).raw, str(f2))
    assert conf == {"url": "https://prom.example:9090", "auth": None,
                    "scrape_interval": 0.5, "timeout": 3.0}


def _ctx(prometheus=None, hosts=None, cluster=None) -> Context:
    return Context(cell=SimpleNamespace(id="c"), target=None, gateway=None, listener=None,
                   cluster=cluster, hosts=hosts, prometheus=prometheus)


def _chosen(tmp_path, argv_prom: str | None, matrix_prom: dict | None, inventory: bool,
            embedded: bool) -> str | None:
    """The URL the prometheus device would read, through the run command's own steps."""
    f = _matrix(tmp_path, matrix_prom) if matrix_prom else _matrix(tmp_path, None)
    args = SimpleNamespace(repeats=None, run_name=None, store=str(tmp_path / "s"), resume=None,
                           fio_hosts=None, telemetry=None, tune_tcp=False, scale_ec=False,
                           no_baseline=True, no_probes=True, no_report=True, format="html",
                           prometheus=argv_prom, prometheus_auth=None)
    opts: RunOptions = run_cmd.options(args)
    run_cmd.prometheus(opts, load_matrix(f))
    inv = parse_inventory({"hosts": {"g1": {"roles": ["gateway"], "transport": "local"}},
                           "prometheus": {"url": "http://inventory:9090"}}, "inv") if inventory else None
    cluster = SimpleNamespace(embedded=True, info={"prometheus": {"url": "http://embedded:1"}}) \
        if embedded else None
    conf = prometheus_of(_ctx(opts.extra.get("prometheus"), inv, cluster))
    return conf["url"] if conf else None


def test_precedence_command_line_then_matrix_then_inventory_then_embedded(tmp_path):
    mat = {"url": "http://matrix:9090"}
    assert _chosen(tmp_path, "http://cli:9090", mat, True, True) == "http://cli:9090"
    assert _chosen(tmp_path, None, mat, True, True) == "http://matrix:9090"
    assert _chosen(tmp_path, None, None, True, True) == "http://inventory:9090"
    assert _chosen(tmp_path, None, None, False, True) == "http://embedded:1"
    assert _chosen(tmp_path, None, None, False, False) is None


def test_the_matrix_timeout_and_step_reach_the_device(tmp_path):
    f = _matrix(tmp_path, {"url": "http://matrix:9090", "step": "2s", "timeout": "1500ms"})
    conf = matrix_prometheus(load_matrix(f).raw, str(f))
    ctx = Context(cell=SimpleNamespace(id="c"), target=None, gateway=None, listener=None,
                  cluster=None, prometheus=conf)
    s = DEVICES["prometheus"].make(ctx)
    assert s.api.timeout == 1.5 and s.step == 2.0 and s.api.url == "http://matrix:9090"
