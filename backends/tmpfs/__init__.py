"""The tmpfs backend (xcbench.backends.tmpfs): the gateway ceiling, storage out of the way.

prepare() mounts a tmpfs of the cell's size; where mounting is not permitted (no root, a
container) it falls back to a directory under /dev/shm and says so in ``Target.info``. The
directory is given to the xrootd user, who must be able to reach it: when the run directory is
private (e.g. pytest's 0700 tmp dirs) the mount point goes under /var/tmp instead.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from xcbench.backends.base import Backend, Target
from xcbench.errors import XcbError
from xcbench.figures.units import format_size
from xcbench.system import orphans, outfiles, proc
from xcbench.system.fsutil import hand_over, remove_tree
from xcbench.system.scratch import (  # noqa: F401 (memory_room, RESERVE_*: this module's API before)
    RESERVE_FRACTION,
    RESERVE_MIN,
    check_fits,
    memory_room,
    private_dir,
)
from xcbench.system.xrootd_user import reachable_by, remove_as_owner, write_as_owner, xrootd_ids

DEFAULT_SIZE = 1 << 30
SHM = "/dev/shm"
def _mount_point(base: Path, prefix: str) -> Path:
    """A new dir of a random name in ``base`` to mount on: ``base`` reached from / by descriptor,
    every component root's or ours and writable by nobody else but a root sticky dir, so no one
    but us can rename or replace what the path names (the mount, by path, lands on it and
    nowhere else); the dir made by mkdir relative to ``base``'s descriptor (never one found in
    place)."""
    bfd = outfiles.open_dir(base, make=False)
    try:
        for _ in range(100):
            name = f"{prefix}{secrets.token_hex(4)}"
            try:
                os.mkdir(name, 0o700, dir_fd=bfd)
            except FileExistsError:
                continue
            return Path(os.path.abspath(base)) / name
    finally:
        os.close(bfd)
    raise XcbError(f"tmpfs: no free name for {prefix}* in {base}")


def _is_mount(path: str) -> bool:
    real = os.path.realpath(path)
    with open("/proc/self/mounts") as fh:
        return any(line.split()[1] == real for line in fh if len(line.split()) > 1)


class TmpfsBackend(Backend):
    name = "tmpfs"
    remote_gateway = "mount"  # the agent mounts its own tmpfs there

    def prepare(self, cell) -> Target:
        size = int(cell.tmpfs_size or DEFAULT_SIZE)
        check_fits(size, f"cell {cell.id}: tmpfs_size", "give a smaller tmpfs_size, or fewer/smaller files")
        ids = xrootd_ids()
        os.close(outfiles.open_dir(self.workdir))  # made ours from / where missing (outfiles)
        base = self.workdir if reachable_by(self.workdir, ids) else Path("/var/tmp")
        mnt = _mount_point(base, f"xcb-tmpfs-{cell.id}-")
        target = Target(cell_id=cell.id, backend=self.name, path=str(mnt),
                        oss={"localroot": str(mnt)}, created=[f"dir:{mnt}"],
                        info={"size": size})
        res = proc.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755",
                        f"xcbench-{cell.id}", str(mnt)], check=False, timeout=30)
        if res.returncode == 0:
            target.created.append(f"mount:{mnt}")
            target.info.update(kind="tmpfs mount", mountpoint=str(mnt))
        else:
            # no permission to mount: a plain directory on the machine's /dev/shm tmpfs
            os.rmdir(mnt)
            target.created = []
            # a private, recorded dir (the next command removes it after a kill -9)
            shm = private_dir(SHM, f"xcb-tmpfs-{cell.id}-", mode=0o755,
                              uid=ids[0] if ids is not None else None)
            target.path = str(shm)
            target.oss = {"localroot": str(shm)}
            target.created.append(f"dir:{shm}")
            why = (res.stderr or res.stdout).strip().splitlines()
            target.info.update(kind="/dev/shm directory (tmpfs mount not permitted)",
                               fallback_reason=why[-1] if why else f"mount exit {res.returncode}",
                               size_enforced=False)
        if ids is not None and target.path:
            hand_over(target.path, ids)  # by descriptor: a link in its place is never followed
        return target

    def verify(self, target: Target, gateway: Any = None) -> dict[str, Any]:
        path = target.path
        if not path or not os.path.isdir(path):
            raise XcbError(f"tmpfs: cell {target.cell_id}: {path} is not a directory")
        st = os.statvfs(path)
        evidence: dict[str, Any] = {"path": path, "kind": target.info.get("kind"),
                                    "size": st.f_blocks * st.f_frsize,
                                    "free": st.f_bavail * st.f_frsize}
        with open("/proc/self/mounts") as fh:
            fstype = {ln.split()[1]: ln.split()[2] for ln in fh if len(ln.split()) > 2}
        mount = next((m for m in sorted(fstype, key=len, reverse=True)
                      if os.path.realpath(path).startswith(m.rstrip("/") + "/") or m == os.path.realpath(path)), None)
        evidence["fstype"] = fstype.get(mount) if mount else None
        if evidence["fstype"] != "tmpfs":
            raise XcbError(f"tmpfs: cell {target.cell_id}: {path} is on {evidence['fstype']}, not tmpfs")
        want = target.info.get("size")
        if f"mount:{path}" in target.created and want and abs(evidence["size"] - want) > 1 << 20:
            raise XcbError(f"tmpfs: cell {target.cell_id}: {path} holds {format_size(evidence['size'])}, "
                           f"cell asks for {format_size(want)}")
        # written by the dir's owner (the xrootd user's export: root never writes in it)
        probe = write_as_owner(path, f".xcbench-verify-{secrets.token_hex(6)}", 4096)
        remove_as_owner(probe)
        return evidence

    def cleanup(self, target: Target) -> None:
        for item in reversed(target.created):
            kind, _, path = item.partition(":")
            if kind == "mount" and _is_mount(path):
                res = proc.run(["umount", path], check=False, timeout=60)
                if res.returncode != 0:
                    proc.run(["umount", "-l", path], check=False, timeout=60)
            elif kind == "dir" and os.path.isdir(path):
                remove_tree(path)
                if os.path.isdir(path):
                    raise XcbError(f"tmpfs: cell {target.cell_id}: could not remove {path}")
                orphans.forget_dir(path)
        target.created.clear()

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "fallback": SHM}


BACKEND = TmpfsBackend
