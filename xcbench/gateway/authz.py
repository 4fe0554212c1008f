"""What a benchmark gateway serves: the cell's target and nothing else, to anyone, in every
security mode.

A gateway without ``ofs.authorize`` serves whatever its storage reaches: for XrdCeph, every object
of every pool its Ceph key reaches. XrdCeph 5.5 reads a user, a pool and a layout from a name and
from its query (XrdCephPosix.cc ``fillCephFile``)::

    [[userId@]pool[,nbStripes[,stripeUnit[,objectSize]]]:]<object name>
    ?cephUserId=...&cephPool=...&cephNbStripes=...&cephStripeUnit=...&cephObjectSize=...

the part before the first colon picks them; what it leaves out comes from the query, then from
the ``ofs.osslib`` defaults. The user only matters when one of XrdCeph's cluster handles
(``ceph.nbconnections``) is first connected; after that a name ``/x/u@victim:obj`` opens ``obj``
of pool ``victim`` with the gateway's own key (measured: an authdb granting ``/xcb-rados/<cell>/``
alone let another local user read an object of another pool through ``/xcb-rados/<cell>/x@pool:``).
So a gateway xcbench starts:

- exports and authorizes one name prefix (``all.export``, ``ofs.authorize`` with an
  ``acc.authdb`` granting it and nothing else, to anyone; :func:`authdb_text`): for a POSIX
  export ``/`` (below ``oss.localroot``, the cell's own directory); for XrdCeph the cell's name
  prefix, which *begins with XrdCeph's selector of the gateway's own user, pool and layout*
  (``/<user>@<pool>,<nb>,<su>,<os>:/xcb-rados/<cell>-<random>/``, xcbench.backends.rados): the
  first colon of every admitted name is the selector's, so no name and no query picks another
  pool, user or layout; colons, ``@`` and commas after it are part of the object's name;
- connects XrdCeph's cluster handles at start, as the gateway's user (:func:`warm`: a statvfs
  does, before any name is seen), since the selector's user (``/<user>``) names no Ceph user;
- names no keyring but the gateway's in its Ceph conf (xcbench.ceph.conf.gateway_sections).

:func:`xrdceph_file` models XrdCeph's parse and :func:`admitted` the gateway's own checks
(XRootD's ``/../`` refusal, the authdb's prefix), so tests can say which object any request
reaches; :func:`name_problem` is the rule for the object names xcbench itself sends.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.system import proc
from xcbench.system.fsutil import write_file

# characters that make XrdCeph, XRootD or a URL read a name as something else: a pool or user
# selector (: @ ,), a query (?), a fragment (#), an escape (%), a backslash, a quote, space
_SELECTOR = re.compile(r"[:@,?#%\\\"'\s\x00-\x1f\x7f]")
_CEPH_NAME = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class CephFile:
    """What XrdCeph opens for a request: as Ceph user ``user``, object ``name`` of ``pool``,
    striped as ``layout`` (nbStripes, stripeUnit, objectSize; "" for the osslib's default)."""
    user: str
    pool: str
    name: str
    layout: tuple[str, str, str] = ("", "", "")


def _cgi(query: str) -> dict[str, str]:
    """XrdOucEnv's reading of a query: ``&``-separated ``key=value``, the last one of a key wins."""
    out: dict[str, str] = {}
    for item in query.split("&"):
        key, sep, value = item.partition("=")
        if sep and key:
            out[key] = value
    return out


def xrdceph_file(path: str, query: str, user: str, pool: str) -> CephFile:
    """XrdCeph 5.5's reading of ``path`` and ``query`` (XrdCephPosix.cc ``fillCephFile`` and the
    ``fillCeph*`` it calls); ``user``/``pool``: the osslib's defaults."""
    env = _cgi(query)
    colon = path.find(":")
    params, name = ("", path) if colon < 0 else (path[:colon], path[colon + 1:])
    at = params.find("@")
    if at >= 0:
        user, offset = params[:at], at + 1
    else:
        user, offset = env.get("cephUserId", user), 0
    fields = params[offset:].split(",") if len(params) > offset else []
    pool = fields[0] if fields else env.get("cephPool", pool)
    layout = []
    for i, key in enumerate(("cephNbStripes", "cephStripeUnit", "cephObjectSize"), 1):
        # a field left out, or empty at the end of the string (XrdCeph: ``params.size() ==
        # offset``), comes from the query; the object size takes the rest of the string
        if len(fields) > i:
            value = ",".join(fields[3:]) if i == 3 else fields[i]
            last = i == 3 or len(fields) == i + 1
            layout.append(value if value or not last else env.get(key, ""))
        else:
            layout.append(env.get(key, ""))
    return CephFile(user, pool, name, (layout[0], layout[1], layout[2]))


def admitted(prefix: str, path: str) -> bool:
    """Does the gateway let a request for ``path`` (its query taken off) reach the storage?
    XRootD refuses a name without a leading slash or with a ``/../`` step
    (XrdXrootdProtocol::rpCheck), the authdb every name outside ``prefix``."""
    if not path.startswith("/") or "/../" in path:
        return False
    return path.startswith(prefix)


def name_problem(name: str) -> str | None:
    """Why ``name`` is not an object name xcbench sends to a gateway (None: it is): an absolute
    path of plain components, none ``.`` or ``..``, with no character that selects a pool, a
    user or a query (: @ , ? # %, a backslash, a quote, a space or a control character)."""
    if not isinstance(name, str) or not name.startswith("/"):
        return f"{name!r} is not an absolute name"
    m = _SELECTOR.search(name)
    if m is not None:
        return (f"{name!r} holds {m.group()!r}: XrdCeph or XRootD would read it as a pool, user "
                "or query selector")
    if any(part in (".", "..") for part in name.split("/")):
        return f"{name!r} has a . or .. step"
    return None


def selector_of(oss: Mapping[str, Any]) -> str:
    """XrdCeph's selector of an osslib's own parameters: ``/user@pool,nb,su,os:``."""
    fields = [str(oss.get(k, "")) for k in ("ceph_user", "pool", "nb_stripes", "stripe_unit",
                                             "object_size")]
    if not all(_CEPH_NAME.fullmatch(f) for f in fields):
        raise XcbError(f"gateway: XrdCeph parameters {fields} are not plain names and numbers")
    return f"/{fields[0]}@{fields[1]},{fields[2]},{fields[3]},{fields[4]}:"


def namespace(target: Any) -> str:
    """The prefix a gateway of ``target`` serves: an XrdCeph target's name prefix (its
    selector, then the cell's object prefix), else ``/`` (below the cell's ``oss.localroot``)."""
    if not getattr(target, "osslib", None):
        return "/"
    prefix = str((getattr(target, "info", None) or {}).get("name_prefix") or "")
    try:
        sel = selector_of(getattr(target, "oss", None) or {})
    except XcbError as e:
        raise XcbError(f"gateway: {target.backend} target of cell {target.cell_id}: oss: "
                       f"{e}") from None
    objects_at = prefix[len(sel):] if prefix.startswith(sel) else ""
    why = None if objects_at else f"{prefix!r} does not begin with XrdCeph's selector {sel!r}"
    if why is None:
        why = name_problem(objects_at)
    if why is None and (not objects_at.endswith("/") or objects_at.count("/") < 3):
        why = f"{objects_at!r} is not a directory-like prefix below the top (/a/b/)"
    if why is not None:
        raise XcbError(f"gateway: {target.backend} target of cell {target.cell_id}: name_prefix: "
                       f"{why}; a gateway serves the cell's prefix only")
    return prefix


def served_problem(prefix: str, path: str) -> str | None:
    """Why ``path`` is not a name xcbench sends to a gateway serving ``prefix`` (None: it is):
    inside the prefix, and what follows it a plain name (:func:`name_problem`)."""
    if not path.startswith(prefix):
        return f"{path!r} is outside the gateway's namespace {prefix!r}"
    return name_problem("/" + path[len(prefix):].lstrip("/")) if path != prefix else None


def authdb_text(prefix: str, who: str = "*", lookup: bool = False) -> str:
    """XrdAcc's authdb: user ``who`` (``*``: anyone, authenticated or not) may do everything
    below ``prefix``, and nobody anything else; ``lookup``: anyone may also stat there (a
    statvfs: :func:`warm`, when ``who`` is not anyone). Below ``/`` (a POSIX export), ``/..``
    is denied: XRootD 5.5 refuses ``/../`` but not a last ``/..``, which listed the directory
    above ``oss.localroot`` (measured: ``xrdfs ls /..`` as nobody named its entries)."""
    if not prefix.startswith("/") or re.search(r"[\s#\x00-\x1f\x7f]", prefix):
        raise XcbError(f"gateway: authdb: {prefix!r} is not a name to grant")
    if not re.fullmatch(r"\*|[A-Za-z0-9._-]+", who):
        raise XcbError(f"gateway: authdb: {who!r} is not a user name to grant")
    lines = [f"# written by xcbench.gateway.authz: {who} may do everything below {prefix}, "
             "nobody anything else", f"u {who} {'/.. -a ' if prefix == '/' else ''}{prefix} a"]
    if lookup and who != "*":
        lines.append(f"u * {prefix} l")
    return "\n".join(lines) + "\n"


def write_authdb(admin: Path, prefix: str, who: str = "*", lookup: bool = False) -> Path:
    """The authdb, root's file (0644: xrootd reads it, never changes it) in root's admin dir."""
    return write_file(Path(admin) / "authdb", authdb_text(prefix, who, lookup), 0o644, new=True)


def warm(url: str, prefix: str, connections: int, env: Mapping[str, str]) -> None:
    """Connect every cluster handle of the XrdCeph gateway at ``url`` (root://host:port) as the
    gateway's own Ceph user, before a name is seen: a statvfs does (XrdCeph's statfs connects
    as the osslib's user), and handles are used in turn, so twice as many as there are, in one
    xrdfs session. XcbError when one is not answered."""
    n = 2 * max(1, int(connections))
    r = proc.run(["xrdfs", url], input=f"statvfs {prefix}\n" * n, env=dict(env), timeout=60,
                 check=False)
    done = r.stdout.count("Nodes with RW space")
    if done < n:
        why = (r.stderr or r.stdout).strip().splitlines()
        raise XcbError(f"gateway: {url}: XrdCeph's cluster handles were not connected "
                       f"({done} of {n} statvfs answered){': ' + why[-1][:200] if why else ''}")


def warm_origins(gw: Any, origins: list[Any]) -> None:
    """An XrdCeph gateway's cluster handles connected on each of its ``origins`` (Servers), before
    any name is seen (:func:`warm`); nothing for a POSIX export."""
    if not gw.target.osslib:
        return
    scheme = "root" if gw.security == "none" else "roots"
    n = int((gw.tunables.get("ceph") or {}).get("nbconnections") or 1)
    for s in origins:
        host = str(s.addr or gw.addr)
        warm(f"{scheme}://{f'[{host}]' if ':' in host else host}:{s.port}", namespace(gw.target), n,
             gw.client_env)
