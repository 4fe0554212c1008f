"""Matrix expansion and validation: every bad input is one line naming file, cell/entry, field."""

import subprocess
import sys
import textwrap

import pytest

from xcbench.errors import XcbError
from xcbench.matrix import ClusterFacts, check_lines, load_matrix, parse_pool

GOOD = """
name: t
defaults: {concurrency: [1, 4], file_size: 4M, files: 2}
backends:
  tmpfs: {size: 1G}
  cephfs:
    layouts: [{stripe_unit: 4M, stripe_count: 1, object_size: 4M},
              {stripe_unit: 1M, stripe_count: 4, object_size: 4M}]
    pools: [replicated, ec2+1]
  rados:
    layouts: [{stripe_unit: 4M, stripe_count: 1, object_size: 4M}]
    pools: [rep1]
"""
FACTS = ClusterFacts(osd_max_object_size=128 << 20, num_osds=3, num_hosts=1)


def write(tmp_path, text, name="m.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_expansion_is_the_product_per_backend(tmp_path):
    m = load_matrix(write(tmp_path, GOOD), facts=FACTS)
    by = {b: [c for c in m.cells if c.backend == b] for b in ("tmpfs", "cephfs", "rados")}
    assert (len(by["tmpfs"]), len(by["cephfs"]), len(by["rados"])) == (1, 4, 1)
    c = by["rados"][0]
    assert (c.layout.stripe_unit, c.layout.object_size, c.pool.name) == (4 << 20, 4 << 20, "xcb-rep1")
    assert c.concurrency == (1, 4) and c.file_size == 4 << 20 and c.files == 2
    assert {x.pool.name for x in by["cephfs"]} == {"xcb-rep3", "xcb-ec2-1"}  # replicated = size 3


def test_ids_are_stable_and_distinct(tmp_path):
    a = load_matrix(write(tmp_path, GOOD, "a.yaml"))
    b = load_matrix(write(tmp_path, GOOD.replace("name: t", "name: other"), "b.yaml"))
    assert [c.id for c in a.cells] == [c.id for c in b.cells]  # name and file don't matter
    assert len({c.id for c in a.cells}) == len(a.cells)
    changed = load_matrix(write(tmp_path, GOOD.replace("files: 2", "files: 3"), "c.yaml"))
    assert not {c.id for c in a.cells} & {c.id for c in changed.cells}


def test_exclude_and_include(tmp_path):
    text = GOOD + """
exclude: [{backend: cephfs, pool: ec2+1, stripe_count: 4}]
include: [{backend: cephfs, stripe_unit: 64K, stripe_count: 1, object_size: 64K, pool: rep1, concurrency: [8]}]
"""
    m = load_matrix(write(tmp_path, text), facts=FACTS)
    ceph = [c for c in m.cells if c.backend == "cephfs"]
    assert len(ceph) == 4  # 4 - 1 excluded + 1 included
    assert not any(c.pool.kind == "erasure" and c.layout.stripe_count == 4 for c in ceph)
    inc = [c for c in ceph if c.layout.stripe_unit == 64 << 10]
    assert len(inc) == 1 and inc[0].concurrency == (8,)


def test_human_sizes(tmp_path):
    text = GOOD.replace("stripe_unit: 4M, stripe_count: 1, object_size: 4M}]\n    pools: [rep1]",
                        "stripe_unit: 4MiB, stripe_count: 1, object_size: 16MiB}]\n    pools: [rep1]")
    m = load_matrix(write(tmp_path, text))
    r = [c for c in m.cells if c.backend == "rados"][0]
    assert r.layout.object_size == 16 * 2**20


@pytest.mark.parametrize("value,label", [("replicated", "rep3"), ("unprotected", "rep1"), ("rep3", "rep3"),
                                         ({"replicated": 2}, "rep2"), ("ec2+1", "ec2+1"),
                                         ({"ec": "8+3"}, "ec8+3"), ({"ec": {"k": 4, "m": 2}}, "ec4+2")])
def test_pool_forms(value, label):
    assert parse_pool(value).label == label


def test_scale_ec_maps_onto_what_fits(tmp_path):
    text = GOOD.replace("pools: [replicated, ec2+1]", "pools: [ec8+3]")
    with pytest.raises(XcbError, match="ec8\\+3 needs 11 OSDs"):
        load_matrix(write(tmp_path, text), facts=FACTS)
    m = load_matrix(write(tmp_path, text), facts=FACTS, scale_ec=True)
    assert m.scaled_ec == {"ec8+3": "ec2+1"}
    assert {c.pool.label for c in m.cells if c.backend == "cephfs"} == {"ec2+1"}
    assert m.manifest()["scaled_ec"] == {"ec8+3": "ec2+1"}


def test_shipped_matrices_are_valid():
    from importlib.resources import files
    quick = load_matrix(files("xcbench.layouts") / "quick.yaml", facts=FACTS)
    assert {c.backend for c in quick.cells} == {"tmpfs", "cephfs", "rados"}
    assert {c.pool.kind for c in quick.cells if c.pool} == {"replicated", "erasure"}
    with pytest.raises(XcbError, match="use --scale-ec"):
        load_matrix(files("xcbench.layouts") / "ral-layouts.yaml", facts=FACTS)
    ral = load_matrix(files("xcbench.layouts") / "ral-layouts.yaml", facts=FACTS, scale_ec=True)
    assert ral.scaled_ec == {"ec8+3": "ec2+1"}
    big = ClusterFacts(num_osds=12)
    assert load_matrix(files("xcbench.layouts") / "ral-layouts.yaml", facts=big).scaled_ec == {}


LAY = "{stripe_unit: 4M, stripe_count: 1, object_size: 4M}"
BAD = [
    # (matrix text, where, field)
    ("backends: {cephfs: {layouts: [{stripe_unit: 100000, stripe_count: 1, object_size: 4M}], pools: [rep1]}}",
     "backends.cephfs.layouts[0]", "stripe_unit"),
    ("backends: {cephfs: {layouts: [{stripe_unit: 3M, stripe_count: 1, object_size: 4M}], pools: [rep1]}}",
     "backends.cephfs.layouts[0]", "object_size"),
    ("backends: {rados: {layouts: [{stripe_unit: 4M, stripe_count: 0, object_size: 4M}], pools: [rep1]}}",
     "backends.rados.layouts[0]", "stripe_count"),
    ("backends: {rados: {layouts: [{stripe_unit: 4M, stripe_count: two, object_size: 4M}], pools: [rep1]}}",
     "backends.rados.layouts[0]", "stripe_count"),
    ("backends: {cephfs: {layouts: [{stripe_unit: 4M, stripe_count: 1, object_size: 256M}], pools: [rep1]}}",
     "cell cephfs su=4M sc=1 os=256M rep1", "object_size"),
    ("backends: {cephfs: {layouts: [{stripe_unit: 4M, stripe_count: 1}], pools: [rep1]}}",
     "backends.cephfs.layouts[0]", "object_size"),
    ("backends: {cephfs: {layouts: [{stripe_unit: 4M, stripe_count: 1, object_size: 4M, stripe_size: 1}], pools: [rep1]}}",
     "backends.cephfs.layouts[0]", "stripe_size"),
    (f"backends: {{cephfs: {{layouts: [{LAY}], pools: [ec4+2]}}}}", "cell cephfs su=4M sc=1 os=4M ec4+2", "pool"),
    (f"backends: {{cephfs: {{layouts: [{LAY}], pools: [rep5]}}}}", "cell cephfs su=4M sc=1 os=4M rep5", "pool"),
    (f"backends: {{cephfs: {{layouts: [{LAY}], pools: [ec0+1]}}}}", "backends.cephfs.pools[0]", "pool"),
    (f"backends: {{cephfs: {{layouts: [{LAY}], pools: [mirrored]}}}}", "backends.cephfs.pools[0]", "pool"),
    (f"backends: {{cephfs: {{layouts: [{LAY}]}}}}", "backends.cephfs", "pools"),
    ("backends: {cephfs: {pools: [rep1]}}", "backends.cephfs", "layouts"),
    ("backends: {s3: {}}", "backends", "s3"),
    ("backends: {}", "top level", "backends"),
    ("name: x\nbakends: {tmpfs: {}}", "top level", "bakends"),
    ("backends: {tmpfs: {size: lots}}", "backends.tmpfs.size[0]", "size"),
    ("backends: {tmpfs: {sise: 1G}}", "backends.tmpfs", "sise"),
    ("backends: {tmpfs: {modes: [pull]}}", "backends.tmpfs", "modes"),
    ("backends: {tmpfs: {concurrency: [0]}}", "backends.tmpfs", "concurrency"),
    ("defaults: {concurrency: [4, many]}\nbackends: {tmpfs: {}}", "defaults", "concurrency"),
    ("defaults: {file_size: -1}\nbackends: {tmpfs: {}}", "defaults", "file_size"),
    ("defaults: {files: 1.5}\nbackends: {tmpfs: {}}", "defaults", "files"),
    ("defaults: {size_dist: normal}\nbackends: {tmpfs: {}}", "defaults", "size_dist"),
    ("defaults: {origins: [0]}\nbackends: {tmpfs: {}}", "defaults", "origins"),
    ("defaults: {probe: {iodepht: 4}}\nbackends: {tmpfs: {}}", "defaults.probe", "iodepht"),
    ("defaults: {gateway: {async: maybe}}\nbackends: {tmpfs: {}}", "defaults.gateway", "async"),
    ("defaults: {gateway: {buffers_maxbsz: 1M}}\nbackends: {tmpfs: {}}", "defaults.gateway", "buffers_maxbsz"),
    ("backends: {tmpfs: {}}\nexclude: [{backend: tmpfs, colour: red}]", "exclude[0]", "colour"),
    ("backends: {tmpfs: {}}\ninclude: [{pool: rep1}]", "include[0]", "backend"),
    ("backends: {tmpfs: {}}\ninclude: [{backend: cephfs, stripe_unit: 1000, stripe_count: 1, object_size: 4M}]",
     "include[0]", "stripe_unit"),
    ("backends: [tmpfs", "line", "yaml"),
]


@pytest.mark.parametrize("text,where,field", BAD, ids=[f"{i:02d}-{b[2]}" for i, b in enumerate(BAD)])
def test_bad_matrix_names_file_cell_field(tmp_path, text, where, field):
    path = write(tmp_path, text)
    with pytest.raises(XcbError) as exc:
        load_matrix(path, facts=FACTS)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: {where}")
    assert f": {field}:" in msg


def test_check_lists_every_error(tmp_path):
    text = "defaults: {files: 0, size_dist: normal}\nbackends: {tmpfs: {sise: 1G}}"
    lines = check_lines(write(tmp_path, text), facts=FACTS)
    assert len(lines) == 3 and all(line.count("\n") == 0 for line in lines)


def test_unknown_key_suggests_the_right_one(tmp_path):
    with pytest.raises(XcbError, match="did you mean 'stripe_unit'"):
        load_matrix(write(tmp_path, "backends: {rados: {layouts: [{stripe_units: 4M, stripe_count: 1, object_size: 4M}], pools: [rep1]}}"))


def test_cli_check_one_line_no_traceback(tmp_path):
    path = write(tmp_path, BAD[0][0])
    cp = subprocess.run([sys.executable, "-m", "xcbench", "matrix", "check", str(path)],
                        capture_output=True, text=True)
    assert cp.returncode == 2
    assert "Traceback" not in cp.stderr + cp.stdout
    assert cp.stderr.strip().count("\n") == 0 and "stripe_unit" in cp.stderr
    assert cp.stderr.startswith(f"xcbench: error: {path}: ")
    missing = subprocess.run([sys.executable, "-m", "xcbench", "matrix", "show", str(tmp_path / "nope.yaml")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.startswith(f"xcbench: error: {tmp_path / 'nope.yaml'}: cannot read")


def test_campaign_settings_reach_the_cell(tmp_path):
    text = "defaults: {campaign: {timeout: 30, retries: 2, client: gfal2}}\nbackends: {tmpfs: {}}"
    c = load_matrix(write(tmp_path, text)).cells[0]
    assert c.campaign == {"timeout": 30, "retries": 2, "client": "gfal2"}
    with pytest.raises(XcbError, match=r"defaults.campaign: retires: unknown key \(did you mean 'retries'"):
        load_matrix(write(tmp_path, "defaults: {campaign: {retires: 2}}\nbackends: {tmpfs: {}}"))
