"""The CI skip guard (tests/skip_guard.py): under CI=true a skip outside the allow-list fails."""

from __future__ import annotations

import pytest

from tests import skip_guard

OPTS = ("-p", "tests.skip_guard", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning")

INNER = """
import pytest

def test_runs():
    assert True

def test_skips_in_call():
    pytest.skip("fio not installed")

@pytest.mark.skipif(True, reason="no sshd")
def test_skips_by_mark():
    pass

@pytest.fixture
def needs_root():
    pytest.skip("needs root")

def test_skips_in_fixture(needs_root):
    pass

def test_allowed():
    pytest.skip("right even on a complete machine")

@pytest.mark.parametrize("x", [1, 2])
def test_allowed_param(x):
    pytest.skip("parametrized, allowed by its base id")

@pytest.mark.xfail(reason="known bug")
def test_xfails():
    assert False
"""


@pytest.fixture
def inner(pytester, monkeypatch):
    pytester.makepyfile(test_inner=INNER)
    monkeypatch.setattr(skip_guard, "ALLOWED", {
        "test_inner.py::test_allowed": "allowed on purpose",
        "test_inner.py::test_allowed_param": "allowed on purpose",
    })
    return pytester


def test_under_ci_a_skip_outside_the_allow_list_fails_and_says_how_to_allow_it(inner, monkeypatch):
    monkeypatch.setenv("CI", "true")
    r = inner.runpytest(*OPTS, "-rA")
    # a skip at setup (a skipif mark, a fixture) fails as a setup error, one in the call as a failure
    r.assert_outcomes(passed=1, failed=1, errors=2, skipped=3, xfailed=1)
    out = r.stdout.str()
    assert "skipped under CI=true: fio not installed" in out
    assert "skipped under CI=true: no sshd" in out
    assert "skipped under CI=true: needs root" in out
    assert out.count("add its test id and the reason to ALLOWED in tests/skip_guard.py") >= 3
    assert "FAILED test_inner.py::test_allowed " not in out


def test_outside_ci_a_skip_stays_a_skip(inner, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    r = inner.runpytest(*OPTS)
    r.assert_outcomes(passed=1, skipped=6, xfailed=1)


def test_a_module_that_skips_itself_at_import_fails_under_ci(pytester, monkeypatch):
    monkeypatch.setenv("CI", "true")
    pytester.makepyfile(test_mod="import pytest\npytest.skip('no cgroups', allow_module_level=True)\n"
                                 "def test_x():\n    pass\n")
    r = pytester.runpytest(*OPTS)
    assert r.ret != 0
    assert "skipped under CI=true: no cgroups" in r.stdout.str()


def test_allowed_matches_patterns_and_ignores_parameters():
    table = {"tests/a.py::test_one": "one", "tests/b.py::*": "all of b"}
    assert skip_guard.allowed("tests/a.py::test_one[HUP]", table) == "one"
    assert skip_guard.allowed("tests/b.py::test_any", table) == "all of b"
    assert skip_guard.allowed("tests/a.py::test_two", table) is None


def test_every_allowed_entry_names_a_test_that_exists_and_gives_a_reason(request):
    root = request.config.rootpath
    for pattern, why in skip_guard.ALLOWED.items():
        path, _, name = pattern.partition("::")
        src = (root / path).read_text()
        assert f"def {name.split('[')[0]}(" in src, pattern
        assert len(why) > 20, pattern
