"""Fuzz (Hypothesis): malformed matrices, plan specs, CLI flags, ceph.conf files and damaged run
directories. Each must end in ONE line on stderr and exit code 2, with no traceback, no process
started, no mount made and no file written or changed.

Every generator produces input that is wrong by construction (a value a field can never take,
an unknown key, bytes that are not UTF-8, a file that is a directory ...), so exit 0 is a bug
just as a traceback is. The CLI runs in-process (``xcbench.cli.main``); a few run through a
real subprocess. Total examples: see EXAMPLES (>= 300)."""

from __future__ import annotations

import copy
import math
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import psutil
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from xcbench.cli import main

ROOT = Path(__file__).resolve().parents[3]
QUICK = ROOT / "layouts" / "quick.yaml"
PLAN_EXAMPLES = sorted((ROOT / "xcbench" / "plan" / "examples").glob("*.yaml"))
MARK = f"xcbench-fuzz-{uuid.uuid4().hex}"
SPAWNED = ("xrootd", "cmsd", "fio", "ceph-fuse", "ceph", "rados", "iperf3", "gfal-copy", "xrdcp")
EXAMPLES = {"matrix": 130, "plan": 50, "cli": 80, "conf": 35, "rundir": 45,
            "inventory": 40}  # 380 in all
FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])


# --- the property --------------------------------------------------------------------------

def _marked_pids() -> set[int]:
    """Processes started under this test (they inherit MARK in their environment)."""
    pids = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if MARK.encode() in (d / "environ").read_bytes():
                    pids.add(int(d.name))
            except OSError:
                continue
    return pids - {os.getpid()}


def _mounts() -> str:
    return Path("/proc/self/mountinfo").read_text()


def _tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() else b"<dir>")
            for p in sorted(d.rglob("*"))}


class Sandbox:
    """A fresh cwd + TMPDIR per example; checks that a command left everything as it was."""

    def __init__(self, base: Path):
        self.base = base

    def __enter__(self) -> Sandbox:
        self.dir = Path(tempfile.mkdtemp(prefix="ex-", dir=self.base))
        self.tmp = self.dir / "tmp"
        self.tmp.mkdir()
        self._old_tempdir, tempfile.tempdir = tempfile.tempdir, str(self.tmp)
        return self

    def snapshot(self) -> None:
        self.before = (_tree(self.dir), _marked_pids(), _mounts())
        # children this pytest already had (e.g. the session's mini cluster in a full run)
        self.children = {p.pid for p in psutil.Process().children(recursive=True)}

    def check(self) -> None:
        tree, pids, mounts = _tree(self.dir), _marked_pids(), _mounts()
        assert tree == self.before[0], "a file was written or changed"
        assert pids <= self.before[1], f"processes started: {pids - self.before[1]}"
        left = [p for p in psutil.Process().children(recursive=True) if p.pid not in self.children]
        assert left == [], f"a child process is left: {left}"
        new = set(mounts.splitlines()) - set(self.before[2].splitlines())
        assert not [m for m in new if str(self.dir) in m], f"a mount was made: {new}"

    def __exit__(self, *exc) -> None:
        tempfile.tempdir = self._old_tempdir
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def base():
    d = Path(tempfile.mkdtemp(prefix="xcb-fuzz-"))
    old = os.environ.get("XCB_FUZZ_MARK")
    os.environ["XCB_FUZZ_MARK"] = MARK
    yield d
    os.environ.pop("XCB_FUZZ_MARK") if old is None else os.environ.update(XCB_FUZZ_MARK=old)
    shutil.rmtree(d, ignore_errors=True)


def refused(capsys, box: Sandbox, argv: list[str]) -> str:
    """Run ``xcbench argv`` in-process in ``box``; assert the property; return the error line."""
    box.snapshot()
    cwd = os.getcwd()
    os.chdir(box.dir)
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse
        rc = e.code
    finally:
        os.chdir(cwd)
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out, err
    assert rc == 2, f"exit {rc} for {argv}: {err or out}"
    box.check()
    if argv[:2] == ["matrix", "check"] and err.startswith(f"xcbench: error: {argv[2]}: "):
        lines = err.splitlines()  # lists every error: one line each
        assert all(ln.startswith(f"xcbench: error: {argv[2]}: ") for ln in lines), err
        return lines[0]
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("xcbench: error: "), err
    return lines[0]


# --- values no field can take --------------------------------------------------------------

NAN, INF = math.nan, math.inf
DEEP = "__DEEP__"  # replaced in the YAML text by a nesting hundreds of levels deep
BAD_NUMBER = st.sampled_from([NAN, INF, -INF, -1, -7.5, -(10**30), "abc", "", None, True,
                              {"a": 1}, "1Q", DEEP])
BAD_BOOL = st.sampled_from([1, 0.5, "abc", "", None, NAN, [1], {"a": 1}, DEEP])
BAD_CHOICE = st.sampled_from(["bogus", "", 5, None, NAN, True, [], {"x": 1}, DEEP])
HUGE = st.sampled_from([10**30, 1e300, INF, NAN, -1, "abc", None, DEEP])
JUNK_KEY = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=3, max_size=12)\
    .map(lambda s: "zz_" + s)

# (path in quick.yaml (+ campaign settings), values it can never take)
MATRIX_LEAVES = [
    (("defaults", "origins", 0), BAD_NUMBER), (("defaults", "concurrency", 1), BAD_NUMBER),
    (("defaults", "file_size"), BAD_NUMBER), (("defaults", "files"), BAD_NUMBER),
    (("defaults", "repeats"), BAD_NUMBER), (("defaults", "probe", "runtime"), BAD_NUMBER),
    (("defaults", "probe", "iodepth"), BAD_NUMBER), (("defaults", "probe", "size"), BAD_NUMBER),
    (("defaults", "gateway", "buffers_maxbsz"), BAD_NUMBER),
    (("defaults", "gateway", "async"), BAD_BOOL), (("defaults", "modes", 0), BAD_CHOICE),
    (("defaults", "size_dist"), BAD_CHOICE), (("backends", "tmpfs", "size", 0), BAD_NUMBER),
    (("backends", "cephfs", "layouts", 0, "stripe_unit"), BAD_NUMBER),
    (("backends", "cephfs", "layouts", 1, "stripe_count"), BAD_NUMBER),
    (("backends", "rados", "layouts", 0, "object_size"), BAD_NUMBER),
    (("backends", "cephfs", "pools", 1), BAD_CHOICE), (("backends", "cephfs", "probe", "direct"), BAD_BOOL),
    (("exclude", 0, "backend"), BAD_CHOICE),
    (("defaults", "campaign", "timeout"), HUGE), (("defaults", "campaign", "retry_delay"), HUGE),
    (("defaults", "campaign", "retries"), HUGE), (("defaults", "campaign", "streams"), HUGE),
    (("defaults", "campaign", "seed"), BAD_NUMBER), (("defaults", "campaign", "client"), BAD_CHOICE),
    (("defaults", "campaign", "checksum"), BAD_CHOICE),
    (("defaults", "campaign", "overwrite"), BAD_BOOL),
    (("defaults", "campaign", "optimizer", "interval"), HUGE),
    (("defaults", "campaign", "optimizer", "ema_alpha"), HUGE),
]
MATRIX_MAPPINGS = [(), ("defaults",), ("defaults", "probe"), ("defaults", "gateway"),
                   ("defaults", "campaign"), ("defaults", "campaign", "optimizer"),
                   ("backends",), ("backends", "cephfs"), ("backends", "rados", "layouts", 0),
                   ("exclude", 0)]


def matrix_base() -> dict:
    m = yaml.safe_load(QUICK.read_text())
    m["defaults"]["campaign"] = {"timeout": 60, "retries": 1, "retry_delay": 0.5, "streams": 1,
                                 "seed": 3, "client": "xrootd", "checksum": "both",
                                 "overwrite": False, "optimizer": {"interval": 5, "ema_alpha": 0.1}}
    return m


def _set(data, path, value):
    node = data
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def _get(data, path):
    for p in path:
        data = data[p]
    return data


def to_text(data, depth: int = 400) -> bytes:
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return text.replace(f"'{DEEP}'", "[" * depth + "1" + "]" * depth).replace(DEEP, "[]").encode()


@st.composite
def bad_matrices(draw) -> bytes:
    m = matrix_base()
    kind = draw(st.sampled_from(["leaf", "leaf", "leaf", "key", "bytes", "nul", "missing", "bind",
                                 "top", "control", "control", "dupkey"]))
    if kind == "control":
        return with_control(draw, m)
    if kind == "dupkey":
        return with_duplicate_key(draw, to_text(m))
    if kind == "leaf":
        path, values = draw(st.sampled_from(MATRIX_LEAVES))
        _set(m, path, draw(values))
    elif kind == "key":
        _get(m, draw(st.sampled_from(MATRIX_MAPPINGS)))[draw(JUNK_KEY)] = draw(
            st.one_of(st.integers(), st.text(max_size=5), st.none()))
    elif kind == "missing":
        path = draw(st.sampled_from([("backends",), ("backends", "cephfs", "layouts"),
                                     ("backends", "rados", "pools"),
                                     ("backends", "cephfs", "layouts", 0, "object_size")]))
        del _get(m, path[:-1])[path[-1]]
    elif kind == "bind":
        m["defaults"]["gateway"]["bind"] = draw(st.sampled_from([None, "", "  ", 0, [], "any",
                                                                 "0.0.0.0.0", DEEP]))
    elif kind == "top":
        return draw(st.sampled_from([b"", b"- 1\n- 2\n", b"just text\n", b"{a: [1, 2\n",
                                     b"backends: 5\n", b"name: x\n", b"\t- x:\n  y", b"a: *b\n"]))
    text = to_text(m, draw(st.integers(200, 3000)))
    if kind == "bytes":  # a byte that is never UTF-8, somewhere
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xfe\xfe", b"\x80"])) + text[at:]
    elif kind == "nul":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + b"\0" + text[at:]
    return text


# control characters and line breaks: a newline in a value that reaches a config or job file
# would start a directive of its own (fio's exec_prerun=, xrootd's all.export ...)
CONTROL = st.sampled_from(["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1b", "\x7f", "\x85",
                           "\u2028", "\u2029", "\t", "\x01"])


def _strings(node, path=()):
    """Paths of every string value and every key of ``node`` (("k",) + KEY marks a key)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k != "description":  # prose: newlines allowed
                yield (*path, k, KEY)
                yield from _strings(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _strings(v, (*path, i))
    elif isinstance(node, str):
        yield path


KEY = object()


def with_control(draw, data) -> bytes:
    """``data`` with a control character put into one of its strings (a value or a key)."""
    path = draw(st.sampled_from(list(_strings(data))))
    ch = draw(CONTROL)
    if path[-1] is KEY:
        parent, key = _get(data, path[:-2]), path[-2]
        at = draw(st.integers(0, len(str(key))))
        parent[str(key)[:at] + ch + str(key)[at:]] = parent.pop(key)
    else:
        value = _get(data, path)
        at = draw(st.integers(0, len(value)))
        _set(data, path, value[:at] + ch + value[at:])
    text = to_text(data)
    # YAML folds a line break inside a quoted scalar into a space (NEL, LS, PS included): the
    # value that reaches xcbench then holds no control character and is rightly taken
    assume(ch in text.decode() and _holds(yaml.safe_load(text), ch))
    return text


def _holds(node, ch: str) -> bool:
    """Does any key or string value of the loaded document still hold ``ch``?"""
    if isinstance(node, dict):
        return any(ch in str(k) or _holds(v, ch) for k, v in node.items())
    if isinstance(node, list):
        return any(_holds(v, ch) for v in node)
    return isinstance(node, str) and ch in node


def with_duplicate_key(draw, text: bytes) -> bytes:
    """``text`` with one ``key: value`` line of a block mapping given twice (same indent)."""
    import re
    lines = text.decode().splitlines(keepends=True)
    cands = [i for i, ln in enumerate(lines) if re.match(r"^\s*[A-Za-z_][A-Za-z0-9_]*: \S", ln)]
    i = draw(st.sampled_from(cands))
    value = draw(st.sampled_from([None, "1", "x"]))
    dup = lines[i] if value is None else lines[i].split(":")[0] + f": {value}\n"
    return "".join(lines[:i + 1] + [dup] + lines[i + 1:]).encode()


@given(data=bad_matrices(), how=st.sampled_from(["check", "check", "check", "run", "probe"]))
@settings(FUZZ, max_examples=EXAMPLES["matrix"])
def test_fuzz_matrix(base, capsys, data, how):
    with Sandbox(base) as box:
        d = box.dir
        f = d / "m.yaml"
        f.write_bytes(data)
        argv = {"check": ["matrix", "check", str(f)],
                "run": ["run", str(f), "--store", str(d / "results"), "--ceph-conf", str(d / "none")],
                "probe": ["probe", str(f), "--ceph-conf", str(d / "none")]}[how]
        line = refused(capsys, box, argv)
        assert str(f) in line  # the matrix is to blame, not the (missing) cluster


# --- inventories (--hosts FILE) --------------------------------------------------------------

INVENTORY = {"bridge": {"name": "xcb0", "address": "10.77.0.1/24"},
             "hosts": {"c1": {"roles": ["client"], "transport": "netns", "address": "10.77.0.11",
                              "cores": 0.5, "link": {"rate": "200mbit", "rtt": "2ms"}},
                       "g2": {"roles": ["gateway"], "transport": "ssh", "ssh": "g2-alias",
                              "address": "192.0.2.22", "ssh_options": ["-o", "Port=2222"],
                              "xcbench": ["/opt/xcbench/bin/xcbench"]}},
             "ceph": {"conf": "/etc/ceph/ceph.conf", "id": "bench"}}


@st.composite
def bad_inventories(draw) -> bytes:
    data = copy.deepcopy(INVENTORY)
    if draw(st.integers(0, 3)) == 0:
        return with_duplicate_key(draw, to_text(data))
    return with_control(draw, data)


@given(data=bad_inventories())
@settings(FUZZ, max_examples=EXAMPLES["inventory"])
def test_fuzz_inventory(base, capsys, data):
    with Sandbox(base) as box:
        d = box.dir
        f = d / "hosts.yaml"
        f.write_bytes(data)
        line = refused(capsys, box, ["run", str(QUICK), "--hosts", str(f), "--store",
                                     str(d / "results"), "--ceph-conf", str(d / "none")])
        assert str(f) in line  # the inventory is to blame, before any cluster or host


# --- plan specs ----------------------------------------------------------------------------

def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path


PLAN_BASES = {p.name: yaml.safe_load(p.read_text()) for p in PLAN_EXAMPLES}
PLAN_LEAVES = [(name, path) for name, spec in PLAN_BASES.items() for path in _leaves(spec)]


@st.composite
def bad_plan_specs(draw) -> bytes:
    kind = draw(st.sampled_from(["leaf", "leaf", "key", "bytes", "top"]))
    if kind == "top":
        return draw(st.sampled_from([b"", b"- 1\n", b"cluster: [\n", b"5\n", b"\xff\xfe\n"]))
    name, path = draw(st.sampled_from(PLAN_LEAVES))
    spec = copy.deepcopy(PLAN_BASES[name])
    if kind == "leaf":
        _set(spec, path, draw(st.sampled_from([NAN, INF, -INF, -1, -(10**30), "abc", "", True,
                                               [1], {"a": 1}, DEEP])))
    elif kind == "key":
        _get(spec, path[:-1])[draw(JUNK_KEY)] = 1
    text = to_text(spec, draw(st.integers(200, 2000)))
    if kind == "bytes":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + b"\xff" + text[at:]
    return text


@given(data=bad_plan_specs(), target=st.sampled_from(["--target", "--rate"]))
@settings(FUZZ, max_examples=EXAMPLES["plan"])
def test_fuzz_plan_spec(base, capsys, data, target):
    with Sandbox(base) as box:
        d = box.dir
        f = d / "spec.yaml"
        f.write_bytes(data)
        t = ["--target", "hl-lhc-t1"] if target == "--target" else ["--rate", "10Gb/s"]
        line = refused(capsys, box, ["plan", *t, "--cluster-spec", str(f)])
        assert str(f) in line


# --- command-line values -------------------------------------------------------------------

BAD_INT = st.sampled_from(["abc", "", "1.5", "nan", "-5", "0x10", "9" * 40, "1e3", " "])
BAD_POS = st.sampled_from(["0", "-1", "abc", "", "nan", "9" * 40, "1.5"])
BAD_FLOAT = st.sampled_from(["nan", "inf", "-inf", "-1", "abc", "", "1e999", "NaN"])
CAMPAIGN_FLAGS = [("--files", BAD_POS), ("--concurrency", BAD_POS), ("--streams", BAD_POS),
                  ("--connections", BAD_POS), ("--retries", BAD_INT), ("--seed", BAD_INT),
                  ("--timeout", BAD_FLOAT), ("--timeout-per-mib", BAD_FLOAT),
                  ("--retry-delay", BAD_FLOAT), ("--size-spread", BAD_FLOAT),
                  ("--size", st.sampled_from(["0", "-1M", "abc", "1Q", "", "nan", "1.5"])),
                  ("--optimizer-interval", BAD_FLOAT), ("--optimizer-min", BAD_POS),
                  ("--gateway", st.sampled_from(["", "ftp://h:1", "root://", "http://h:99999",
                                                 "/tmp", "root://h:x"])),
                  ("--run-name", st.sampled_from(["", "..", "a/b", "x\ny", "."])),
                  ("--fts", st.sampled_from(["x", "ftp://fts", ""])),
                  ("--fts-token-file", st.sampled_from(["/nonexistent/t", "/", "/proc/self/mem"]))]
OTHER_FLAGS = [
    (["run", str(QUICK)], "--repeats", BAD_POS), (["run", str(QUICK)], "--fio-hosts",
                                                   st.sampled_from(["a b", ",", "h:0", "h:99999", "!"])),
    (["run", str(QUICK)], "--run-name", st.sampled_from(["", "..", "a/b"])),
    (["run", str(QUICK)], "--baseline-streams", st.sampled_from(["0", "a", "", ",", "1,x", "129", "-1"])),
    (["run", str(QUICK)], "--baseline-seconds", BAD_POS),
    (["run"], "--resume", st.sampled_from(["/nonexistent", "/", "."])),
    (["probe", str(QUICK)], "--runtime", BAD_POS),
    (["probe", str(QUICK)], "--fio-hosts", st.sampled_from(["a b", ",", "h:0"])),
    (["probe"], "", st.sampled_from(["/nonexistent", "/", "/proc/self/mem"])),  # "": MATRIX
    (["plan", "--target", "hl-lhc-t1"], "--write-fraction", st.sampled_from(["nan", "-0.5", "2", "abc", "inf"])),
    (["plan", "--target", "hl-lhc-t1"], "--origins-per-host", BAD_POS),
    (["plan"], "--rate", st.sampled_from(["abc", "-1Gb/s", "nanGb/s", "", "infGB/s", "0Gb/s"])),
    (["plan", "--target", "hl-lhc-t1"], "--file-size", st.sampled_from(["abc", "0", "-1G", "nan"])),
    (["plan", "--target", "hl-lhc-t1"], "--set", st.sampled_from(["x", "gateway.bogus=1", "=1",
                                                              "gateway.origins_per_host=nan"])),
    (["plan", "--target", "hl-lhc-t1"], "--calibrate-osds", BAD_POS),
    (["matrix", "check", str(QUICK)], "--osds", BAD_POS),
    (["matrix", "check", str(QUICK)], "--hosts", BAD_POS),
    (["matrix", "check", str(QUICK)], "--max-object-size", st.sampled_from(["abc", "0", "-1", "nan"])),
    (["gateway", "up", "--matrix", str(QUICK), "--cell", "tmpfs"], "--origins", BAD_POS),
    (["gateway", "up", "--matrix", str(QUICK), "--cell", "tmpfs"], "--report",
     st.sampled_from(["h", "h:", ":1", "h:99999", "h:x"])),
]


@st.composite
def bad_argv(draw) -> list[str]:
    if draw(st.booleans()):
        flag, values = draw(st.sampled_from(CAMPAIGN_FLAGS))
        head = ["campaign", "--gateway", "tmpfs"] if flag != "--gateway" else ["campaign"]
        return [*head, f"{flag}={draw(values)}", "--no-progress"]
    head, flag, values = draw(st.sampled_from(OTHER_FLAGS))
    return [*head, f"{flag}={draw(values)}" if flag else draw(values)]


@given(argv=bad_argv())
@settings(FUZZ, max_examples=EXAMPLES["cli"])
def test_fuzz_cli_flags(base, capsys, argv):
    with Sandbox(base) as box:
        d = box.dir
        if argv[0] in ("campaign", "run"):
            argv += ["--store", str(d / "results")]
        if argv[0] in ("run", "probe", "gateway"):
            argv += ["--ceph-conf", str(d / "none")]  # never a cluster, should a check miss
        if argv[0] == "gateway":
            argv += ["--workdir", str(d / "gw")]
        line = refused(capsys, box, argv)
        if argv[0] != "run" or "--resume" not in " ".join(argv):
            assert str(d / "none") not in line, line  # refused for the flag, before the cluster


# --- ceph.conf files -----------------------------------------------------------------------

@st.composite
def bad_confs(draw) -> bytes | None:
    kind = draw(st.sampled_from(["text", "binary", "nomon", "latin1", "dir", "empty"]))
    if kind == "dir":
        return None
    if kind == "empty":
        return draw(st.sampled_from([b"", b"\n\n", b"# only a comment\n", b"[global]\n"]))
    if kind == "binary":
        data = draw(st.binary(min_size=1, max_size=300))
        assume(b"\0" in data or not _utf8(data))
        return data
    if kind == "latin1":
        return "[global]\nmon host = caf\xe9:6789\n".encode("latin-1")
    if kind == "nomon":
        keys = draw(st.lists(st.sampled_from(["fsid", "auth_cluster_required", "keyring",
                                              "log file", "osd pool default size"]), max_size=4))
        body = "".join(f"{k} = {draw(st.text('abc123/.-', max_size=12))}\n" for k in keys)
        return f"[{draw(st.sampled_from(['global', 'client', 'osd']))}]\n{body}".encode()
    text = draw(st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=200))
    assume("mon" not in text.lower() and "=" in text or "[" not in text)
    return text.encode()


def _utf8(data: bytes) -> bool:
    try:
        data.decode()
        return True
    except UnicodeDecodeError:
        return False


@given(conf=bad_confs(), cmd=st.sampled_from(["run", "probe", "cluster"]))
@settings(FUZZ, max_examples=EXAMPLES["conf"])
def test_fuzz_ceph_conf(base, capsys, conf, cmd):
    with Sandbox(base) as box:
        d = box.dir
        f = d / "ceph.conf"
        f.mkdir() if conf is None else f.write_bytes(conf)
        argv = {"run": ["run", str(QUICK), "--store", str(d / "results"), "--ceph-conf", str(f)],
                "probe": ["probe", str(QUICK), "--ceph-conf", str(f)],
                "cluster": ["cluster", "status", "--ceph-conf", str(f)]}[cmd]
        line = refused(capsys, box, argv)
        assert str(f) in line


# --- damaged run directories ---------------------------------------------------------------

def _good_run(d: Path) -> Path:
    from xcbench.store.rundir import RunDir
    run = RunDir.create(d / "results", name="r", fingerprint=False,
                        matrix={"path": str(QUICK), "name": "quick"}, options={})
    run.append("transfers", [{"cell_id": "c1", "file_index": i, "file_state": "FINISHED",
                              "file_size": 1 << 20, "start_time": 1.0 + i, "finish_time": 2.0 + i}
                             for i in range(4)])
    run.finalize("complete")
    for pq in run.path.glob("*.parquet"):
        pq.unlink()  # readers fall back to the JSONL, which is what is damaged
    return run.path


@st.composite
def damages(draw):
    kind = draw(st.sampled_from(["absent", "truncated", "garbage", "not-object", "schema",
                                 "cells", "manifest-dir", "jsonl-garbage", "bytes", "campaign",
                                 "parquet"]))
    arg = draw(st.integers(0, 10**6))
    return kind, arg, draw(st.sampled_from(["show", "resume", "report", "calibrate"]))


def damage(run: Path, kind: str, arg: int) -> None:
    import json
    m = run / "manifest.json"
    text = m.read_text().rstrip()
    if kind == "absent":
        m.unlink()
    elif kind == "truncated":
        m.write_text(text[:arg % (len(text) - 1)])
    elif kind == "garbage":
        m.write_bytes(bytes((arg * 7919 + i * 31) % 256 for i in range(64)) + b"\0")
    elif kind == "not-object":
        m.write_text(["[]", "null", "5", '"x"', "[{}]"][arg % 5])
    elif kind == "schema":
        d = json.loads(text)
        d["schema_version"] = [99, -1, "2", None, 2.5, 10**30][arg % 6]
        m.write_text(json.dumps(d))
    elif kind == "cells":
        d = json.loads(text)
        d["cells"] = [5, "x", [1], None][arg % 4]
        d["matrix"] = [None, 5, {"path": 5}, {"path": "/nonexistent.yaml"}][arg % 4]
        m.write_text(json.dumps(d))
    elif kind == "manifest-dir":
        m.unlink()
        m.mkdir()
    elif kind == "bytes":
        m.write_bytes(text.encode()[:arg % len(text)] + b"\xff\xfe" + text.encode()[arg % len(text):])
    elif kind == "parquet":  # a finalized table cut short, or overwritten
        from xcbench.store.rundir import read_jsonl
        pq = run / "transfers.parquet"
        read_jsonl(run / "records" / "transfers.jsonl").to_parquet(pq, index=False)
        data = pq.read_bytes()
        pq.write_bytes(data[:arg % len(data)] if arg % 2 else b"PAR1" + bytes(arg % 251 for _ in range(64)))
    elif kind == "campaign":
        d = json.loads(text)
        d.update(kind="campaign", matrix=None)
        m.write_text(json.dumps(d))
    elif kind == "jsonl-garbage":  # a line in the middle that is not JSON: not a torn tail
        jl = run / "records" / "transfers.jsonl"
        lines = jl.read_text().splitlines(keepends=True)
        lines.insert(1 + arg % (len(lines) - 1), ["{\"cell_id\": \"c1\", \"fi\n", "\xff\n",
                                                  "not json\n", "[1, 2\n"][arg % 4])
        jl.write_bytes("".join(lines).encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff"))
        d = json.loads(text)
        d["matrix"] = None  # and a run nobody can resume
        m.write_text(json.dumps(d))


@given(damages())
@settings(FUZZ, max_examples=EXAMPLES["rundir"])
def test_fuzz_damaged_run_dirs(base, capsys, case):
    kind, arg, cmd = case
    with Sandbox(base) as box:
        d = box.dir
        run = _good_run(d)
        damage(run, kind, arg)
        if kind in ("jsonl-garbage", "parquet"):
            cmd = "report"  # `runs show` reads the manifest only, calibration other tables
        if kind == "campaign":
            cmd = "resume"  # a campaign's run is fine to show and report, not to resume
        argv = {"show": ["runs", "show", str(run)],
                "resume": ["run", "--resume", str(run), "--ceph-conf", str(d / "none")],
                "report": ["report", str(run), "--out", str(d / "report.html")],
                "calibrate": ["plan", "--target", "hl-lhc-t1", "--calibrate", str(run)]}[cmd]
        line = refused(capsys, box, argv)
        assert str(run) in line or str(d / "results") in line, line


# --- a few through a real process ----------------------------------------------------------

@pytest.mark.parametrize("argv, text", [
    (["campaign", "--gateway", "tmpfs", "--size", "0"], None),
    (["campaign", "--gateway", "tmpfs", "--retry-delay", "nan"], None),
    (["matrix", "check", "/"], None),
    (["matrix", "check", "M"], "defaults:\n  campaign: {timeout: .inf}\nbackends: {tmpfs: {}}\n"),
    (["matrix", "check", "M"], "defaults:\n  gateway: {bind: null}\nbackends: {tmpfs: {}}\n"),
    (["matrix", "check", "M"], b"name: \xff\n"),
    (["campaign", "--gateway", "tmpfs", "--files", "many"], None),
])
def test_fuzz_examples_in_a_real_process(tmp_path, argv, text):
    if text is not None:
        f = tmp_path / "m.yaml"
        f.write_bytes(text if isinstance(text, bytes) else text.encode())
        argv = [str(f) if a == "M" else a for a in argv]
    env = {**os.environ, "XCB_FUZZ_MARK": MARK, "TMPDIR": str(tmp_path)}
    before = set(os.listdir(tmp_path))
    cp = subprocess.run([sys.executable, "-m", "xcbench", *argv], capture_output=True, text=True,
                        cwd=tmp_path, env=env, timeout=120)
    assert cp.returncode == 2 and "Traceback" not in cp.stderr + cp.stdout
    if argv[:2] == ["matrix", "check"] and not cp.stderr:  # one line per error, on stdout
        assert cp.stdout.startswith(f"{argv[2]}: ")
    else:
        assert len(cp.stderr.splitlines()) == 1 and cp.stderr.startswith("xcbench: error: ")
    assert set(os.listdir(tmp_path)) == before and not _marked_pids()
    assert str(tmp_path) not in _mounts()
