"""Block-I/O write throttles (cgroup v1 ``blkio``) that xcbench creates, records and removes.

    with IoGroups(None, run="r1") as groups:
        dev = device_of(Path("/var/.../osd.0/block"))      # "254:0", the whole disk
        g = groups.create("osd", dev, write_iops=200)     # /sys/fs/cgroup/blkio/xcb-r1-osd
        g.add(pid)                                        # every thread of the process
        ios, nbytes = g.written()                         # the group's writes to dev so far

The kernel throttles the bios the group's processes issue to the device: direct I/O is held
(BlueStore writes its block file and its RocksDB with O_DIRECT); buffered writeback is not
charged to the group in v1. A group is recorded in xcbench.system.cgroups' registry before it is
made, so a sweep after a kill -9 removes it like a CPU group. Where there is no blkio v1
hierarchy, or the path is on no block device (tmpfs, overlay), :func:`why_not` says so.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from xcbench.system.cgroups import NAME_RE, CgroupError, GroupSet, remove_group
from xcbench.system.limits import v1_mount

SYS_DEV = Path("/sys/dev/block")


def mount() -> Path | None:
    m = v1_mount("blkio")
    return m if m is not None and (m / "cgroup.procs").exists() else None


def device_of(path: Path) -> str:
    """'MAJ:MIN' of the whole disk ``path`` is on, or CgroupError saying why there is none."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    sysd = SYS_DEV / dev
    if not sysd.exists():
        raise CgroupError(f"{path} is on no block device ({dev}: a virtual file system): "
                          "its writes cannot be throttled per device")
    if (sysd / "partition").exists():  # throttle rules go on the whole disk
        dev = (sysd.resolve().parent / "dev").read_text().strip()
    return dev


def why_not(path: Path | None = None) -> str | None:
    """Why no write throttle can be put on ``path``'s device here (None: it can)."""
    m = mount()
    if m is None:
        return "no cgroup v1 blkio hierarchy on this host"
    if not os.access(m, os.W_OK):
        return f"{m} is not writable (not root?)"
    if not (m / "blkio.throttle.write_iops_device").exists():
        return "the blkio controller has no throttle files (kernel without CONFIG_BLK_DEV_THROTTLING)"
    if path is not None:
        try:
            device_of(path)
        except (CgroupError, OSError) as e:
            return str(e)
    return None


class IoGroup:
    """One throttled group: write bytes/s and/or write IOs/s on one device."""

    def __init__(self, base: Path, name: str, dev: str, write_bytes_per_s: int | None = None,
                 write_iops: int | None = None):
        if not NAME_RE.match(name):
            raise CgroupError(f"cgroup name {name!r}: must be xcb-<letters, digits, _.->")
        if not re.fullmatch(r"\d+:\d+", dev):
            raise CgroupError(f"blkio: device {dev!r} is not MAJ:MIN")
        for what, v in (("write_bytes_per_s", write_bytes_per_s), ("write_iops", write_iops)):
            if v is not None and not v >= 1:
                raise CgroupError(f"blkio {name}: {what} must be >= 1, got {v}")
        self.name, self.dev, self.path = name, dev, base / name
        self.write_bytes_per_s, self.write_iops = write_bytes_per_s, write_iops

    def make(self) -> IoGroup:
        self.path.mkdir(exist_ok=True)
        if self.write_bytes_per_s:
            (self.path / "blkio.throttle.write_bps_device").write_text(f"{self.dev} {int(self.write_bytes_per_s)}")
        if self.write_iops:
            (self.path / "blkio.throttle.write_iops_device").write_text(f"{self.dev} {int(self.write_iops)}")
        return self

    def add(self, pid: int) -> None:
        """Move a process and each of its threads (v1 moves threads one by one)."""
        (self.path / "cgroup.procs").write_text(str(pid))
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                (self.path / "tasks").write_text(t)
            except ProcessLookupError:
                pass

    def written(self) -> tuple[int, int]:
        """(write IOs, write bytes) the group issued to its device so far."""
        def one(f: str) -> int:
            for line in (self.path / f).read_text().splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[0] == self.dev and parts[1] == "Write":
                    return int(parts[2])
            return 0
        return one("blkio.throttle.io_serviced"), one("blkio.throttle.io_service_bytes")

    def remove(self) -> bool:
        return remove_group(self.path)


class IoGroups(GroupSet):
    """The blkio groups of one run: ``xcb-<run>-<role>``; all removed on exit and by a sweep."""

    def create(self, role: str, dev: str, write_bytes_per_s: int | None = None,
               write_iops: int | None = None) -> IoGroup:
        base = mount()
        why = why_not()
        if base is None or why:
            raise CgroupError(f"blkio: {why}")
        g = IoGroup(base, f"xcb-{self.run}-{role}", dev, write_bytes_per_s, write_iops)
        return self._add(role, g)
