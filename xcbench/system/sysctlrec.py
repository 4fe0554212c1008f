"""Sysctl changes on disk, written before they are made: after a ``kill -9`` of the command that
tuned the host (``--tune-tcp``), the next command puts the old values back.

    <state home>/sysctl/<owner pid>.json  {"host", "uid", "root", "owner": {pid, start, cmdline},
                                           "changed": {key: {"was": old, "set": new}}}

:func:`restore_stale` (every guarded command, xcbench.cli) restores the records whose owner is
dead: a key goes back only while it still holds the value xcbench set (a value changed since by
someone else is theirs, and is left), only for the TCP/network keys ``--tune-tcp`` sets, and
only from records that prove they are ours (xcbench.system.statedir: owner, mode, host).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.system import orphans, statedir
from xcbench.system.secrets import redact_argv

SUBDIR = "sysctl"
SYSCTL_ROOT = "/proc/sys"
KEY_RE = re.compile(r"^net\.(core|ipv4)\.[a-z0-9_]+$")  # what --tune-tcp may set, nothing else
VALUE_RE = re.compile(r"^[A-Za-z0-9_. -]{1,200}$")


def _path(name: str, root: str) -> Path:
    return Path(root) / name.replace(".", "/")


def read(name: str, root: str = SYSCTL_ROOT) -> str | None:
    try:
        return " ".join(_path(name, root).read_text().split())
    except OSError:
        return None


def write(name: str, value: str, root: str = SYSCTL_ROOT) -> None:
    try:
        _path(name, root).write_text(value + "\n")
    except OSError as e:
        raise XcbError(f"--tune-tcp: cannot set {name} = {value} ({e.strerror or e})") from e


class Record:
    """This process's sysctl changes, saved before each one is made."""

    def __init__(self, root: str = SYSCTL_ROOT):
        self.root = str(root)
        self.path = statedir.home() / SUBDIR / f"{os.getpid()}.json"
        owner = orphans.identity(os.getpid()) or {"pid": os.getpid()}
        if "cmdline" in owner:
            owner["cmdline"] = redact_argv(owner["cmdline"])
        self.owner = owner
        self.changed: dict[str, dict[str, str]] = {}

    def note(self, key: str, was: str, new: str) -> None:
        """Before ``key`` is set to ``new`` (its value now: ``was``). Raises when it cannot be
        written down: a change that is not recorded is not made."""
        self.changed[key] = {"was": was, "set": new}
        self._save()

    def forget(self, key: str) -> None:
        if self.changed.pop(key, None) is not None:
            self._save()

    def _save(self) -> None:
        if not self.changed:
            self.path.unlink(missing_ok=True)
            return
        statedir.write_private(self.path, json.dumps(
            {"host": statedir.HOST, "uid": os.geteuid(), "root": self.root, "owner": self.owner,
             "changed": self.changed}, indent=1))


def record_problem(path: Path, rec: Any, root: str) -> str | None:
    """Why a sysctl record may not be acted on (None: it may)."""
    why = statedir.record_problem(path)
    if why is not None:
        return why
    if not isinstance(rec, dict) or not isinstance(rec.get("owner"), dict) or \
            not isinstance(rec.get("changed"), dict):
        return "not a sysctl record"
    why = statedir.host_problem(rec)
    if why is not None:
        return why
    if rec.get("uid") != os.geteuid():
        return f"written by uid {rec.get('uid')!r}, not by this user"
    if rec.get("root") != root:
        return f"names sysctl root {rec.get('root')!r}, not {root}"
    for key, v in rec["changed"].items():
        if not isinstance(key, str) or not KEY_RE.match(key):
            return f"{key!r} is not a sysctl --tune-tcp sets"
        if not isinstance(v, dict) or not all(isinstance(v.get(k), str) and VALUE_RE.match(v[k])
                                              for k in ("was", "set")):
            return f"{key}: values are not sysctl values"
    return None


def restore_stale(root: str = SYSCTL_ROOT) -> list[str]:
    """Put back what killed commands changed; returns one line per key restored or left."""
    d = statedir.home() / SUBDIR
    out: list[str] = []
    for f in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError) as e:
            statedir.warn_skipped(f, f"unreadable ({e})")
            continue
        if isinstance(rec, dict) and rec.get("root") != root:
            continue  # a record of another sysctl tree (a test's): not this one's to restore
        why = record_problem(f, rec, root)
        if why is not None:
            statedir.warn_skipped(f, why)
            continue
        pid = rec["owner"].get("pid")
        if pid == os.getpid() or orphans._owner_alive(rec["owner"]):
            continue
        for key, v in rec["changed"].items():
            now = read(key, root)
            if now == " ".join(v["set"].split()):
                write(key, v["was"], root)
                out.append(f"{key} {now} -> {v['was']} (restored)")
            elif now is not None and now != " ".join(v["was"].split()):
                out.append(f"{key} left at {now}: changed by someone else since xcbench set "
                           f"{v['set']}")
        f.unlink(missing_ok=True)
    return out
