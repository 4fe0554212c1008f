"""What a benchmark gateway serves, fuzzed over the path and query forms XrdCeph reads
(``[[user@]pool[,nbStripes[,stripeUnit[,objectSize]]]:]name`` and ``?cephUserId=&cephPool=...``):
whatever a request the gateway admits says, in its name or its query, XrdCeph opens an object
named inside the cell's object prefix, of the gateway's pool, with the cell's layout (the first
colon is always the selector's). A prefix without the selector (the cell's objects alone) fails
the same property: that is how another local user read another pool. The gateway itself is
attacked in tests/integration/gateway/test_gateway_namespace.py."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from xcbench.backends.base import Target
from xcbench.ceph.conf import gateway_sections, parse_conf, render_conf
from xcbench.gateway.authz import (
    CephFile,
    admitted,
    authdb_text,
    name_problem,
    namespace,
    served_problem,
    xrdceph_file,
)

GW, POOL = "xcb-gw", "xcb-rep1"
OSS = {"ceph_user": GW, "pool": POOL, "nb_stripes": 4, "stripe_unit": 1 << 20, "object_size": 4 << 20}
SEL = f"/{GW}@{POOL},4,1048576,4194304:"
OBJECTS = "/xcb-rados/c1-a1b2c3/"
PREFIX = SEL + OBJECTS
LAYOUT = ("4", "1048576", "4194304")
# the characters XrdCeph, XRootD and URLs give a meaning, and some plain ones
ALPHABET = st.sampled_from(list("/:@,?&=.%#\\ ab01") + ["cephPool", "cephUserId", "..", "victim"])
WORDS = st.lists(ALPHABET, max_size=14).map("".join)
QUERY = st.lists(st.tuples(st.sampled_from(["cephPool", "cephUserId", "cephNbStripes", "x", ""]),
                           st.sampled_from(["=", ""]), WORDS), max_size=4).map(
    lambda kv: "&".join(k + e + v for k, e, v in kv))


@pytest.mark.parametrize("path, query, want", [
    ("/a", "", CephFile(GW, POOL, "/a")),
    ("/a", "cephPool=p&cephUserId=u", CephFile("u", "p", "/a")),
    ("p:/a", "cephPool=q", CephFile(GW, "p", "/a")),
    ("u@p:/a", "", CephFile("u", "p", "/a")),
    ("u@:/a", "cephPool=q", CephFile("u", "q", "/a")),
    ("u@p,4,1,2:/a", "cephNbStripes=9", CephFile("u", "p", "/a", ("4", "1", "2"))),
    ("u@p,4:/a", "cephStripeUnit=9", CephFile("u", "p", "/a", ("4", "9", ""))),
    ("u@p:/a", "cephNbStripes=9", CephFile("u", "p", "/a", ("9", "", ""))),
    ("/a", "cephObjectSize=9", CephFile(GW, POOL, "/a", ("", "", "9"))),
    (":/a", "cephPool=q", CephFile(GW, "q", "/a")),
    ("/p:v", "", CephFile(GW, "/p", "v")),          # the leading slash stays in the pool
    ("/x/u@p:v:w", "", CephFile("/x/u", "p", "v:w")),  # the first colon decides
])
def test_xrdceph_reads_a_name_as_its_source_says(path, query, want):
    assert xrdceph_file(path, query, GW, POOL) == want


@given(rest=WORDS, query=QUERY, head=st.sampled_from(["", "/", OBJECTS, SEL, PREFIX[:-1], PREFIX]))
@example(rest="victim", query="cephPool=victim", head="/")
@example(rest="x@victim:victim", query="", head=PREFIX)
@example(rest="@:victim", query="cephPool=victim&cephUserId=admin", head=PREFIX)
@example(rest="f", query="cephPool=victim&cephNbStripes=1&cephStripeUnit=1", head=PREFIX)
@example(rest="../../victim", query="", head=PREFIX)
def test_what_the_gateway_admits_is_an_object_of_the_cell(rest, query, head):
    path = head + rest
    if not admitted(PREFIX, path):
        return
    f = xrdceph_file(path, query, GW, POOL)
    assert (f.pool, f.layout, f.name[:len(OBJECTS)]) == (POOL, LAYOUT, OBJECTS), f


def test_a_prefix_of_the_objects_alone_lets_a_name_pick_a_pool():
    """What the selector is for: granted /xcb-rados/<cell>/ alone, a name picks any pool."""
    path = OBJECTS + "x@victim:victim"
    assert admitted(OBJECTS, path) and xrdceph_file(path, "", GW, POOL).pool == "victim"


@given(rest=WORDS)
def test_a_name_xcbench_sends_picks_nothing_but_its_object(rest):
    name = PREFIX + rest
    if served_problem(PREFIX, name) is not None:
        return
    assert admitted(PREFIX, name) and name_problem("/" + rest) is None
    assert xrdceph_file(name, "", GW, POOL) == CephFile("/" + GW, POOL, OBJECTS + rest, LAYOUT)
    for base in ("root://localhost:1094/", "http://localhost:1094"):
        u = urlsplit(base + name)
        assert (u.query, u.fragment) == ("", "") and u.path.endswith(name)


def test_the_namespace_is_the_selector_of_the_gateways_own_parameters():
    t = Target(cell_id="c1", backend="rados", oss=dict(OSS), info={"name_prefix": PREFIX})
    assert namespace(t) == PREFIX
    assert namespace(Target(cell_id="c1", backend="tmpfs", path="/x")) == "/"
    for wrong in (OBJECTS, SEL.replace(POOL, "victim") + OBJECTS, SEL.replace(",4,", ",1,") + OBJECTS):
        t.info["name_prefix"] = wrong
        with pytest.raises(Exception, match="name_prefix"):
            namespace(t)


@pytest.mark.parametrize("name", ["/a:b", "/u@p", "/a,1", "/a?cephPool=p", "/a#b", "/a%3Ab",
                                  "/a b", "/a\\b", "/x/../y", "/x/./y", "a", "", "/a\nb"])
def test_names_with_a_selector_are_refused(name):
    assert name_problem(name) is not None


def test_the_authdb_grants_the_namespace_only():
    assert authdb_text(PREFIX).splitlines()[-1] == f"u * {PREFIX} a"
    assert authdb_text("/", "1a2b3c4d.0").splitlines()[-1] == "u 1a2b3c4d.0 /.. -a / a"
    assert authdb_text(PREFIX, "1a2b3c4d.0", lookup=True).splitlines()[-2:] == [
        f"u 1a2b3c4d.0 {PREFIX} a", f"u * {PREFIX} l"]
    for bad in (("/a b/",), ("x/",), (PREFIX, "u *")):
        with pytest.raises(Exception, match="authdb"):
            authdb_text(*bad)


def test_every_ceph_user_of_the_gateway_conf_has_only_the_gateway_key():
    """cephUserId= or user@ in a name picks another Ceph user: its keyring is the gateway's copy,
    which holds no key of it, whatever the cluster conf's [global] keyring said."""
    glob = {"fsid": "x", "mon_host": "127.0.0.1", "keyring": "/etc/ceph/ceph.$name.keyring",
            "key": "AQ==", "keyfile": "/k"}
    text = render_conf(gateway_sections(glob, "xcb-gw", {"keyring": "/run/k/gw.keyring",
                                                         "log file": "/l"}))
    conf = parse_conf(text)
    assert not {"keyring", "key", "keyfile"} & set(conf["global"])
    assert conf["client"] == {"keyring": "/run/k/gw.keyring"}
    assert conf["client.xcb-gw"]["keyring"] == "/run/k/gw.keyring"
