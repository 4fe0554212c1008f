"""Command-line options shared by several commands."""

from __future__ import annotations

import argparse
import re

from xcbench.errors import XcbError

# a Ceph entity name as the ceph CLI takes it with -n/--name: TYPE.ID
_ENTITY = re.compile(r"^(?P<type>[a-z]+)\.(?P<id>[A-Za-z0-9_.@-]+)$")


def add_ceph_args(parser) -> None:
    g = parser.add_argument_group("Ceph cluster (default: the embedded mini cluster)")
    # spelled as the ceph CLI spells them (-c/--conf, --id, -n/--name, -k/--keyring); the older
    # --ceph-conf/--ceph-id stay as aliases
    g.add_argument("-c", "--conf", "--ceph-conf", dest="ceph_conf", metavar="PATH",
                   help="ceph.conf of an existing cluster (default: $CEPH_CONF, -c in $CEPH_ARGS, "
                        "else the embedded cluster's); alias --ceph-conf")
    g.add_argument("--id", "--ceph-id", dest="ceph_id", metavar="NAME",
                   help="client id (without 'client.'; default admin); alias --ceph-id")
    g.add_argument("-n", "--name", dest="ceph_name", metavar="client.ID",
                   help="the client as the ceph CLI names it, e.g. client.xcb (= --id xcb); "
                        "the run's directory name is --run-name")
    g.add_argument("-k", "--keyring", dest="keyring", metavar="PATH", help="keyring of that client")
    g.add_argument("--fs", metavar="NAME", help="CephFS file system to use (default: the only one)")
    g.add_argument("--gateway-id", metavar="NAME",
                   help="the XrdCeph gateways' own key (default xcb-gw; see `xcbench cluster caps`)")
    g.add_argument("--gateway-keyring", metavar="PATH", help="keyring of that key")
    g.add_argument("--state-dir", metavar="DIR",
                   help="embedded cluster state (default: <state home>/cluster; see "
                        "docs/security.md)")


def add_fts_endpoint_arg(parser) -> None:
    parser.add_argument("--fts-endpoint", metavar="URL", action="append", default=[],
                        help="an FTS3 endpoint of the matrix (campaign.fts.endpoint) that may "
                             "receive its credential (repeatable): a matrix alone sends no secret "
                             "anywhere")


def add_run_name_arg(parser) -> None:
    parser.add_argument("--run-name", metavar="NAME",
                        help="the run's directory name in the store (default: a UTC timestamp)")


def add_no_ceph_name(parser) -> None:
    """A command that takes no Ceph client still answers ``-n/--name`` (hidden), with the line
    that says what it is in Ceph and where the run's name went."""
    parser.add_argument("-n", "--name", dest="ceph_name", help=argparse.SUPPRESS)


def apply_ceph_name(args) -> None:
    """``-n/--name client.ID`` into ``args.ceph_id``; XcbError (one line) for anything else, so
    ``--name myrun`` (the run's name before it was --run-name) never becomes a Ceph user."""
    value = getattr(args, "ceph_name", None)
    if value is None:
        return
    cmd = f"{args.command}" + (f" {args.action}" if isinstance(getattr(args, "action", None), str)
                               else "")
    m = _ENTITY.match(value)
    if "ceph_conf" not in vars(args):
        raise XcbError(f"{cmd}: -n/--name {value!r}: -n/--name is a Ceph client name "
                       f"(client.ID, as in `ceph -n client.admin`) and `xcbench {cmd}` takes none; "
                       f"the run's directory name is --run-name")
    if m is None:
        raise XcbError(f"{cmd}: -n/--name {value!r} is not a Ceph name: give client.ID as the "
                       f"ceph CLI does (e.g. -n client.xcb); the run's directory name is --run-name")
    if m["type"] != "client":
        raise XcbError(f"{cmd}: -n/--name {value!r}: xcbench reads and writes as a Ceph client; "
                       f"give client.ID (e.g. -n client.xcb)")
    given = getattr(args, "ceph_id", None)
    if given is not None and given != m["id"]:
        raise XcbError(f"{cmd}: -n/--name {value} and --id {given} name two clients; give one")
    args.ceph_id = m["id"]
