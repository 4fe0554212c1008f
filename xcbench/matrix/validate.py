"""Matrix validation against the cluster: object size limit, pool width vs failure domains."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from xcbench.cell import Cell, PoolSpec
from xcbench.matrix.schema import _Errors


class ClusterView(Protocol):
    """What validation reads of a cluster (xcbench.ceph.cluster.Cluster has it): the matrix
    sits below the Ceph package and names only these."""

    def osd_max_object_size(self) -> int: ...
    def num_osds(self) -> int: ...
    def num_hosts(self) -> int: ...


@dataclass(frozen=True)
class ClusterFacts:
    """What validation needs to know of the target cluster."""
    osd_max_object_size: int = 128 << 20
    num_osds: int = 3
    num_hosts: int = 1
    failure_domain: str = "osd"

    @classmethod
    def of(cls, cluster: ClusterView) -> ClusterFacts:
        return cls(cluster.osd_max_object_size(), cluster.num_osds(), cluster.num_hosts())


def scale_ec_pool(pool: PoolSpec, facts: ClusterFacts) -> PoolSpec:
    """Map k+m onto what fits the cluster's failure domains, keeping m >= 1 and k/m roughly."""
    domains = facts.num_osds if facts.failure_domain == "osd" else facts.num_hosts
    if pool.kind != "erasure" or pool.k + pool.m <= domains or domains < 2:
        return pool
    m = max(1, round(pool.m * domains / (pool.k + pool.m)))
    k = max(1, domains - m)
    return PoolSpec("erasure", k=k, m=m)


def validate(cells: list[Cell], facts: ClusterFacts, errors: _Errors) -> None:
    """Rules that depend on the cluster: object size limit, pool width vs failure domains."""
    domains = facts.num_osds if facts.failure_domain == "osd" else facts.num_hosts
    unit = "OSDs" if facts.failure_domain == "osd" else "hosts"
    for c in cells:
        where = f"cell {c.label} ({c.id})"
        for fieldname, why in c.layout.problems(facts.osd_max_object_size) if c.layout else ():
            errors.add(where, fieldname, why)
        if c.pool and c.pool.kind == "erasure" and c.pool.k + c.pool.m > domains:
            errors.add(where, "pool", f"EC {c.pool.label} needs {c.pool.k + c.pool.m} {unit} "
                       f"(failure domain {facts.failure_domain}), the cluster has {domains}; "
                       f"use --scale-ec to map it onto what fits")
        if c.pool and c.pool.kind == "replicated" and c.pool.size > domains:
            errors.add(where, "pool", f"replicated size {c.pool.size} needs {c.pool.size} {unit}, "
                       f"the cluster has {domains}")
