"""A handle on a Ceph cluster: the embedded mini cluster or one given by --ceph-conf.

This is the one place that finds the ceph.conf (flags, then CEPH_CONF / CEPH_ARGS, then the
embedded cluster's state dir). Interface (fields may be added, not renamed):

    Cluster.conf          Path of ceph.conf
    Cluster.client_id     the toolkit's client id ("admin" on the mini cluster unless set)
    Cluster.keyring       Path | None
    Cluster.gateway_id    client id XrdCeph gateways use (its [client.<id>] section names the keyring)
    Cluster.fs_name       CephFS file system xcbench uses (None if none)
    Cluster.fs_client_id  client id for ceph-fuse / libcephfs
    Cluster.pools         {"replicated": "xcb-rep1", "erasure": "xcb-ec2-1", ...}
    Cluster.embedded      True for the mini cluster
    Cluster.rados()       a connected rados.Rados (cached)
    Cluster.mon_command(prefix, **args) -> parsed JSON
    Cluster.ceph_cli(*args) -> list[str]  the `ceph` command line for this cluster
    Cluster.osd_max_object_size(), Cluster.num_osds(), Cluster.num_hosts()

    add_ceph_args(parser)         --ceph-conf --ceph-id --keyring --state-dir
    cluster_from_args(args)       -> Cluster (one-line XcbError if conf missing/garbage)
"""
