"""Everything about Ceph: the cluster handle (cluster), the embedded mini cluster (mini), ceph.conf
handling (conf), pools and EC profiles (pools), ceph-fuse mounts (fuse)."""
