"""The gateway user: benchmark gateways run as it (xrootd refuses root), so what they serve
must be its.

One place for its name and the questions backends and gateways ask: which uid/gid to hand files
to, whether that user can reach a directory, what environment its daemons get, and how root
makes something inside a directory that user owns (it does not: the owner does, :func:`run_as`).

The user is ``xrootd`` (the Debian package's) unless ``$XCBENCH_GATEWAY_USER`` (or
``--gateway-user``) names another: on a host whose production xrootd also runs as ``xrootd``,
a uid of the benchmark's own keeps the two apart (docs/security.md#root-and-the-gateway-user).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping, Sequence
from pathlib import Path

from xcbench.errors import XcbError
from xcbench.system import proc
from xcbench.system.fsutil import hand_over, make_dir

XROOTD_USER = "xrootd"
USER_ENV = "XCBENCH_GATEWAY_USER"
# what a daemon's environment holds besides what the gateway names (CEPH_CONF, X509_CERT_DIR,
# XDG_CACHE_HOME, XRD_*): nothing of the operator's (tokens, proxies, ssh agents) reaches it
DAEMON_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DAEMON_LANG = "C.UTF-8"
ENV_TOOL = "/usr/bin/env"


def user_name() -> str:
    """The user benchmark gateways run as."""
    return os.environ.get(USER_ENV) or XROOTD_USER


def set_user(name: str | None) -> None:
    """Use ``name`` for the gateways this command starts (checked: one line if unknown)."""
    if not name:
        return
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        raise XcbError(f"--gateway-user {name}: no such user") from None
    if pw.pw_uid == 0:
        raise XcbError(f"--gateway-user {name}: uid 0; xrootd refuses to run as root")
    os.environ[USER_ENV] = name


def xrootd_ids() -> tuple[int, int] | None:
    """uid/gid to run as (None when not root: then xrootd runs as the current user)."""
    if os.geteuid() != 0:
        return None
    name = user_name()
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        hint = " (install the Debian package xrootd-server)" if name == XROOTD_USER else ""
        raise XcbError(f"gateway: user {name!r} missing{hint}: xrootd refuses to run as root") from None
    return pw.pw_uid, pw.pw_gid


def xrootd_ids_if_any() -> tuple[int, int] | None:
    """uid/gid of the gateway user when it exists (None otherwise: no gateway on this host)."""
    try:
        pw = pwd.getpwnam(user_name())
    except KeyError:
        return None
    return pw.pw_uid, pw.pw_gid


def reachable_by(path: Path, ids: tuple[int, int] | None) -> bool:
    """Can user ``ids`` traverse every directory down to ``path``?"""
    if ids is None:
        return True
    uid, gid = ids
    p = Path(path).resolve()
    for d in [*reversed(p.parents), p]:
        st = d.stat()
        bit = 0o100 if st.st_uid == uid else 0o010 if st.st_gid == gid else 0o001
        if not st.st_mode & bit:
            return False
    return True


def own(path: Path | str, ids: tuple[int, int] | None, mode: int | None = None) -> None:
    """Hand ``path`` (made by us, in a directory of ours) to ``ids``, by descriptor."""
    if ids is not None or mode is not None:
        hand_over(path, ids, mode)


def run_as(ids: tuple[int, int] | None, argv: Sequence[object], **kw) -> proc.Completed:
    """Run ``argv`` as user ``ids`` (ourselves when None), isolated: cwd /, the daemons' small
    environment. For what must happen inside a directory that user owns (an origin's subdir of
    its export, a verify file): its owner does it, never root."""
    return proc.run(argv, user=ids, cwd="/", env=daemon_env(ids), inherit_env=False, **kw)


def daemon_env(ids: tuple[int, int] | None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a gateway daemon: PATH, HOME (the user's), LANG, and ``extra``
    (what the gateway names: CEPH_CONF, X509_CERT_DIR, XDG_CACHE_HOME, XRD_*)."""
    home = "/"
    if ids is not None:
        try:
            home = pwd.getpwuid(ids[0]).pw_dir or "/"
        except KeyError:
            pass
    else:
        home = os.environ.get("HOME") or "/"
    return {"PATH": DAEMON_PATH, "HOME": home, "LANG": DAEMON_LANG,
            **{k: str(v) for k, v in (extra or {}).items()}}


def daemon_argv(cmd: Sequence[object], env: Mapping[str, str]) -> list[str]:
    """``cmd`` started with exactly ``env`` and cwd / (env -i -C /): the same on every
    transport (a netns or ssh host), whatever the starting process's own environment holds."""
    return [ENV_TOOL, "-i", "-C", "/", *(f"{k}={v}" for k, v in env.items()), *map(str, cmd)]


def make_dir_for(ids: tuple[int, int] | None, path: Path, mode: int = 0o755) -> Path:
    """Directory ``path`` for user ``ids``: made by us and handed over when its parent is ours;
    made by that user (:func:`run_as`) when the parent is already theirs (an export root it was
    given: root never creates anything in it). One that exists is that user's own business."""
    parent = os.lstat(path.parent)
    if ids is None or parent.st_uid == os.geteuid():
        if not os.path.lexists(path):
            make_dir(path, mode)
            own(path, ids)
        return path
    res = run_as(ids, ["mkdir", "-m", f"{mode:o}", "--", path], timeout=60, check=False)
    if res.returncode != 0 and "File exists" not in res.stderr:
        raise XcbError(f"{path}: user {ids[0]} could not make it: {res.stderr.strip()}")
    return path


def write_as_owner(directory: str | os.PathLike, name: str, nbytes: int, *,
                   fsync: bool = False) -> Path:
    """A new file ``directory/name`` of ``nbytes`` random bytes, written by the directory's
    owner: root itself only in a dir of its own, else that user (:func:`run_as`), so a link
    planted there is never written through by root. XcbError when it cannot be made."""
    d = Path(directory)
    st = os.lstat(d)
    path = d / name
    if st.st_uid == os.geteuid():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            left = nbytes
            while left:
                left -= os.write(fd, os.urandom(min(left, 1 << 20)))
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        return path
    conv = "excl,fsync" if fsync else "excl"  # excl: O_EXCL (never an existing file or link)
    run_as((st.st_uid, st.st_gid), ["dd", "if=/dev/urandom", f"of={path}", f"bs={nbytes}", "count=1",
                                    "iflag=fullblock", f"conv={conv}", "status=none"], timeout=120)
    return path


def remove_as_owner(path: str | os.PathLike) -> None:
    """Remove the file ``path`` as its directory's owner (see :func:`write_as_owner`)."""
    p = Path(path)
    st = os.lstat(p.parent)
    if st.st_uid == os.geteuid():
        p.unlink(missing_ok=True)
    else:
        run_as((st.st_uid, st.st_gid), ["rm", "-f", "--", p], timeout=60)
