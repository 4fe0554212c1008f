"""The run's transfer engine: ``campaign.engine`` (local | fts3) and ``campaign.fts`` of a matrix.

``engine: local`` (the default) runs each level with xcbench's own driver (dispatch.py).
``engine: fts3`` makes each concurrency level of a cell one FTS3 job (xcbench.scaleout.fts3):
third-party copies from the run's tmpfs source gateway into the cell's gateway(s), the level set
as the link's min/max active (POST /config/links; refused without config rights: a finding, and
FTS's own optimizer decides, recorded per level), records streamed while the job runs, the job
cancelled on Ctrl-C.

The matrix names where the token is, never the token::

    campaign:
      engine: fts3
      fts: {endpoint: https://fts3.example.org:8446, token_file: ~/.config/fts/token,
            cert: /tmp/x509up_u1000, verify: true, link_limits: true}

``token_file`` (a file holding the OAuth2 token) or ``token_env`` (the name of an environment
variable holding it), or ``cert`` (an X509 proxy/certificate PEM) for FTS servers without tokens.
The token is read when a level starts and registered with xcbench.system.secrets, so no record, log or
manifest can carry it.

Time-based levels (``duration``/``steady``) are refused under fts3: an FTS job is a list of
files that runs to its end, and a level cut by cancelling it would show up as CANCELED transfers
in the FTS server's own monitoring, and FTS cannot cycle a dataset. Size an fts3 level with
``files``.
"""

from __future__ import annotations

import os
import re
import weakref
from functools import partial
from pathlib import Path
from typing import Any

from xcbench.errors import XcbError
from xcbench.scaleout import fts3
from xcbench.system import secrets
from xcbench.system.ports import cleartext_token_problem
from xcbench.system.signals import Interrupted

ENGINES = ("local", "fts3")
FTS_KEYS = ("endpoint", "token_file", "token_env", "cert", "verify", "link_limits")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FTS_MODES = ("tpc-root", "tpc-http")
POLL = 1.0  # seconds between polls of the job: a level of a few seconds still streams
# per run (its stop event): the cells whose refused link limits are already a finding
_SAID: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def engine_problems(section: Any) -> list[tuple[str, str]]:
    """(field, why) of the ``engine``/``fts`` keys of one campaign mapping (the matrix's
    defaults or a backend's), checked as written: types, names, no literal token."""
    if not isinstance(section, dict):
        return []
    out: list[tuple[str, str]] = []
    engine = section.get("engine", "local")
    if engine not in ENGINES:
        out.append(("engine", f"{engine!r} is not one of {', '.join(ENGINES)}"))
    if "fts" not in section:
        return out
    fts = section["fts"]
    if not isinstance(fts, dict):
        return out + [("fts", f"is not a mapping of {', '.join(FTS_KEYS)}")]
    for key in fts:
        if key not in FTS_KEYS and secrets.is_secret_name(key):  # never echo its value
            out.append((f"fts.{key}", "a token is never written in a matrix (the matrix is copied "
                        "into the results): give token_file: PATH or token_env: NAME"))
        elif key not in FTS_KEYS:
            out.append((f"fts.{key}", f"unknown key (allowed: {', '.join(FTS_KEYS)})"))
    ep = fts.get("endpoint")
    if ep is not None and (not isinstance(ep, str) or not ep.startswith(("https://", "http://"))
                           or len(ep.split("://", 1)[1].strip("/")) == 0):
        out.append(("fts.endpoint", f"{ep!r} is not an http(s):// URL of an FTS3 REST server"))
    elif isinstance(ep, str) and "@" in ep.split("://", 1)[1].split("/", 1)[0]:
        out.append(("fts.endpoint", "credentials in the URL are refused (they would be "
                    "recorded): give token_file or token_env"))
    elif ("token_file" in fts or "token_env" in fts) and isinstance(ep, str):
        why = cleartext_token_problem(ep)
        if why is not None:
            out.append(("fts.endpoint", why))
    if "token_file" in fts and "token_env" in fts:
        out.append(("fts.token_env", "give token_file or token_env, not both"))
    for key in ("token_file", "cert"):
        if key in fts and (not isinstance(fts[key], str) or not fts[key].strip()):
            out.append((f"fts.{key}", f"{fts[key]!r} is not a file path"))
    if "token_env" in fts and (not isinstance(fts["token_env"], str)
                               or not _ENV_NAME.fullmatch(fts["token_env"])):
        out.append(("fts.token_env", f"{fts['token_env']!r} is not an environment variable "
                    "name (the variable holds the token, not the matrix)"))
    for key in ("verify", "link_limits"):
        if key in fts and not isinstance(fts[key], bool):
            out.append((f"fts.{key}", f"{fts[key]!r} is not true/false"))
    return out


def cell_problems(campaign: Any, mode: str) -> list[tuple[str, str]]:
    """(field, why) of a cell whose merged campaign settings choose ``engine: fts3``: what the
    level needs (endpoint, a TPC mode, a file-count level) and that its credential is there."""
    if not isinstance(campaign, dict) or campaign.get("engine", "local") != "fts3":
        return []
    given = campaign.get("fts")
    fts: dict = given if isinstance(given, dict) else {}
    out: list[tuple[str, str]] = []
    if not fts.get("endpoint"):
        out.append(("fts.endpoint", "missing: engine fts3 needs the FTS3 REST server's URL"))
    if mode not in FTS_MODES:
        out.append(("engine", f"fts3 moves data between storages (third-party copy): the "
                    f"cell's mode must be one of {', '.join(FTS_MODES)}, not {mode}"))
    for key in ("duration", "steady"):
        if campaign.get(key) is not None:
            out.append((key, "time-based levels do not run under engine fts3 (an FTS job is a "
                        "list of files that runs to its end): size the level with files"))
    if not any(k in fts for k in ("token_file", "token_env", "cert")):
        out.append(("fts", "no credential: give token_file: PATH or token_env: NAME (an OAuth2 "
                    "token), or cert: PEM (an X509 proxy)"))
    try:
        credentials(fts)
    except XcbError as e:
        fieldname, _, why = str(e).partition(": ")
        out.append((fieldname, why))
    return out


def credentials(fts: dict) -> tuple[str | None, str | None]:
    """(token, cert path) of an ``fts`` mapping: the token read from its file or variable and
    registered as a secret. XcbError "fts.<field>: why" (never quoting the token)."""
    token = None
    if isinstance(fts.get("token_file"), str):
        path = Path(os.path.expanduser(fts["token_file"]))
        try:
            token = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            # no "<path>: " here: secrets.scrub takes "token: x" for a secret
            raise XcbError(f"fts.token_file: cannot read {path} "
                           f"({getattr(e, 'strerror', None) or type(e).__name__})") from None
        if not token:
            raise XcbError(f"fts.token_file: {path} is empty")
    elif isinstance(fts.get("token_env"), str):
        token = (os.environ.get(fts["token_env"]) or "").strip()
        if not token:
            raise XcbError(f"fts.token_env: ${fts['token_env']} is not set or empty")
    secrets.register(token)
    cert = fts.get("cert")
    if isinstance(cert, str):
        cert = os.path.expanduser(cert)
        if not os.access(cert, os.R_OK):
            raise XcbError(f"fts.cert: {cert}: not a readable file")
    return token or None, cert if isinstance(cert, str) else None


def pop_engine(settings: dict) -> Any:
    """Take ``engine``/``fts`` out of a cell's campaign settings (they are not CampaignSpec's);
    None for the local driver, else a callable with run_campaign's signature."""
    engine = settings.pop("engine", "local")
    fts = settings.pop("fts", None) or {}
    if engine == "local":
        return None
    if engine == "fts3":
        return partial(run_level, fts=dict(fts))
    raise XcbError(f"campaign: engine: {engine!r} is not one of {', '.join(ENGINES)}")


def run_level(spec: Any, *, dest: Any, source: Any, sink: Any = None, cell_id: str = "",
              progress: bool = False, stop_event: Any = None, fts: dict) -> dict:
    """One concurrency level of a cell as one FTS3 job; returns its CAMPAIGN row."""
    del progress  # FTS has its own monitoring; the run's view follows the streamed records
    token, cert = credentials(fts)
    try:
        return fts3.submit_campaign(spec, fts=fts["endpoint"], dest=dest, source=source, sink=sink,
                               cell_id=cell_id, token=token, ucert=cert, ukey=cert,
                               verify=fts.get("verify", True),
                               link_limits=fts.get("link_limits", True), poll=POLL,
                               stop_event=stop_event,
                               said=_SAID.setdefault(stop_event, set()) if stop_event else None)
    except (XcbError, Interrupted, KeyboardInterrupt):
        raise
    except Exception as e:
        # the fts3 client's errors (401, 403, a server gone) end the cell as one line, scrubbed
        # of the token: the runner writes an unexpected exception's traceback to a raw file
        raise XcbError(secrets.scrub(f"fts3 at {fts['endpoint']}: {type(e).__name__}: {e}")) \
            from None
