"""Reading files a user hands xcbench (matrix and plan YAML, ceph.conf, keyrings, host lists,
run manifests, JSONL): every way a read can fail becomes one XcbError line naming the file.

A directory given as a file, a missing or unreadable file, bytes that are not UTF-8, YAML or
JSON that does not parse (or nests deeper than Python recurses) must never end in a traceback.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError

MAX_BYTES = 64 << 20  # a matrix, spec, conf or manifest larger than this is not one
# what a YAML document may hold once its aliases are expanded: every walk of the data (checks,
# the manifest's JSON) visits each use of an alias again, so a few hundred bytes of nested
# aliases would cost seconds to hours, and one long string aliased a hundred times the same.
# The largest matrix or plan xcbench ships holds < 2,000 values and < 20 kB.
MAX_YAML_VALUES = 100_000
MAX_YAML_BYTES = 16 << 20  # bytes of keys and scalars, aliases expanded


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


# libyaml's composer recurses in C, one frame per level of nesting: 50,000 levels crash the
# process (measured; 20,000 do not). A level needs one of these characters, so a text holding
# fewer than C_NESTING of them is parsed by libyaml (a multi-MB scalar: 0.06 s, not 2 s), any
# other by Python's parser (its RecursionError is one line)
C_NESTING = 10_000
NESTERS = "[{-?:"


def _loader(text: str = ""):
    """yaml's SafeLoader, except that a key given twice in one mapping is an error (YAML would
    keep the last silently: a user's value dropped without a word). A merge (<<) may still be
    overridden: that is what it is for. libyaml's parser for ``text`` when it is safe (above)."""
    import yaml
    c = hasattr(yaml, "CSafeLoader") and sum(text.count(ch) for ch in NESTERS) < C_NESTING
    if _LOADER.get(c) is None:
        # the constructor is Python's either way (the duplicate-key check below)
        base = yaml.CSafeLoader if c else yaml.SafeLoader

        class Loader(base):  # type: ignore[valid-type,misc]
            def get_single_node(self):
                node = super().get_single_node()
                if node is not None:
                    _expanded_size(node, MAX_YAML_VALUES, MAX_YAML_BYTES)
                return node

        def mapping(loader, node, deep=False):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = loader.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:
                    continue  # an unhashable key: the base constructor says so
                if first is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (first at line {first.line + 1}; "
                        f"YAML would silently keep the last)", key_node.start_mark)
                seen[key] = key_node.start_mark
            return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep)
        Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
        _LOADER[c] = Loader
    return _LOADER[c]


_LOADER: dict[bool, Any] = {}


def _expanded_size(root: Any, budget: int, byte_budget: int = MAX_YAML_BYTES) -> int:
    """How many values the node graph ``root`` holds with every alias expanded, counted once
    per distinct node (linear in the document); a ComposerError past ``budget`` values or
    ``byte_budget`` bytes of scalars, or for an alias inside itself."""
    import yaml
    sizes: dict[int, tuple[int, int]] = {}
    walking: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        kids = _children(node)
        if not children_done:
            if key in walking:
                raise yaml.composer.ComposerError(
                    None, None, "an alias refers to a value that holds it (a recursive "
                    "structure): write the values out", node.start_mark)
            walking.add(key)
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in sizes)
            continue
        walking.discard(key)
        own = len(node.value) if isinstance(node.value, str) else 0
        count = 1 + sum(sizes[id(k)][0] for k in kids)
        nbytes = own + sum(sizes[id(k)][1] for k in kids)
        sizes[key] = (count, nbytes)
        if count > budget:
            raise yaml.composer.ComposerError(
                None, None, f"its aliases expand to more than {budget:,} values (a YAML alias "
                "bomb?): write the values out or use fewer aliases", node.start_mark)
        if nbytes > byte_budget:
            raise yaml.composer.ComposerError(
                None, None, f"its aliases expand to more than {byte_budget >> 20} MiB of text (a "
                "YAML alias bomb?): write the values out or use fewer aliases", node.start_mark)
    return sizes[id(root)][0]


def _children(node: Any) -> list:
    import yaml
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []
# control characters (C0, DEL, C1) and line/paragraph separators: a newline in a value that
# reaches a config or job file starts a directive of its own
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
FREE_TEXT_KEYS = ("description",)  # prose: newlines and tabs allowed (never in a config file)


def check_strings(data: Any, where: str, path: str = "", _seen: set[int] | None = None) -> None:
    """XcbError("<where>: <field.path>: ...") for the first key or string value holding a
    control character or a line break (a ``description`` may hold newlines and tabs). A value
    met again (a YAML alias: the same object) is not scanned again."""
    seen = set() if _seen is None else _seen
    if isinstance(data, (dict, list, str)):
        if id(data) in seen:
            return
        seen.add(id(data))
    if isinstance(data, dict):
        for k, v in data.items():
            field = f"{path}.{k}" if path else str(k)
            if isinstance(k, str):
                _check_one(k, where, field, "key")
            if str(k) in FREE_TEXT_KEYS and isinstance(v, str):
                _check_one(v.replace("\n", " ").replace("\t", " "), where, field, "value")
            else:
                check_strings(v, where, field, seen)
    elif isinstance(data, list):
        for i, v in enumerate(data):
            check_strings(v, where, f"{path}[{i}]" if path else f"[{i}]", seen)
    elif isinstance(data, str):
        _check_one(data, where, path or "top level", "value")


def _check_one(text: str, where: str, field: str, what: str) -> None:
    m = _CONTROL.search(text)
    if m is not None:
        raise XcbError(f"{where}: {field}: the {what} holds control character "
                       f"U+{ord(m.group()):04X} (a line break or control character could become "
                       f"a directive of its own in a config or job file)")


def parse_yaml(text: str, where: str) -> Any:
    """YAML (safe loader; a duplicate key is an error) or XcbError("<where>: line N: yaml:
    <problem>")."""
    import yaml
    try:
        return yaml.load(text, Loader=_loader(text))  # noqa: S506 - a SafeLoader subclass
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
