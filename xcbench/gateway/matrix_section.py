"""The gateway's part of a matrix (xcbench.matrix.sections): the ``gateway: ceph:`` directives
(a matrix is data: only known ceph.* names with values of their type reach the config)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xcbench.gateway.config import ceph_problems
from xcbench.matrix import sections


def gateway_ceph(section: Mapping[str, Any]) -> list[tuple[str, str]]:
    return ceph_problems(section["ceph"]) if "ceph" in section else []


sections.register("gateway.ceph", gateway_ceph)
