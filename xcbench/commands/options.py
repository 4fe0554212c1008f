"""Command-line options shared by several commands."""

from __future__ import annotations


def add_ceph_args(parser) -> None:
    g = parser.add_argument_group("Ceph cluster (default: the embedded mini cluster)")
    g.add_argument("--ceph-conf", metavar="PATH",
                   help="ceph.conf of an existing cluster (default: $CEPH_CONF, -c in $CEPH_ARGS, "
                        "else the embedded cluster's)")
    g.add_argument("--ceph-id", metavar="NAME", help="client id (without 'client.'; default admin)")
    g.add_argument("--keyring", metavar="PATH", help="keyring of that client")
    g.add_argument("--fs", metavar="NAME", help="CephFS file system to use (default: the only one)")
    g.add_argument("--gateway-id", metavar="NAME",
                   help="the XrdCeph gateways' own key (default xcb-gw; see `xcbench cluster caps`)")
    g.add_argument("--gateway-keyring", metavar="PATH", help="keyring of that key")
    g.add_argument("--state-dir", metavar="DIR",
                   help="embedded cluster state (default: $XCBENCH_HOME/cluster or ./.xcbench/cluster)")
