"""A rados cell's gateway serves the cell's object prefix and nothing else, attacked as another
local user (``nobody``) who found its port: by each of XrdCeph's pool and user selectors (in the
name: ``pool:``, ``user@pool:``, ``,stripes``; in the query: ``cephPool=``, ``cephUserId=``;
percent-encoded over HTTP; a ``/../`` step), over root:// and HTTP, stat, read and remove of an
object of a pool xcbench did not make (and of one outside the prefix in the cell's own pool)
find nothing: both objects survive, their bytes in no answer. The gateway's Ceph key is given
rwx on the victim's pool for the test, so what stops the attack is the gateway, not the key's
caps. (The name rules themselves are fuzzed in tests/unit/security/test_gateway_namespace.py.)"""

from __future__ import annotations

import secrets
import subprocess

import pytest

from tests.support.gwcheck import xrootd_workdir
from xcbench.backends.rados import BACKEND
from xcbench.cell import Cell, Layout, PoolSpec
from xcbench.ceph.pools import grant_gateway, may_grant
from xcbench.gateway import start_gateway
from xcbench.system.proc import ProcessSet

pytestmark = pytest.mark.integration
NOBODY = 65534
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/", "XRD_CPUSEPGWRTRD": "0"}


def as_nobody(argv: list[str]) -> str:
    r = subprocess.run(argv, user=NOBODY, group=NOBODY, extra_groups=[], env=ENV, cwd="/",
                       capture_output=True, timeout=60)
    return (r.stdout + r.stderr).decode(errors="replace")


def rados_cli(cluster, *args: str) -> list[str]:
    return ["rados", *cluster.ceph_cli(*args)[1:]]


@pytest.fixture
def victim(ceph_cluster, tmp_path):
    """(pool, object, secret, file): a striped object of a pool xcbench did not make."""
    if not may_grant(ceph_cluster):
        pytest.skip("widening the gateway key's caps needs the embedded cluster's admin")
    pool, secret = f"victim-{secrets.token_hex(3)}", secrets.token_hex(16)
    data = tmp_path / "victim"
    data.write_text(secret)
    ceph_cluster.mon_command("osd pool create", pool=pool, pg_num=8)
    try:
        put(ceph_cluster, pool, "victim", data)
        yield pool, "victim", secret, data
    finally:
        ceph_cluster.mon_command("osd pool delete", pool=pool, pool2=pool,
                                 yes_i_really_really_mean_it=True)
        grant_gateway(ceph_cluster)  # the gateway key's caps as xcbench sets them


def put(cluster, pool: str, name: str, data) -> None:
    subprocess.run(rados_cli(cluster, "--striper", "-p", pool, "put", name, str(data)),
                   check=True, capture_output=True, timeout=60)


def widen_caps(cluster, pool: str) -> None:
    """The gateway key may do anything in ``pool`` too: the caps stop nothing."""
    caps = cluster.mon_command("auth get", entity=f"client.{cluster.gateway_id}")[0]["caps"]
    cluster.mon_command("auth caps", entity=f"client.{cluster.gateway_id}",
                        caps=["mon", caps["mon"], "osd", f"{caps['osd']}, allow rwx pool={pool}"])


def stored(cluster, pool: str, name: str) -> str:
    r = subprocess.run(rados_cli(cluster, "--striper", "-p", pool, "get", name, "-"),
                       capture_output=True, timeout=60)
    return r.stdout.decode(errors="replace")


def test_nobody_reaches_no_object_outside_the_cells_prefix(ceph_cluster, victim):
    pool, obj, secret, data = victim
    procs = ProcessSet()
    with xrootd_workdir("xcb-test-namespace-") as wd:
        backend = BACKEND(ceph_cluster, wd, procs)
        target = backend.prepare(Cell(id="ns", label="namespace", backend="rados",
                                      layout=Layout(4 << 20, 1, 4 << 20),
                                      pool=PoolSpec("replicated", size=1)))
        own = f"/victim-{pool}"  # in the cell's own pool, outside its prefix
        try:
            put(ceph_cluster, target.pool, own, data)
            widen_caps(ceph_cluster, pool)
            with start_gateway(target, workdir=wd / "gw", cluster=ceph_cluster, procs=procs) as gw:
                attack(gw, target.info["name_prefix"], pool, obj, own, secret, ceph_cluster)
            assert stored(ceph_cluster, target.pool, own) == secret
        finally:
            subprocess.run(rados_cli(ceph_cluster, "--striper", "-p", target.pool, "rm", own),
                           capture_output=True, timeout=60)
            backend.cleanup(target)
            procs.stop_all()
    assert stored(ceph_cluster, pool, obj) == secret


def attack(gw, prefix: str, pool: str, obj: str, own: str, secret: str, cluster) -> None:
    objects_at = prefix.split(":", 1)[-1]  # the cell's objects, without XrdCeph's selector
    other_pool = f"/{cluster.gateway_id}@{pool}" + prefix[prefix.index(","):] if "," in prefix else \
        f"/{cluster.gateway_id}@{pool}:{prefix}"
    gid = cluster.gateway_id
    names = [own, f"/{obj}?cephPool={pool}", f"/{obj}?cephUserId=admin&cephPool={pool}",
             f"/{pool}:{obj}", f"/{gid}@{pool}:{obj}", f"/{gid}@{pool},1,4194304,4194304:{obj}",
             f"{objects_at}x@{pool}:{obj}", f"{other_pool}x", f"{prefix}x@{pool}:{obj}",
             f"{prefix}x,1,4194304,4194304:{obj}?cephPool={pool}", f"{prefix}@:{obj}?cephPool={pool}",
             f"{prefix}x?cephPool={pool}&cephUserId=admin", f"{prefix}../../{obj}?cephPool={pool}",
             f"{prefix}../..{own}"]
    http = [n.replace(":", "%3A").replace("@", "%40") for n in names if ":" in n or "@" in n]
    # the attacker does reach the gateway: what is inside the prefix is open to it
    put = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--data-binary",
                          "hello", "-X", "PUT", f"{gw.http_url}{prefix}nobody"], user=NOBODY,
                         group=NOBODY, extra_groups=[], env=ENV, capture_output=True, text=True,
                         timeout=60)
    assert put.stdout in ("200", "201"), put
    assert as_nobody(["curl", "-s", f"{gw.http_url}{prefix}nobody"]) == "hello"
    said: list[tuple[str, str]] = []
    for n in names:
        said += [(n, as_nobody(["xrdfs", gw.root_url, "stat", n])),
                 (n, as_nobody(["xrdcp", "-f", f"{gw.root_url}/{n}", "-"]))]
    for n in names + http:
        said += [(n, as_nobody(["curl", "-s", "-I", f"{gw.http_url}{n}"])),
                 (n, as_nobody(["curl", "-s", f"{gw.http_url}{n}"]))]
    # the same names once more, now to remove
    for n in names:
        said.append((n, as_nobody(["xrdfs", gw.root_url, "rm", n])))
    for n in names + http:
        said.append((n, as_nobody(["curl", "-s", "-X", "DELETE", f"{gw.http_url}{n}"])))
    assert not [n for n, out in said if secret in out]
    assert stored(cluster, pool, obj) == secret
    # writes with every selector: whatever lands, lands in the cell's own pool and prefix
    for n in names:
        as_nobody(["curl", "-s", "-X", "PUT", "--data-binary", "x", f"{gw.http_url}{n}"])
    listed = subprocess.run(rados_cli(cluster, "-p", pool, "ls"), capture_output=True, text=True,
                            timeout=60, check=True).stdout.split()
    assert all(o.startswith(obj + ".") for o in listed), listed


def test_nobody_sees_nothing_above_a_posix_exports_root(tmp_path):
    """A tmpfs cell's gateway serves its own directory: XRootD 5.5 refuses ``/../`` but not a
    last ``/..``, which listed the directory above ``oss.localroot``; the authdb denies it."""
    from xcbench.backends.tmpfs import BACKEND as TMPFS
    procs = ProcessSet()
    with xrootd_workdir("xcb-test-namespace-") as wd:
        (wd / "neighbour-secret-name").mkdir()
        backend = TMPFS(None, wd, procs)
        target = backend.prepare(Cell(id="nsp", label="x", backend="tmpfs", tmpfs_size=16 << 20))
        try:
            with start_gateway(target, workdir=wd / "gw", procs=procs) as gw:
                said = [as_nobody(["xrdfs", gw.root_url, op, p]) for op in ("ls", "stat")
                        for p in ("/..", "/x/../..", "/../..")]
                said.append(as_nobody(["curl", "-s", "--path-as-is", f"{gw.http_url}/.."]))
                assert not [s for s in said if "neighbour-secret-name" in s or "Path:" in s], said
                assert as_nobody(["xrdfs", gw.root_url, "ls", "/"]) == ""  # the cell's own: open
        finally:
            backend.cleanup(target)
            procs.stop_all()
