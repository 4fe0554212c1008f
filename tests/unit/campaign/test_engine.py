"""campaign.engine / campaign.fts in a matrix: checked at load (one line naming file, cell and
field), a literal token refused whatever its key, the token read from a file or a variable and
registered as a secret, the local driver the default."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from xcbench.errors import XcbError
from xcbench.matrix import ClusterFacts, check_lines, load_matrix
from xcbench.scaleout.engine import credentials, pop_engine
from xcbench.system import secrets

FACTS = ClusterFacts()
TOKEN = "eyJhbGciOi-literal-token-value"


def matrix(tmp_path, campaign: str, modes: str = "[tpc-http]", backend: str = "") -> str:
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent(f"""
        defaults:
          modes: {modes}
          campaign: {campaign}
        backends:
          tmpfs: {{size: 1G{backend}}}
    """))
    return str(path)


@pytest.fixture
def token_file(tmp_path):
    p = tmp_path / "token"
    p.write_text(TOKEN + "\n")
    return p


def one_error(path: str) -> str:
    lines = check_lines(path, facts=FACTS)
    assert len(lines) == 1, lines
    return lines[0]


def test_default_engine_is_local(tmp_path):
    cell = load_matrix(matrix(tmp_path, "{timeout: 60}"), facts=FACTS).cells[0]
    settings = dict(cell.campaign)
    assert pop_engine(settings) is None and settings == {"timeout": 60}


def test_fts3_cell_loads_and_the_engine_keys_leave_the_spec_settings(tmp_path, token_file):
    path = matrix(tmp_path, f"{{engine: fts3, fts: {{endpoint: 'https://fts.example:8446', "
                            f"token_file: '{token_file}', link_limits: false}}, timeout: 60}}")
    cell = load_matrix(path, facts=FACTS).cells[0]
    settings = dict(cell.campaign)
    run = pop_engine(settings)
    assert settings == {"timeout": 60}  # what CampaignSpec takes
    assert run.keywords["fts"]["endpoint"] == "https://fts.example:8446"
    assert TOKEN not in repr(cell.settings())  # the cell (its id, the manifest) holds a path only


@pytest.mark.parametrize("key", ["token", "access_token", "fts_token", "password"])
def test_a_literal_token_in_the_matrix_is_refused_naming_the_field(tmp_path, key):
    path = matrix(tmp_path, f"{{engine: fts3, fts: {{endpoint: 'https://fts.example', {key}: {TOKEN}}}}}")
    lines = check_lines(path, facts=FACTS)  # first; then the cell's "no credential"
    line = lines[0]
    assert TOKEN not in "".join(lines)
    assert line.startswith(f"{path}: defaults.campaign: fts.{key}: a token is never written")
    assert TOKEN not in line
    with pytest.raises(XcbError) as e:
        load_matrix(path, facts=FACTS)
    assert TOKEN not in str(e.value)


def test_a_literal_token_in_a_backend_names_the_backend(tmp_path):
    path = matrix(tmp_path, "{engine: fts3}", backend=f", campaign: {{fts: {{token: {TOKEN}}}}}")
    assert check_lines(path, facts=FACTS)[0].startswith(f"{path}: backends.tmpfs.campaign: fts.token:")


def test_credentials_in_the_endpoint_url_are_refused(tmp_path, token_file):
    path = matrix(tmp_path, f"{{engine: fts3, fts: {{endpoint: 'https://me:{TOKEN}@fts.example', "
                            f"token_file: '{token_file}'}}}}")
    line = one_error(path)
    assert ": defaults.campaign: fts.endpoint: credentials in the URL" in line and TOKEN not in line


@pytest.mark.parametrize("campaign, where, fieldname, why", [
    ("{engine: fts4}", "defaults.campaign", "engine", "is not one of local, fts3"),
    ("{engine: fts3, fts: 'https://fts.example'}", "defaults.campaign", "fts", "is not a mapping"),
    ("{engine: fts3, fts: {endpoint: 'fts.example:8446', token_env: FTS_TOKEN}}",
     "defaults.campaign", "fts.endpoint", "is not an http(s):// URL"),
    ("{engine: fts3, fts: {endpoint: 'https://f', token_env: 'not a name'}}",
     "defaults.campaign", "fts.token_env", "is not an environment variable name"),
    ("{engine: fts3, fts: {endpoint: 'https://f', token_env: X, token_file: /x}}",
     "defaults.campaign", "fts.token_env", "not both"),
    ("{engine: fts3, fts: {endpoint: 'https://f', token_env: X, verify: 'no'}}",
     "defaults.campaign", "fts.verify", "is not true/false"),
    ("{engine: fts3, fts: {endpoint: 'https://f', token_env: X, link_limit: true}}",
     "defaults.campaign", "fts.link_limit", "unknown key"),
])
def test_structure_errors_name_file_section_and_field(tmp_path, campaign, where, fieldname, why):
    path = matrix(tmp_path, campaign)
    line = check_lines(path, facts=FACTS)[0]
    assert line.startswith(f"{path}: {where}: {fieldname}: ") and why in line


@pytest.mark.parametrize("campaign, modes, fieldname, why", [
    ("{engine: fts3, fts: {token_env: XCB_T}}", "[tpc-http]", "campaign.fts.endpoint", "missing"),
    ("{engine: fts3, fts: {endpoint: 'https://f', token_env: XCB_T}}", "[push]",
     "campaign.engine", "mode must be one of tpc-root, tpc-http, not push"),
    ("{engine: fts3, fts: {endpoint: 'https://f', token_env: XCB_T}, duration: 20s}", "[tpc-root]",
     "campaign.duration", "time-based levels do not run under engine fts3"),
    ("{engine: fts3, fts: {endpoint: 'https://f'}}", "[tpc-http]", "campaign.fts", "no credential"),
    ("{engine: fts3, fts: {endpoint: 'https://f', token_env: XCB_UNSET}}", "[tpc-http]",
     "campaign.fts.token_env", "$XCB_UNSET is not set"),
    ("{engine: fts3, fts: {endpoint: 'https://f', token_file: /nonexistent/token}}", "[tpc-http]",
     "campaign.fts.token_file", "cannot read /nonexistent/token (No such file"),
])
def test_cell_errors_name_the_cell(tmp_path, monkeypatch, campaign, modes, fieldname, why):
    monkeypatch.setenv("XCB_T", TOKEN)
    monkeypatch.delenv("XCB_UNSET", raising=False)
    path = matrix(tmp_path, campaign, modes)
    line = one_error(path)
    cell = load_matrix(matrix(tmp_path, "{}", modes), facts=FACTS).cells[0]
    assert line.startswith(f"{path}: cell {cell.label} (") and f"): {fieldname}: " in line, line
    assert why in line and TOKEN not in line


def test_fts_settings_without_engine_fts3_are_inert(tmp_path):
    """A defaults' fts block shared by backends that choose the engine themselves."""
    cell = load_matrix(matrix(tmp_path, "{fts: {endpoint: 'https://f', token_env: XCB_UNSET}}",
                              "[push]"), facts=FACTS).cells[0]
    assert pop_engine(dict(cell.campaign)) is None


def test_credentials_read_the_token_and_register_it_as_a_secret(token_file, monkeypatch):
    secrets.forget_all()
    try:
        assert credentials({"token_file": str(token_file)}) == (TOKEN, None)
        assert secrets.scrub(f"401 for Bearer {TOKEN} at x") == "401 for Bearer <redacted> at x"
        secrets.forget_all()
        monkeypatch.setenv("XCB_T", TOKEN + "-env")
        assert credentials({"token_env": "XCB_T"}) == (TOKEN + "-env", None)
        assert TOKEN + "-env" not in secrets.scrub_known(f"x {TOKEN}-env y")
    finally:
        secrets.forget_all()


def test_an_empty_token_file_is_refused(tmp_path):
    (tmp_path / "t").write_text("\n")
    with pytest.raises(XcbError, match=r"^fts.token_file: .* is empty$"):
        credentials({"token_file": str(tmp_path / "t")})


def test_cli_matrix_check_exits_2_with_one_line(tmp_path):
    path = matrix(tmp_path, f"{{engine: fts3, fts: {{endpoint: 'https://f', token: {TOKEN}}}}}")
    cp = subprocess.run([sys.executable, "-m", "xcbench", "matrix", "check", path],
                        capture_output=True, text=True)
    assert cp.returncode == 2 and "Traceback" not in cp.stderr
    out = cp.stdout + cp.stderr
    assert "fts.token" in out and TOKEN not in out


def test_an_fts3_client_error_ends_the_level_as_one_scrubbed_line(token_file, monkeypatch):
    """An error quoting the request (its Authorization header) must not carry the token into the
    cell's error (the manifest) nor into a traceback file."""
    import xcbench.scaleout.fts3 as fts3
    from xcbench.scaleout.engine import run_level

    def boom(*args, **kw):
        raise RuntimeError(f"HTTP 500 for headers {{'Authorization': 'Bearer {kw['token']}'}}")
    monkeypatch.setattr(fts3, "submit_campaign", boom)
    secrets.forget_all()
    try:
        with pytest.raises(XcbError) as e:
            run_level(object(), dest=None, source=None,
                      fts={"endpoint": "https://f", "token_file": str(token_file)})
    finally:
        secrets.forget_all()
    assert str(e.value).startswith("fts3 at https://f: RuntimeError: HTTP 500")
    assert TOKEN not in str(e.value) and e.value.__suppress_context__


class _Ctx:
    def __init__(self, refuse: bool = False):
        self.refuse, self.posted = refuse, []

    def post_json(self, path, body):
        if self.refuse:
            raise PermissionError("403 User has no config rights")
        self.posted.append((path, body))
        return "{}"


@pytest.mark.parametrize("optimizer, level, want", [
    (None, 3, (3, 3, 0)),                              # the level, fixed: FTS's optimizer off
    ({"mode": "aggressive"}, 8, (2, 8, 3)),            # FTS moves between min_active and the level
    ({"min_active": 2}, 1, (1, 1, 2)),                 # min never above the level's max
])
def test_link_limits_follow_the_level(optimizer, level, want):
    from xcbench.campaign.spec import CampaignSpec
    from xcbench.scaleout.fts3 import set_link_limits
    ctx = _Ctx()
    spec = CampaignSpec(concurrency=level, optimizer=optimizer, mode="tpc-http", campaign_id="c")
    got = set_link_limits(ctx, "https://src", "https://dst", spec)
    [(path, body)] = ctx.posted
    assert got["set"] and path == "/config/links"
    assert (body["min_active"], body["max_active"], body["optimizer_mode"]) == want
    assert (body["source"], body["destination"]) == ("https://src", "https://dst")


def test_refused_link_limits_are_recorded_with_the_request():
    from xcbench.campaign.spec import CampaignSpec
    from xcbench.scaleout.fts3 import links_finding, set_link_limits
    got = set_link_limits(_Ctx(refuse=True), "https://s", "https://d",
                          CampaignSpec(concurrency=4, mode="tpc-http", campaign_id="c"))
    assert got["set"] is False and got["requested"]["max_active"] == 4
    assert "no config rights" in got["error"]
    f = links_finding("cell1", got, "https://fts")
    assert f["cell_id"] == "cell1" and "not the level's 4" in f["why"] and f["severity"] == "warning"
