"""Everything about Ceph: the cluster handle (cluster), the embedded mini cluster (mini, and its
bootstrap steps in bootstrap), ceph.conf handling (conf), pools and EC profiles (pools), mounting
CephFS and the mount table (mounts), file layouts and striping (layout), replication / erasure
coding (protection).

Imports go one way: mini -> bootstrap -> cluster -> pools, mounts, conf -> protection, layout.
"""
