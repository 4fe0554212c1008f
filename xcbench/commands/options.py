"""Command-line options shared by several commands."""

from __future__ import annotations


def add_ceph_args(parser) -> None:
    g = parser.add_argument_group("Ceph cluster (default: the embedded mini cluster)")
    # spelled as the ceph CLI spells them (-c/--conf, --id, -k/--keyring); the older
    # --ceph-conf/--ceph-id stay as aliases
    g.add_argument("-c", "--conf", "--ceph-conf", dest="ceph_conf", metavar="PATH",
                   help="ceph.conf of an existing cluster (default: $CEPH_CONF, -c in $CEPH_ARGS, "
                        "else the embedded cluster's); alias --ceph-conf")
    g.add_argument("--id", "--ceph-id", dest="ceph_id", metavar="NAME",
                   help="client id (without 'client.'; default admin); alias --ceph-id")
    g.add_argument("-k", "--keyring", dest="keyring", metavar="PATH", help="keyring of that client")
    g.add_argument("--fs", metavar="NAME", help="CephFS file system to use (default: the only one)")
    g.add_argument("--gateway-id", metavar="NAME",
                   help="the XrdCeph gateways' own key (default xcb-gw; see `xcbench cluster caps`)")
    g.add_argument("--gateway-keyring", metavar="PATH", help="keyring of that key")
    g.add_argument("--state-dir", metavar="DIR",
                   help="embedded cluster state (default: <state home>/cluster; see README "
                        "'Running on a shared host')")
