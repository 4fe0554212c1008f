"""Reading files a user hands xcbench (matrix and plan YAML, ceph.conf, keyrings, host lists,
run manifests, JSONL): every way a read can fail becomes one XcbError line naming the file.

A directory given as a file, a missing or unreadable file, bytes that are not UTF-8, YAML or
JSON that does not parse (or nests deeper than Python recurses) must never end in a traceback.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError

MAX_BYTES = 64 << 20  # a matrix, spec, conf or manifest larger than this is not one


def _label(path: Any, what: str) -> str:
    return f"{path}: {what}" if what else str(path)


def read_bytes(path: str | os.PathLike, what: str = "", *, limit: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file, or XcbError("<path>: <what>: <why>")."""
    p = Path(path)
    where = _label(p, what)
    try:
        if p.is_dir():
            raise XcbError(f"{where}: cannot read: is a directory, not a file")
        with open(p, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) and not stat.S_ISCHR(st.st_mode):
                raise XcbError(f"{where}: cannot read: not a regular file")
            if st.st_size > limit:
                raise XcbError(f"{where}: larger than {limit >> 20} MiB: not a file xcbench reads")
            data = fh.read(limit + 1) if not st.st_size else fh.read()
    except FileNotFoundError:
        raise XcbError(f"{where}: cannot read: no such file") from None
    except IsADirectoryError:
        raise XcbError(f"{where}: cannot read: is a directory, not a file") from None
    except PermissionError:
        raise XcbError(f"{where}: cannot read: permission denied") from None
    except OSError as e:
        raise XcbError(f"{where}: cannot read: {e.strerror or e}") from None
    except ValueError as e:  # an embedded NUL in the path
        raise XcbError(f"{where}: not a usable path ({e})") from None
    if len(data) > limit:
        raise XcbError(f"{where}: larger than {limit >> 20} MiB: not a file xcbench reads")
    return data


def decode(data: bytes, where: str) -> str:
    """UTF-8 text of ``data`` (XcbError naming the line of the first bad byte)."""
    if b"\0" in data:
        raise XcbError(f"{where}: binary data (a NUL byte), not a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise XcbError(f"{where}: line {line}: not UTF-8 text (byte {data[e.start]:#04x})") from None


def read_text(path: str | os.PathLike, what: str = "") -> str:
    return decode(read_bytes(path, what), _label(path, what))


def parse_yaml(text: str, where: str) -> Any:
    """YAML (safe loader) or XcbError("<where>: line N: yaml: <problem>")."""
    import yaml
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f"line {mark.line + 1}" if mark else "top level"
        problem = getattr(e, "problem", None) or str(e)
        raise XcbError(f"{where}: {at}: yaml: {problem}") from None
    except RecursionError:
        raise XcbError(f"{where}: yaml: nested too deeply") from None
    except (ValueError, OverflowError, TypeError) as e:  # e.g. a date like 2024-13-45
        raise XcbError(f"{where}: yaml: {e}") from None


def read_yaml(path: str | os.PathLike, what: str = "") -> Any:
    where = _label(path, what)
    return parse_yaml(read_text(path, what), where)


def parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise XcbError(f"{where}: not valid JSON (line {e.lineno}: {e.msg})") from None
    except RecursionError:
        raise XcbError(f"{where}: JSON nested too deeply") from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise XcbError(f"{where}: not usable JSON ({e})") from None


def read_json(path: str | os.PathLike, what: str = "") -> Any:
    return parse_json(read_text(path, what), _label(path, what))


def require_mapping(data: Any, where: str, what: str = "a mapping") -> dict:
    if not isinstance(data, dict):
        raise XcbError(f"{where}: top level: not {what} (found {type(data).__name__})")
    return data
