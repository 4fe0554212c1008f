"""The closing table's lines: what capped each level, laid out for a terminal or a pipe of a
given width, the same lines either way (a terminal only adds colour).

    what capped each level — run quick-shape — o1 push
       c   Gb/s  verdict                   deciding figure
    tmpfs 512M
       1   3.63  concurrency (or host-cpu) x2 faster at c=4
    cephfs su=1M sc=4 os=4M rep3
       1   1.05  host-cpu & concurrency    host CPU 69 %: osd 0.62, gateway 0.31 cores

A cell's label stands on a line of its own, its levels under it, so a level's line is free for
its verdict and the figure that decided it. A reason too long for its column wraps under it,
never leaving one word alone on a line, never splitting a figure from its unit. The legend
explains only the marks the table uses. Pure text: the rows come from analysis.report.glance.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

GAP = "  "
WHY_MIN = 26  # the reason's column is never narrower: a narrow table wraps the verdict first
NBSP = "\x00"  # a space the wrap may not break at, a plain space again when printed
# a figure and its unit stay on one line: '69 %', '0.62 cores', '1.9 Gb/s', '443 IO/s'
_UNIT = re.compile(r"(\d) (%|cores|[GMk]?b/s|[GMK]i?B/s|IOPS|op/s|IO/s|s\b)")
CO = " & "  # a co-limit: never read as part of a name (ec2+1), unlike '+'

LEGEND = {
    "unsteady": "† not steady: the level hit its maximum length before its rate was steady; the "
                "rate is over its last window (or the whole level)",
    "co": "a & b: both rules hold (co-limits), a decides",
    "near": "a (or b): a figure within its noise of a threshold; another run may name b",
    "beat": "▲ the chain beat a measured ceiling: that probe is no ceiling of its path",
}


@dataclass
class Row:
    cell: str  # the label, less the words every label shares
    level: str
    rate: str  # Gb/s as the progress line prints it, † when not steady
    verdict: str
    co: list[str] = field(default_factory=list)
    near: list[str] = field(default_factory=list)
    why: str = ""
    direction: str = ""  # shown only when the run read too

    def verdict_units(self) -> list[str]:
        """The verdict's parts, each kept whole by the wrap: 'host-cpu', '& client', '(or x',
        'or y)': a list of candidates breaks between them (kept as one part, four candidates
        made the verdict column 70 wide and left the reasons a dozen columns at 80)."""
        out = [self.verdict, *(f"&{NBSP}{c}" for c in self.co)]
        for i, c in enumerate(self.near):
            c = c.replace(" ", NBSP)  # 'no cause' kept whole
            out.append(("(" if i == 0 else "") + f"or{NBSP}{c}" + (")" if i == len(self.near) - 1 else ""))
        return out


def verdict_text(verdict: str, co: list[str], near: list[str]) -> str:
    """'ec-overhead & host-cpu (or storage-bandwidth)'."""
    return (" ".join(Row("", "", "", verdict, co, near).verdict_units())).replace(NBSP, " ")


def glue(text: str) -> str:
    return _UNIT.sub(lambda m: f"{m[1]}{NBSP}{m[2]}", text)


def wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` (a word longer than that alone on its line), a
    figure kept with its unit, and no last line of one word while the line above can give it
    one more."""
    if not text:
        return [""]
    folded = textwrap.wrap(glue(text), max(width, 1), break_long_words=False, break_on_hyphens=False)
    lines = [ln.split(" ") for ln in folded] or [[""]]
    for i in range(len(lines) - 1, 0, -1):
        while len(lines[i]) == 1 and len(lines[i - 1]) > 2 and \
                len(" ".join([lines[i - 1][-1], *lines[i]])) <= width:
            lines[i].insert(0, lines[i - 1].pop())
    return [" ".join(ln).replace(NBSP, " ") for ln in lines]


def _pack(units: list[str], width: int) -> list[str]:
    """The verdict's units packed greedily into lines of ``width``."""
    out: list[str] = []
    for u in units:
        if out and len(out[-1]) + 1 + len(u) <= width:
            out[-1] += " " + u
        else:
            out.append(u)
    return [x.replace(NBSP, " ") for x in out]


def _columns(rows: list[Row], width: int) -> tuple[int, int, int, int]:
    """Widths of the level (with its lead), rate, verdict and reason columns: the verdict's
    width that makes the fewest lines (one long verdict wraps rather than every reason)."""
    reads = any(r.direction for r in rows)
    lw = max([5 if reads else 1, *(len(r.level) + (2 if reads else 0) for r in rows)])
    rw = max([4, *(len(r.rate) for r in rows)])
    lead = 3 + lw  # the level column, right-aligned under its cell's label
    fixed = lead + 2 * len(GAP) + rw
    natural = max([7, *(len(" ".join(r.verdict_units())) for r in rows)])
    unit = max([7, *(len(u) for r in rows for u in r.verdict_units())])  # a verdict name is not cut
    top = max(unit, min(natural, width - fixed - len(GAP) - WHY_MIN))
    widths = range(top, unit - 1, -1)

    def height(vw: int) -> int:
        ww = width - fixed - vw - len(GAP)
        return sum(max(len(_pack(r.verdict_units(), vw)), len(wrap(r.why, ww))) for r in rows)
    vw = min(widths, key=lambda w: (height(w), -w), default=unit)
    return lead, rw, vw, max(12, width - fixed - vw - len(GAP))


def lay_out(title: str, rows: list[Row], width: int, *, notes: Sequence[str] = (),
            settle: Sequence[tuple[str, list[str]]] = (), run: str = "") -> list[str]:
    """The closing table's lines, at most ``width`` columns (a word longer than its column
    excepted), no trailing space. ``run``: the run's path, said once as a shell variable the
    commands to settle a level use (a long path would not fit a command's line)."""
    reads = any(r.direction for r in rows)
    lead, rw, vw, ww = _columns(rows, width)
    out = wrap(title, width)
    out.append(f"{'c' + (' dir' if reads else ''):>{lead}}{GAP}{'Gb/s':>{rw}}{GAP}{'verdict':<{vw}}{GAP}"
               "deciding figure")
    last = None
    for r in rows:
        if r.cell != last:
            out += wrap(r.cell, width)
            last = r.cell
        level = r.level + (f" {r.direction[0]}" if reads else "")
        vlines = _pack(r.verdict_units(), vw)
        wlines = wrap(r.why, ww)
        lone = any(len(v.split()) == 1 for v in vlines[len(wlines):])  # a verdict word alone
        if lone and len(r.why.split()) >= len(vlines):
            wlines = wrap(r.why, max(8, -(-len(r.why) // len(vlines)) + 2))
        for i in range(max(len(vlines), len(wlines))):
            head = f"{level:>{lead}}{GAP}{r.rate:>{rw}}" if i == 0 else " " * (lead + 2 + rw)
            v = vlines[i] if i < len(vlines) else ""
            w = wlines[i] if i < len(wlines) else ""
            out.append(f"{head}{GAP}{v:<{vw}}{GAP}{w}".rstrip())
    for n in notes:
        out += wrap(n, width)
    if settle:
        out.append("what would settle a level:")
        if run and any(run in cmd for _, todo in settle for cmd in todo):
            var = f"  RUN={shlex.quote(run)}"
            out.append(var + "  # the run" if len(var) + 13 <= width else var)
            settle = [(where, [cmd.replace(f" {run} ", ' "$RUN" ') for cmd in todo]) for where, todo in settle]
        shared = [x for x in settle[0][1] if len(settle) > 1 and all(x in todo for _, todo in settle)]
        for where, todo in settle:
            out += ["  " + x for x in wrap(where, width - 2)]
            for cmd in todo:
                if cmd not in shared:
                    out += command_lines(cmd, width)
        for x in shared:
            out += ["  " + y for y in wrap(f"and for each: {x}", width - 2)]
    return [ln.rstrip() for ln in out]


def command_lines(cmd: str, width: int, indent: str = "    ") -> list[str]:
    """A command indented under its level; longer than the line, it goes on before a word (an
    option kept with its value) with a shell continuation, so it stays copyable; prose wraps."""
    if not cmd.startswith("xcbench "):
        return [indent + x for x in wrap(cmd, width - len(indent))]
    units: list[str] = []
    for w in cmd.split(" "):
        if units and units[-1].startswith("--") and " " not in units[-1] and not w.startswith("--"):
            units[-1] += " " + w
        else:
            units.append(w)
    lines, cur = [], indent + units[0]
    for u in units[1:]:
        if len(cur) + 1 + len(u) + 2 > width and cur.strip() != units[0]:
            lines.append(cur + " \\")
            cur = indent + "    " + u
        else:
            cur += " " + u
    return lines + [cur]


def legend(rows: list[Row], any_beat: bool) -> list[str]:
    """The rate's definition and an explanation of each mark the table uses, no other."""
    out = ["Gb/s: bytes over the level's steady window (1 Gb/s = 10^9 bit/s)"]
    if any("†" in r.rate for r in rows):
        out.append(LEGEND["unsteady"])
    if any(r.co for r in rows):
        out.append(LEGEND["co"])
    if any(r.near for r in rows):
        out.append(LEGEND["near"])
    if any_beat:
        out.append(LEGEND["beat"])
    return out


def split_settle(line: str, common: str = "") -> tuple[str, list[str]]:
    """'CELL c=N: VERDICT ~ NEAR: xcbench confirm ...; or --hosts FILE (...)' -> the level and
    what it is, written as the table writes it, and each way to settle it
    (analysis.verdicts.experiment_next.settle's lines); ``common``: the words the title says."""
    m = re.match(r"^(.*?) (c=\S+(?: \w+)?): ([^:]*?)(?: ~ ([^:]*))?: (.*)$", line)
    if not m:
        return line, []
    cell = " ".join(w for w in m[1].split() if w not in common.split())
    said = verdict_text(m[3], [], [x.strip() for x in (m[4] or "").split(",") if x.strip()])
    return f"{cell} {m[2]}: {said}", [x.strip() for x in m[5].split("; or ") if x.strip()]


def spans(todo: str) -> list[tuple[bool, str]]:
    """A way to settle a level as (is code, text) parts: a command whole, a flag and its value
    apart from the words that explain it ('--hosts FILE', ' (the roles on hosts of their own)'),
    so a ticket shows the command in a code span and the prose outside it."""
    if todo.startswith("xcbench "):
        return [(True, todo)]
    m = re.match(r"^(--[\w-]+(?: (?:[A-Z][A-Z_]*|\d+))?)(.*)$", todo)
    if not m:
        return [(False, todo)]
    return [(True, m[1])] + ([(False, m[2])] if m[2] else [])


def verdict_column(rows: list[Row], width: int) -> tuple[int, int]:
    """(start, width) of the verdict column in ``lay_out``'s level lines."""
    lead, rw, vw, _ = _columns(rows, width)
    return lead + len(GAP) + rw + len(GAP), vw
