"""Nodes from Slurm without a cluster: the inventory's slurm: section (every mistake one line naming
the file and the field), Slurm's answers parsed strictly (through scripted sinfo/squeue/scontrol/
scancel/srun on the PATH: real processes, canned answers), the step launcher's argv and the
sweep that cancels a killed command's steps. The real thing: tests/integration/hosts/test_slurm.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from xcbench.errors import XcbError
from xcbench.hosts import parse_inventory, transport_for
from xcbench.hosts import slurm as sl
from xcbench.hosts import slurm_cli as cli
from xcbench.hosts.matrix_section import inventory_for
from xcbench.hosts.slurm_spec import parse_request
from xcbench.hosts.slurm_sweep import sweep
from xcbench.hosts.steps import what
from xcbench.system.statedir import HOST

GOOD = {"partition": "batch", "nodes": 4, "time": "1:00:00", "account": "ska",
        "constraint": "ib&haswell", "cpus_per_task": 8, "gateways": 1, "start_timeout": "10m"}


def test_good_section_and_its_salloc_options():
    r = parse_request(GOOD, "h.yaml")
    assert (r.partition, r.nodes, r.gateways, r.cpus_per_task, r.start_timeout) == ("batch", 4, 1, 8, 600)
    assert r.salloc_options() == ["--nodes=4", "--ntasks-per-node=1", "--no-kill", "--partition=batch",
                                  "--time=1:00:00", "--account=ska", "--constraint=ib&haswell",
                                  "--cpus-per-task=8"]
    empty = parse_request({}, "h.yaml")
    assert empty.nodes is None and empty.gateways == 0
    assert empty.salloc_options() == ["--nodes=1", "--ntasks-per-node=1", "--no-kill", "--exclusive"]
    assert parse_request({"time": 30, "xcbench": "/sw/xcb run"}, "h").xcbench == ("/sw/xcb", "run")


@pytest.mark.parametrize("patch, field", [
    ({"nodes": 0}, "nodes"), ({"nodes": "4"}, "nodes"), ({"nodes": True}, "nodes"),
    ({"gateways": 4}, "gateways"), ({"gateways": -1}, "gateways"),
    ({"cpus_per_task": 1.5}, "cpus_per_task"), ({"partition": "-p x"}, "partition"),
    ({"partition": "a b"}, "partition"), ({"time": "1h"}, "time"), ({"time": "--begin"}, "time"),
    ({"account": "a;rm -rf /"}, "account"), ({"constraint": "ib haswell"}, "constraint"),
    ({"start_timeout": "soon"}, "start_timeout"), ({"start_timeout": 0}, "start_timeout"),
    ({"xcbench": []}, "xcbench"), ({"nodez": 3}, "nodez"),
])
def test_each_bad_value_is_one_line_naming_file_and_field(patch, field):
    with pytest.raises(XcbError) as e:
        parse_inventory({"slurm": {**GOOD, **patch}}, "h.yaml")
    text = str(e.value)
    assert text.startswith(f"h.yaml: slurm: {field}:") and "\n" not in text, text


def test_inventory_with_slurm_alone_or_beside_hosts():
    inv = parse_inventory({"slurm": None}, "h.yaml")
    assert inv.hosts == () and inv.slurm is not None and inv.slurm.source == "h.yaml"
    inv = parse_inventory({"slurm": {"nodes": 2}, "hosts": {"g": {"roles": ["gateway"]}}}, "h.yaml")
    assert [h.name for h in inv.gateways] == ["g"] and inv.slurm.nodes == 2
    with pytest.raises(XcbError, match=r"h.yaml: hosts: .*\(or slurm: for nodes from Slurm\)"):
        parse_inventory({"ceph": {"conf": "/c"}}, "h.yaml")


def test_a_matrix_may_not_ask_slurm_for_nodes():
    with pytest.raises(XcbError, match=r"^m.yaml: hosts: slurm: asks Slurm for nodes .* \(--hosts FILE\)"):
        parse_inventory({"slurm": {"nodes": 2}}, "m.yaml: hosts", commands=False)


def test_hosts_slurm_is_the_allocation_this_command_runs_in(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inv = inventory_for("slurm", {}, "m.yaml")
    assert inv.slurm is not None and inv.source == "--hosts slurm" and inv.hosts == ()
    (tmp_path / "slurm").write_text("hosts: {a: {roles: [client]}}\n")  # a file of that name wins
    assert inventory_for("slurm", {}, "m.yaml").slurm is None


# --- Slurm's answers, from scripted tools on the PATH -----------------------------------------
TOOL = r'''#!/bin/sh
# a canned answer per tool: $XCB_FAKE/<tool>.out (stdout), .err, .rc; the argv logged
echo "$(basename "$0") $*" >> "$XCB_FAKE/calls"
t=$(basename "$0")
[ -f "$XCB_FAKE/$t.err" ] && cat "$XCB_FAKE/$t.err" >&2
[ -f "$XCB_FAKE/$t.out" ] && cat "$XCB_FAKE/$t.out"
exit $(cat "$XCB_FAKE/$t.rc" 2>/dev/null || echo 0)
'''
# srun runs what follows its `--` (as a step would, here)
SRUN = ('#!/bin/sh\necho "srun $*" >> "$XCB_FAKE/calls"\nwhile [ "$1" != "--" ]; do\n'
        '  case "$1" in --export=ALL,*) export "${1#--export=ALL,}";; esac; shift\ndone\nshift\n'
        'exec "$@"\n')


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """sinfo, squeue, scontrol, scancel, salloc, srun scripted; answer(tool, out, rc=0, err='')."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for t in cli.TOOLS:
        (bin_ / t).write_text(SRUN if t == "srun" else TOOL)
        (bin_ / t).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    monkeypatch.setenv("XCB_FAKE", str(tmp_path))

    def answer(tool: str, out: str = "", rc: int = 0, err: str = "") -> None:
        (tmp_path / f"{tool}.out").write_text(out)
        (tmp_path / f"{tool}.rc").write_text(str(rc))
        (tmp_path / f"{tool}.err").write_text(err)
    answer.calls = lambda: (tmp_path / "calls").read_text().splitlines() \
        if (tmp_path / "calls").exists() else []  # type: ignore[attr-defined]
    return answer


def test_no_slurm_here_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(XcbError, match=r"^no Slurm here: srun, salloc, .* not found \(Slurm's client commands"):
        cli.ping()


def test_answers_parsed_strictly(fake):
    fake("sinfo", "batch*|up|3\ndebug|up|1\nbatch*|up|2\n")
    assert cli.partitions() == {"batch": {"default": True, "state": "up", "nodes": 5},
                                "debug": {"default": False, "state": "up", "nodes": 1}}
    fake("sinfo", "batch up 3\n")  # not the format asked for: refused, not guessed
    with pytest.raises(XcbError, match=r"^Slurm: sinfo partitions: an answer line not of 3 fields"):
        cli.partitions()
    fake("squeue", "12|PENDING|batch||PartitionNodeLimit|xcb-1-ab|c\n")  # a name with a | in it
    j = cli.job("12")
    assert (j.state, j.reason, j.nodes, j.name, j.running) == ("PENDING", "PartitionNodeLimit", "",
                                                               "xcb-1-ab|c", False)
    fake("squeue", "12|WAITING|batch||None|x\n")
    with pytest.raises(XcbError, match="'WAITING' is not a job squeue lists"):
        cli.job("12")
    fake("squeue", "", rc=1, err="slurm_load_jobs error: Invalid job id specified\n")
    assert cli.job("12") is None
    with pytest.raises(XcbError, match="is not a job id"):
        cli.job("12; scancel -u root")
    fake("squeue", "12.0|sn1|xcb-9-ab-campaign-agent-sn1-4\n12.batch|sn1|batch\n")
    assert [(s.step_id, s.name) for s in cli.steps("12")] == [
        ("12.0", "xcb-9-ab-campaign-agent-sn1-4"), ("12.batch", "batch")]
    fake("squeue", "12|sn1|x\n")
    with pytest.raises(XcbError, match="'12' is not a step id"):
        cli.steps("12")
    fake("scontrol", "sn1\nsn2\n")
    assert cli.hostnames("sn[1-2]") == ["sn1", "sn2"]
    fake("scontrol", "sn1\n../etc\n")
    with pytest.raises(XcbError, match="is not a node name"):
        cli.hostnames("sn[1-2]")
    fake("sinfo", "sn1|10.0.0.1\nsn2|localhost\nsn1|10.0.0.1\n")
    assert cli.node_addresses(["sn1", "sn2"]) == {"sn1": "10.0.0.1", "sn2": "127.0.0.1"}
    fake("scontrol", "Slurmctld(primary) at vm is DOWN\n", rc=1)
    with pytest.raises(XcbError, match=r"^Slurm: no controller answers \(`scontrol ping`: .* is DOWN\)$"):
        cli.ping()


def _alloc(cpus=None) -> sl.Allocation:
    req = parse_request({"cpus_per_task": cpus} if cpus else {}, "h.yaml")
    return sl.Allocation("12", ["sn1", "sn2"], False, "xcb-9-ab-", req)


def test_step_argv_name_and_a_real_round_trip(fake):
    alloc = _alloc(cpus=4)
    (host,) = [h for h in _nodes(fake, alloc) if h.name == "sn2"]
    t = transport_for(host)
    argv = t.wrap([sys.executable, "-m", "xcbench", "campaign-agent"], {"A": 1})
    assert argv[:argv.index("--")] == [
        "srun", "--jobid=12", "--nodes=1", "--nodelist=sn2", "--ntasks=1", "--kill-on-bad-exit=1",
        "--overlap", "--quiet", "--chdir=/tmp", "--job-name=xcb-9-ab-campaign-agent-sn2-1",
        f"--export=ALL,XCBENCH_SCRATCH_TAG={alloc.scratch}", "--cpus-per-task=4"]
    assert argv[argv.index("--") + 1:] == ["env", "A=1", sys.executable, "-m", "xcbench", "campaign-agent"]
    assert t.run(["sh", "-c", "echo $0", "hello"]).stdout == "hello\n"
    p = t.spawn(["sh", "-c", "read l; echo got $l"], name="x", pipe=True)
    p.popen.stdin.write(b"it\n")
    p.popen.stdin.close()
    assert p.popen.stdout.read() == b"got it\n" and p.popen.wait(10) == 0
    assert [s["name"] for s in alloc.describe()["steps"]] == [
        "xcb-9-ab-campaign-agent-sn2-1", "xcb-9-ab-sh-sn2-2", "xcb-9-ab-sh-sn2-3"]


def _nodes(fake, alloc):
    fake("sinfo", "sn1|127.0.0.11\nsn2|127.0.0.12\n")
    return sl.node_hosts(alloc)


def test_nodes_take_roles_and_the_gateway_stays_here_without_a_gateway_node(fake):
    alloc = _alloc()
    fake("sinfo", "sn1|127.0.0.11\nsn2|127.0.0.12\n")
    inv = sl.with_nodes(parse_inventory({"slurm": {}}, "h.yaml"), _alloc())
    assert [(h.name, h.transport, h.roles, h.address) for h in inv.hosts] == [
        ("coordinator", "local", ("gateway",), "127.0.0.1"),  # where it reaches the nodes from
        ("sn1", "slurm", ("client",), "127.0.0.11"), ("sn2", "slurm", ("client",), "127.0.0.12")]
    assert inv.allocation.job_id == "12" and inv.hosts[1].slurm is inv.allocation
    alloc.request = parse_request({"gateways": 1}, "h.yaml")
    inv = sl.with_nodes(parse_inventory({"slurm": {}}, "h.yaml"), alloc)
    assert [(h.name, h.roles) for h in inv.hosts] == [
        ("coordinator", ()), ("sn1", ("gateway",)), ("sn2", ("client",))]  # this machine: let in
    alloc.request = parse_request({"gateways": 2}, "h.yaml")
    with pytest.raises(XcbError, match="gateways: 2 of the allocation's 2 nodes leaves no client"):
        sl.with_nodes(parse_inventory({"slurm": {}}, "h.yaml"), alloc)


def test_step_words():
    assert what([sys.executable, "-m", "xcbench", "gateway-agent"]) == "gateway-agent"
    assert what(["env", "A=1", "/opt/xcb/bin/xcbench", "--version"]) == "xcbench"
    assert what(["sh", "-c", "x"]) == "sh" and what([]) == "step"


def test_an_allocation_that_never_starts_says_why_and_is_cancelled(fake, monkeypatch):
    fake("sinfo", "batch*|up|3\n")
    fake("squeue", "31|PENDING|batch||PartitionNodeLimit|x\n")
    # salloc waits for its grant (it never comes here) while squeue says why
    (Path(os.environ["XCB_FAKE"]) / "bin" / "salloc").write_text(
        '#!/bin/sh\necho "salloc $*" >> "$XCB_FAKE/calls"\nexec sleep 60\n')
    req = parse_request({"nodes": 5, "start_timeout": "2s"}, "h.yaml")
    with pytest.raises(XcbError) as e:
        sl.make(req, sl.Record(Path(os.environ["XCB_FAKE"]) / "rec"))
    assert str(e.value) == ("h.yaml: slurm: the allocation (partition batch) did not start within "
                            "2 s: squeue says PENDING, reason PartitionNodeLimit; cancelled")
    assert any(c.startswith("scancel -Q 31") for c in fake.calls())
    with pytest.raises(XcbError, match=r"partition: 'nope' is not a partition of this cluster \(sinfo lists batch\)"):
        sl.make(parse_request({"partition": "nope"}, "h.yaml"), sl.Record(Path(os.environ["XCB_FAKE"])))


def test_sweep_cancels_the_steps_a_killed_command_left(fake, tmp_path):
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    dead = {"pid": 999_999_9, "start": 1.0, "cmdline": ["xcbench", "run"]}
    rec = {"host": HOST, "uid": os.geteuid(), "owner": dead,
           "jobs": [{"job": "12", "ours": False, "prefix": "xcb-9-ab-"}]}
    (d / "9.json").write_text(json.dumps(rec))
    (d / "9.json").chmod(0o600)
    fake("squeue", "12.3|sn1|xcb-9-ab-campaign-agent-sn1-4\n12.4|sn2|someone-elses\n")
    said = sweep(d, wait=0.5)
    assert said and "cancelled step 12.3" in said and "12.4" not in said
    assert "scancel -Q 12.3" in fake.calls() and not (d / "9.json").exists()
    assert sweep(d) is None


# --- the nodes' scratch: node-clean through a step (here the "node" is this machine) ------------
def _dead_record(d: Path, entry: dict) -> Path:
    d.mkdir(mode=0o700, exist_ok=True)
    rec = {"host": HOST, "uid": os.geteuid(), "jobs": [entry],
           "owner": {"pid": 999_999_9, "start": 1.0, "cmdline": ["xcbench", "run"]}}
    f = d / "9.json"
    f.write_text(json.dumps(rec))
    f.chmod(0o600)
    return f


@pytest.fixture
def tagged_dirs(monkeypatch, tmp_path):
    """A scratch tag and dirs named with it, as the run's agents make them on a node."""
    import secrets as _s
    tag = _s.token_hex(8)
    monkeypatch.setenv("XCBENCH_HOME", str(tmp_path / "node-home"))  # the node's state home
    made = [Path("/var/tmp") / f"xcbgw-{tag}-{_s.token_hex(4)}",
            Path("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp") / f"xcb-push-c1-{tag}-{_s.token_hex(4)}"]
    for m in made:
        (m / "sub").mkdir(parents=True)
        (m / "sub" / "f").write_text("x")
    yield tag, made
    for m in Path("/var/tmp").glob(f"*-{tag}-*"):
        m.unlink() if m.is_symlink() else m.rmdir() if not any(m.iterdir()) else None


def test_sweep_cleans_the_nodes_of_a_killed_run_with_a_job_of_its_own(fake, tmp_path, tagged_dirs):
    tag, made = tagged_dirs
    fake("squeue", "", rc=1, err="slurm_load_jobs error: Invalid job id specified\n")  # job 12 ended
    f = _dead_record(tmp_path / "state", {
        "job": "12", "ours": True, "prefix": "xcb-9-ab-", "nodes": ["sn1"], "scratch": tag,
        "partition": "batch", "account": None, "xcbench": [sys.executable, "-m", "xcbench"]})
    said = sweep(f.parent, wait=0.5)
    assert said and "removed what the run made on its nodes (sn1: 2 dirs)" in said, said
    assert not any(m.exists() for m in made) and not f.exists()
    (call,) = [c for c in fake.calls() if c.startswith("srun")]
    assert call.split(" -- ")[0].split() == [
        "srun", "--time=2", "--immediate=30", "--partition=batch", "--nodes=1", "--nodelist=sn1",
        "--ntasks=1", "--quiet", "--chdir=/tmp", "--job-name=xcb-9-ab-node-clean-sn1",
        f"--export=ALL,XCBENCH_SCRATCH_TAG={tag}"]
    assert call.endswith("-m xcbench node-clean")


def test_a_node_not_cleaned_stays_in_the_record_for_the_next_command(fake, tmp_path, tagged_dirs):
    tag, made = tagged_dirs
    fake("squeue", "12|RUNNING|batch|sn1|None|x\n")  # the operator's allocation, still running
    foreign = Path("/var/tmp") / f"xcbgw-{tag}-foreign"
    foreign.mkdir()
    os.chown(foreign, 65534, 65534) if os.geteuid() == 0 else None
    link = Path("/var/tmp") / f"xcbsec-{tag}-link"
    link.symlink_to(made[0])
    try:
        f = _dead_record(tmp_path / "state", {
            "job": "12", "ours": False, "prefix": "xcb-9-ab-", "nodes": ["sn1"], "scratch": tag,
            "xcbench": [sys.executable, "-m", "xcbench"]})
        said = sweep(f.parent, wait=0.5)
        assert "could not clean sn1 (left " in said and "the next command tries again" in said, said
        assert "xcbsec-" in said and "a symlink is never followed" in said
        assert foreign.is_dir() and link.is_symlink() and not any(m.exists() for m in made)
        assert "--jobid=12 --overlap" in next(c for c in fake.calls() if c.startswith("srun"))
        assert json.loads(f.read_text())["jobs"][0]["nodes"] == ["sn1"]  # kept for the next one
        assert json.loads(f.read_text())["jobs"][0]["tries"] == 1
        if os.geteuid() == 0:  # another user's dir is never ours to remove
            assert "owned by uid 65534" in said
    finally:
        link.unlink()
        foreign.rmdir()
    made[0].mkdir()  # what the node still holds when the next command comes
    assert "(sn1: 1 dirs)" in (sweep(f.parent, wait=0.5) or "") and not f.exists()  # that one
    assert not made[0].exists()


def test_release_cleans_every_node_but_a_lost_one(fake, tagged_dirs, capsys):
    tag, made = tagged_dirs
    alloc = _alloc()
    alloc.scratch = tag
    alloc.lost.add("sn2")
    fake("squeue", "")  # no step of the run left
    assert sl.release(alloc) == ["sn2"]  # a dead node: the next command's, once it is back
    calls = [c for c in fake.calls() if c.startswith("srun")]
    assert len(calls) == 1 and "--jobid=12 --overlap" in calls[0] and "--nodelist=sn1" in calls[0]
    assert "--job-name=xcb-9-ab-node-clean-sn1-1" in calls[0]  # a step of the run, in its manifest
    assert not any(m.exists() for m in made)
    assert "removed what the run's agents left on their nodes (sn1: 2 dirs)" in capsys.readouterr().err


def test_a_record_that_names_no_nodes_or_a_bad_tag_is_left_alone(tmp_path, capsys):
    for bad in ({"nodes": ["../x"], "scratch": "ab" * 8}, {"nodes": ["sn1"], "scratch": "x/y"},
                {"nodes": ["sn1"], "scratch": "ab" * 8, "xcbench": "sh -c rm"}):
        f = _dead_record(tmp_path / "state", {"job": "12", "prefix": "xcb-9-ab-", **bad})
        assert sweep(f.parent) is None and f.exists()
    assert capsys.readouterr().err.count("left alone, not acted on") == 3


def test_the_last_try_gives_up_and_says_what_is_left_where(fake, tmp_path):
    fake("squeue", "", rc=1, err="slurm_load_jobs error: Invalid job id specified\n")
    fake("srun", "", rc=1, err="srun: error: Unable to allocate resources: Invalid node name specified\n")
    (tmp_path / "bin" / "srun").write_text(TOOL)  # the cluster does not know the node (any more)
    f = _dead_record(tmp_path / "state", {
        "job": "12", "ours": True, "prefix": "xcb-9-ab-", "nodes": ["sn1", "sn2"], "tries": 2,
        "scratch": "ab" * 8, "xcbench": ["xcbench"]})
    said = sweep(f.parent, wait=0.5)
    assert "gave up cleaning sn1, sn2 (node-clean said nothing of its own (exit 1: srun: error: " \
           "Unable to allocate resources: Invalid node name specified)) after 3 tries" in said, said
    assert f"what the run left there is named *-{'ab' * 8}-* under /var/tmp, /dev/shm, /tmp" in said
    assert not f.exists()
