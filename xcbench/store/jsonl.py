"""JSONL files of the result store, written so that faults lose nothing and read back whole.

- appends are whole lines or nothing (:func:`write_all` cuts a short write back off, e.g. on a
  full disk), and a file whose last line was torn by a hard kill gets a newline first;
- rewrites (the resume's) are atomic: tmp + rename;
- :func:`read_jsonl` skips a torn last line with a warning; any other bad line is an error.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.system.userfiles import read_bytes


def open_append(path: Path) -> int:
    """An O_APPEND fd; a torn last line (a hard kill mid-write) is ended first, so new records
    start on a line of their own (the torn one is skipped when read)."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            write_all(fd, b"\n")
    except OSError:
        os.close(fd)
        raise
    return fd


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` or none of it: a short write (disk full) is cut back off."""
    start = os.lseek(fd, 0, os.SEEK_END)
    view = memoryview(data)
    try:
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise


def split_lines(path: Path, moves) -> tuple[list[str], list[str], int]:
    """The lines of a JSONL file as (kept, moved, torn): ``moves(record)`` says which move;
    a torn line (a hard kill mid-write) is counted and dropped."""
    keep: list[str] = []
    moved: list[str] = []
    torn = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                torn += line.strip() != ""
                continue
            line = line if line.endswith("\n") else line + "\n"
            (moved if isinstance(rec, dict) and moves(rec) else keep).append(line)
    return keep, moved, torn


_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def append_lines(path: Path, lines: list[str]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644)
    with os.fdopen(fd, "a") as fh:
        fh.writelines(lines)
        fh.flush()
        os.fsync(fh.fileno())


def rewrite_lines(path: Path, lines: list[str]) -> None:
    """``path`` holds exactly ``lines`` afterwards, or what it held before: tmp + rename."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as fh:
        fh.writelines(lines)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _json_text(v: Any) -> Any:
    if isinstance(v, dict):  # pyarrow structs carry every key: drop those a row did not have
        v = {k: x for k, x in v.items() if x is not None}
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v


def read_jsonl(path: str | os.PathLike):
    """A JSONL table as a DataFrame; nested dicts/lists become JSON text (sorted keys).
    pyarrow's reader first (fast); Python's json when a column's type varies between rows."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.json as pj
    path = Path(path)
    if not path.stat().st_size:
        return pd.DataFrame()
    try:
        tbl = pj.read_json(path, read_options=pj.ReadOptions(block_size=8 << 20))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        tbl = None
    if tbl is not None:
        cols = {}
        for name in tbl.column_names:
            col = tbl.column(name)
            if pa.types.is_struct(col.type) or pa.types.is_list(col.type):
                cols[name] = pd.Series([_json_text(v) for v in col.to_pylist()], dtype="object")
            else:
                cols[name] = col.to_pandas()
        return pd.DataFrame(cols)
    df = pd.DataFrame.from_records(_json_records(path))
    for col in [c for c in df.columns if pd.api.types.is_object_dtype(df[c])]:
        if df[col].map(lambda v: isinstance(v, (dict, list))).any():
            df[col] = df[col].map(_json_text)
        kinds = {type(v) for v in df[col] if v is not None and v == v}
        if len(kinds) > 1 and not kinds <= {int, float}:  # e.g. 1 and "n/a": keep both, as text
            df[col] = df[col].map(lambda v: v if v is None or v != v else str(v))
    return df


def read_records(path: str | os.PathLike) -> list[dict]:
    """The rows of a JSONL table as they were written (no DataFrame types in between)."""
    return _json_records(Path(path))


def _json_records(path: Path) -> list[dict]:
    """The records of a JSONL file. A torn last line (a hard kill mid-write) is skipped with a
    warning; anything else that is not one JSON object per line is an XcbError naming it."""
    import sys

    data = read_bytes(path, limit=1 << 40)
    lines = data.split(b"\n")
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line.decode("utf-8"))
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
        except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
            if n == len(lines) and not data.endswith(b"\n"):
                print(f"xcbench: warning: {path}: line {n}: torn last record skipped",
                      file=sys.stderr)
                continue
            raise XcbError(f"{path}: line {n}: not a JSON record ({e})") from None
        rows.append(row)
    return rows


