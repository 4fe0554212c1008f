"""YAML aliases are bounded by what they expand to, in values and in bytes: a matrix of one
multi-MB string aliased hundreds of times is refused in one line, in well under a second of CPU
(it took 4-9 s before, and was refused only by the value count after scanning it all); one that
stays within the bounds is checked once per distinct value, not once per use; and no nesting
crashes the parser (libyaml recurses in C: deep texts go to Python's parser)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from xcbench.errors import XcbError
from xcbench.system.userfiles import C_NESTING, check_strings, parse_yaml, read_yaml

MB4 = "x" * (4 << 20)


def bomb(n: int = 300) -> str:
    return ("name: bomb\ndescription: &a " + MB4 + "\nbackends: {tmpfs: {size: [64M]}}\n"
            "defaults:\n  campaign: {}\n" + "x-uses:\n" + "".join("  - *a\n" for _ in range(n)))


def test_a_string_aliased_hundreds_of_times_is_one_line_at_once(tmp_path):
    f = tmp_path / "bomb.yaml"
    f.write_text(bomb())
    t0 = time.process_time()
    with pytest.raises(XcbError, match=r"line \d+: yaml: its aliases expand to more than 16 MiB"):
        read_yaml(f)
    assert time.process_time() - t0 < 1.0  # CPU: the machine's other work does not count
    r = subprocess.run([sys.executable, "-m", "xcbench", "matrix", "check", str(f)],
                       capture_output=True, text=True, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"xcbench: error: {f}: ")


def test_aliases_within_the_bounds_are_scanned_once():
    big = "y" * (1 << 20)
    data = parse_yaml("a: &a " + big + "\nb: [" + ", ".join(["*a"] * 12) + "]\n", "m.yaml")
    assert len(data["b"]) == 12 and all(v is data["a"] for v in data["b"])
    t0 = time.process_time()
    for _ in range(20):
        check_strings(data, "m.yaml")
    assert time.process_time() - t0 < 1.0  # 20 x 13 MiB scanned would be seconds


@pytest.mark.parametrize("text", ["- " * (C_NESTING * 5) + "x\n", "[" * (C_NESTING * 5),
                                  "a: " + "{b: " * (C_NESTING * 3)])
def test_no_nesting_crashes_the_parser(text):
    r = subprocess.run([sys.executable, "-c", "import sys\nfrom xcbench.system.userfiles import "
                        "parse_yaml\ntry:\n    parse_yaml(sys.stdin.read(), 'deep.yaml')\nexcept "
                        "Exception as e:\n    print(str(e)[:200])"],
                       input=text, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("deep.yaml: "), (r.returncode, r.stderr[-300:])
