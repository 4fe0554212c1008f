"""The self-test's confirmation cases: one per experiment kind of docs/experiments.md, each the
right name confirmed and at least one wrong name a run could plausibly have given not confirmed
(xcbench.selftest.confirming runs them; confirm_setups keeps each cause made).

| case | its cause, kept made | right (confirmed) | wrong (not confirmed) |
|---|---|---|---|
| confirm-gateway | the gateway held by its own ``cores`` quota (tmpfs) | gateway: twice the gateway's cores | host-cpu (CPU given: none to give, or the gateway's own quota still binds), storage-bandwidth (no storage); full: concurrency (twice the transfers) |
| confirm-origins | two origins behind a redirector, each under its own ``cores`` quota | gateway: one more origin | host-cpu |
| confirm-concurrency | one transfer of 1 MiB files in flight (tmpfs), the driver under a generous quota | concurrency: twice the transfers | client (twice the driver's CPU); gateway (not testable: one origin, no cores quota) |
| confirm-client | the driver under a CPU quota in every campaign, the gateway under a generous one | client: twice the driver's CPU | concurrency, gateway (twice the gateway's cores) |
| confirm-host-cpu | busy loops of the self-test's own beside the roles | host-cpu: CPU given to the roles | concurrency (twice the transfers); gateway (not testable: one origin, no cores quota) |
| confirm-gateway-ceph | EC and replicated XrdCeph cells whose gateways hold a small ``cores`` quota, a busy loop beside | gateway (twice the cores) | ec-overhead (EC against its twin), storage-bandwidth (storage out), host-cpu (CPU given) |
| confirm-osd-quota | the OSDs under a CPU quota the run did not make | storage-host-cpu (twice the OSDs' cores), storage-bandwidth (storage out: the storage side) | gateway (not testable: one origin), concurrency |
| confirm-device-bytes | the OSDs' device under a write-bytes throttle (and a generous IOs throttle and CPU quota) | storage-bandwidth (twice the device's write bytes) | storage-iops (twice the write IOs), storage-host-cpu (twice the OSDs' cores), gateway |
| confirm-device-ios | the OSDs' device under a write-IOs throttle (and a generous bytes throttle), 256 KiB files | storage-iops (twice the write IOs) | storage-bandwidth (twice the write bytes), gateway |
| confirm-ec | EC and its replicated twin under one device write-bytes throttle | ec-overhead (EC against its twin) | concurrency, gateway |
| confirm-network | the client host's link shaped well below the chain (emulated hosts) | network (twice the client link) | concurrency; a link with headroom: network |

Limits are derived, never chosen to make an answer come out: a binding one is FRACTION of what
the uncapped cell did (its rate, its pool op/s) or a stated share of the host's cores; a
generous one is at least what the role could use (the host's cores, a rate no device here
reaches). "every role under one quota below their use" and "half the client link" confirm
nothing (a proportion checked; not offered): the self-test's host-cpu intervention shows the
first (xcbench.selftest.intervene).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from xcbench.selftest import confirm_setups as setups
from xcbench.selftest import registry
from xcbench.selftest.confirming import Case, Test, run_case
from xcbench.selftest.scenarios import CELLS, host_cores, matrix_yaml

FRACTION = 0.5  # a binding limit: this share of what the uncapped cell did (as the capped scenarios)
GATEWAY_SHARE = 0.075  # a gateway's binding quota: 7.5 % of the host's cores (0.15 of 2: a tmpfs
# gateway uses ~1.3 uncapped here; twice it, 15 %, is still far below: the relief binds too)
DRIVER_SHARE = 0.075  # the driver's binding quota, the same share (it uses ~0.3-0.6 of 2 here)
OSD_SHARE = 0.05  # the OSDs' binding quota together: 0.1 of 2 cores, far below a write's need
GENEROUS = 0.75  # a quota that must not bind: three quarters of the host (a role here uses < half)
GENEROUS_IOPS = 1_000_000  # a write-IOs throttle no device here reaches (NVMe: ~10^5-10^6)
GENEROUS_BYTES_PER_S = 10 << 30  # a write-bytes throttle no device here reaches (10 GiB/s)


def _doc(cores: float | None = None, **defaults: Any):
    """A case's matrix: its cells (CellDef keys) at the case's levels, with ``defaults`` over the
    self-test's (file size, ...); ``cores``: each gateway's quota, this share of the host's cores."""
    def make(sizes: Any, name: str, _uncapped: Any, keys: tuple[str, ...]) -> dict[str, Any]:
        doc = matrix_yaml([CELLS[k] for k in keys], sizes, name)
        doc["defaults"].update(defaults)
        if cores is not None:
            doc["defaults"]["cores"] = [round(cores * host_cores(), 3)]
        return doc
    return make


def _least(uncapped: dict, key: str, figure: str) -> float:
    vals = [float(v["evidence"][figure]) for (k, _), v in uncapped.items()
            if k == key and isinstance((v.get("evidence") or {}).get(figure), (int, float))]
    if not vals:
        raise ValueError(f"the uncapped run measured no {figure} of {key}")
    return min(vals)


def _none(_cluster: Any, _tag: str, _uncapped: Any) -> Any:
    return setups.nothing()


def _load(processes: int):
    def make(_cluster: Any, _tag: str, _uncapped: Any) -> Any:
        return setups.cpu_load(processes)
    return make


@contextlib.contextmanager
def _osd_quota(cluster: Any, tag: str, _uncapped: Any) -> Iterator[setups.Made]:
    with setups.osd_limits(cluster, tag, cores=round(OSD_SHARE * host_cores(), 3)) as made:
        yield made


@contextlib.contextmanager
def _device_bytes(cluster: Any, tag: str, uncapped: dict) -> Iterator[setups.Made]:
    rate = max(1, round(FRACTION * _least(uncapped, "rados-rep", "rate")))
    with setups.osd_limits(cluster, tag, cores=round(GENEROUS * host_cores(), 3), write_bytes_per_s=rate,
                           write_iops=GENEROUS_IOPS) as made:
        yield made


@contextlib.contextmanager
def _device_ios(cluster: Any, tag: str, uncapped: dict) -> Iterator[setups.Made]:
    ios = max(1, round(FRACTION * _least(uncapped, "rados-small", "pool_write_ops")))
    with setups.osd_limits(cluster, tag, write_bytes_per_s=GENEROUS_BYTES_PER_S, write_iops=ios) as made:
        yield made


@contextlib.contextmanager
def _ec_bytes(cluster: Any, tag: str, uncapped: dict) -> Iterator[setups.Made]:
    rate = max(1, round(FRACTION * min(_least(uncapped, k, "rate") for k in ("rados-ec", "rados-rep"))))
    with setups.osd_limits(cluster, tag, write_bytes_per_s=rate) as made:
        yield made


def _n(share: float):
    return lambda n: round(share * n, 3)


CASES: tuple[Case, ...] = (
    Case("confirm-gateway", "the gateway held by its own cores quota", ("tmpfs",), lambda n: n,
         _doc(GATEWAY_SHARE),
         _none, (Test("gateway", True, quick=True), Test("host-cpu", False, quick=True),
                 Test("storage-bandwidth", False, quick=True), Test("concurrency", False)), quick=True),
    # one more origin from two (from one it would add a redirector and its lookup wait a new file,
    # ~1 s: experiment_choice says so): 64 MiB files and 8 transfers a core keep the origins busy
    # through the redirector's wait
    Case("confirm-origins", "two origins behind a redirector, each held by its own cores quota",
         ("tmpfs",), lambda n: 8 * n, _doc(GATEWAY_SHARE, origins=[2], file_size="64M", files=24), _none,
         (Test("gateway", True, "one more origin"), Test("host-cpu", False))),
    Case("confirm-concurrency", "one transfer of 1 MiB files in flight, the driver under a generous quota",
         ("tmpfs",), lambda n: 1, _doc(file_size="1M", files=64), _none,
         (Test("concurrency", True), Test("gateway", False), Test("client", False)),
         driver=_n(GENEROUS), higher=lambda n: (4 * n,)),
    Case("confirm-client", "the driver under a CPU quota in every campaign, the gateway under a generous one",
         ("tmpfs",), lambda n: 2 * n,
         _doc(GENEROUS),
         _none, (Test("client", True), Test("concurrency", False), Test("gateway", False)),
         driver=_n(DRIVER_SHARE)),
    Case("confirm-host-cpu", "busy loops of the self-test's own, one per core, beside the roles",
         ("tmpfs",), lambda n: 2 * n, _doc(), lambda c, t, u: setups.cpu_load(host_cores()),
         (Test("host-cpu", True), Test("concurrency", False), Test("gateway", False))),
    Case("confirm-gateway-ceph", "EC and replicated XrdCeph gateways under a small cores quota, a busy loop beside",
         ("rados-ec", "rados-rep"), lambda n: n,
         _doc(GATEWAY_SHARE),
         _load(1), (Test("gateway", True), Test("ec-overhead", False), Test("storage-bandwidth", False),
                    Test("host-cpu", False))),
    Case("confirm-osd-quota", "the OSDs under a CPU quota the run did not make", ("rados-rep",), lambda n: n,
         _doc(), _osd_quota, (Test("storage-host-cpu", True), Test("storage-bandwidth", True),
                              Test("concurrency", False), Test("gateway", False)), requires="osd"),
    Case("confirm-device-bytes", "the OSDs' device under a write-bytes throttle (a generous IOs throttle "
         "and CPU quota beside)", ("rados-rep",), lambda n: n, _doc(), _device_bytes,
         (Test("storage-bandwidth", True), Test("storage-iops", False), Test("storage-host-cpu", False),
          Test("gateway", False)), uncapped=("rados-rep",), requires="blkio"),
    Case("confirm-device-ios", "the OSDs' device under a write-IOs throttle (a generous bytes throttle "
         "beside), 256 KiB files", ("rados-small",), lambda n: n, _doc(), _device_ios,
         (Test("storage-iops", True), Test("storage-bandwidth", False), Test("gateway", False)),
         uncapped=("rados-small",), requires="blkio"),
    Case("confirm-ec", "EC and its replicated twin under one device write-bytes throttle", ("rados-ec", "rados-rep"),
         lambda n: n, _doc(), _ec_bytes,
         (Test("ec-overhead", True), Test("concurrency", False), Test("gateway", False)),
         uncapped=("rados-ec", "rados-rep"), requires="blkio"),
)


def register_cases() -> None:
    """Each case a scenario of its own runs (``own_run``) on the session's cluster."""
    for case in CASES:
        registry.register(registry.Scenario(case.name, case.what, ("confirmed",), (), own_run=_own(case),
                                            uses_cluster=True))


def _own(case: Case):
    def own_run(cluster: Any, **kw: Any) -> dict[str, Any]:
        return run_case(case, cluster, **kw)
    return own_run


register_cases()
