"""What the pool and mount code needs of a cluster handle, as a Protocol: ceph.cluster's Cluster
imports pools and mounts, so they name this instead of it (no circle; mypy checks that Cluster
has every member at each call)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from xcbench.ceph.keys import KeyDir


class ClusterHandle(Protocol):
    conf: Path
    ceph_id: str
    gateway_id: str
    fs_name: str | None
    fs_ceph_id: str
    fs_keyring: Path | None
    pools: dict[str, str]
    embedded: bool
    state_dir: Path | None
    _keys: KeyDir  # the handle's private key copies (a kernel mount's secret file goes there)

    def mon_command(self, prefix: str, *, inbuf: bytes = b"", **args: Any) -> Any: ...

    def pool_names(self) -> list[str]: ...

    def num_osds(self) -> int: ...

    def num_hosts(self) -> int: ...
