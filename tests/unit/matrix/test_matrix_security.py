"""The security dimension: a typed choice crossed like direction; none keeps old ids; a bad
value is one line naming the file, the section and the field."""

from __future__ import annotations

import pytest

from tests.support.matrices import load_text
from xcbench.errors import XcbError
from xcbench.matrix import cell_id

BASE = """
name: t
defaults: {concurrency: [1], file_size: 4M, files: 4}
backends:
  tmpfs: {size: 1G}
"""


def load(tmp_path, base: str = BASE, extra: str = ""):
    return load_text(tmp_path, extra, base)


def test_security_is_crossed_and_none_keeps_the_old_id(tmp_path):
    plain = load(tmp_path).cells[0]
    m = load(tmp_path, BASE.replace("files: 4}", "files: 4, security: [none, tls, scitokens, macaroons]}"))
    by = {c.security: c for c in m.cells}
    assert set(by) == {"none", "tls", "scitokens", "macaroons"}
    assert by["none"].id == plain.id and "security" not in by["none"].settings()
    assert by["tls"].settings()["security"] == "tls"
    assert by["tls"].id == cell_id(by["tls"].settings()) != plain.id
    assert by["scitokens"].label.endswith(" scitokens")
    assert m.manifest()["cells"][by["scitokens"].id]["security"] == "scitokens"


def test_exclude_by_security(tmp_path):
    m = load(tmp_path, BASE.replace("files: 4}", "files: 4, security: [none, tls]}"),
             "exclude:\n  - {security: tls}\n")
    assert [c.security for c in m.cells] == ["none"]


@pytest.mark.parametrize("value", ["x509", "'tls; rm -rf /'", "[tls, TLS]", "1"])
def test_a_security_mode_outside_the_enum_is_one_line(tmp_path, value):
    with pytest.raises(XcbError) as e:
        load(tmp_path, BASE.replace("files: 4}", f"files: 4, security: {value}}}"))
    msg = str(e.value)
    assert "m.yaml" in msg and "security" in msg and "not one of none, tls, scitokens, macaroons" in msg
    assert "\n" not in msg

