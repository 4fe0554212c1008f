"""Keep tokens, passwords and keys out of results, logs and reports.

Two mechanisms, used together:

- redaction by name: an option (``--fts-token X``, ``--fts-token=X``) or a mapping key
  (``{"fts_token": ...}``, ``FTS_TOKEN=...``) whose name says it holds a secret has its value
  replaced by ``REDACTED``, whatever the value is;
- redaction by value: a secret xcbench was handed (a token from a flag, an environment variable
  or a file) is registered with :func:`register`, and :func:`scrub` replaces it in any text
  (an exception from a client library that quotes its request headers, a JSONL line, a log).

The result store calls these on every manifest and record it writes, so a command only has to
register what it was given.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from xcbench.errors import add_scrubber

REDACTED = "<redacted>"
# a name holding any of these anywhere is secret (fts_token, X509_USER_PASSWORD, api_secret ...)
_SUBSTRINGS = ("token", "password", "passwd", "secret", "keyring", "credential", "private",
               "apikey", "cert-key", "cert_key", "bearer", "cookie")
# ... and these as a whole word of the name (--key, --fts-key, ukey, X509_USER_PROXY, auth)
_WORDS = ("key", "ukey", "proxy", "auth", "authorization", "pass", "pw", "pwd", "sig")
_SPLIT = re.compile(r"[-_.\s]+")
# secrets in free text whatever their value: HTTP auth headers, URL query tokens
_TEXT_PATTERNS = (
    re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?(?:bearer|basic|token)?\s*)[^\s'\",}]+"),
    re.compile(r"(?i)(\b(?:access_token|fts_access_token|token|password|passwd)"
               r"['\"]?\s*[=:]\s*['\"]?)[^\s'\",}&]+"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
)
_KEEP = ("fingerprint",)  # versions and digests (of a keyring file too): no secret, kept exact
# a mapping's "key" names something (a sysctl, a table column): only an option --key is a secret
_MAPPING_NAMES = ("key",)
_MIN_LEN = 4  # shorter registered values would blank out ordinary words

_lock = threading.Lock()
_known: set[str] = set()


def is_secret_name(name: Any) -> bool:
    """Does an option/key/variable name say that its value is a secret?"""
    n = str(name).lower().lstrip("-")
    if any(s in n for s in _SUBSTRINGS):
        return True
    return any(w in _WORDS for w in _SPLIT.split(n))


def register(value: str | None) -> None:
    """Remember a secret value so that :func:`scrub` removes it from any text."""
    if value is not None:
        value = str(value).strip()
        if len(value) >= _MIN_LEN:
            with _lock:
                _known.add(value)


def forget_all() -> None:
    """Drop every registered value (tests)."""
    with _lock:
        _known.clear()


def scrub(text: str) -> str:
    """``text`` with every registered secret and every auth header/query token replaced."""
    if not text:
        return text
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for v in known:
        if v in text:
            text = text.replace(v, REDACTED)
    for pat in _TEXT_PATTERNS:
        text = pat.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def scrub_known(text: str) -> str:
    """Only the registered values (cheap: for record lines, whose keys are not free text)."""
    with _lock:
        if not _known:
            return text
        known = sorted(_known, key=len, reverse=True)
    for v in known:
        if v in text:
            text = text.replace(v, REDACTED)
    return text


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with the values of secret options replaced (``--opt v`` and ``--opt=v``).

    After a secret option without ``=`` the next word is its value, unless it is an option
    itself (a flag such as ``--fts-no-verify`` is not secret by name anyway)."""
    out: list[str] = []
    take_next = False
    for word in (str(a) for a in argv):
        if take_next:
            take_next = False
            if not word.startswith("-") or word == "-":
                out.append(REDACTED)
                continue
        if word.startswith("-") and word != "--":
            name, eq, _ = word.partition("=")
            if is_secret_name(name):
                if eq:
                    out.append(f"{name}={REDACTED}")
                    continue
                take_next = True
            out.append(scrub(word) if not eq else f"{name}={scrub(word[len(name) + 1:])}")
            continue
        out.append(scrub(word))
    return out


def redact(value: Any) -> Any:
    """A copy of ``value`` (mappings, lists, strings, nested) with secrets removed: a secret
    key's value becomes ``REDACTED``; strings are scrubbed; an ``argv``/``command`` list is
    redacted as a command line."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if k in _KEEP:
                out[k] = v
            elif str(k).lower() in _MAPPING_NAMES:
                out[k] = redact(v)
            elif is_secret_name(k) and v not in (None, "", False):
                out[k] = REDACTED if not isinstance(v, bool) else v
            elif str(k).lower() in ("argv", "command", "cmd", "cmdline") and \
                    isinstance(v, (list, tuple)):
                out[k] = redact_argv(v)
            else:
                out[k] = redact(v)
        return out
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    if isinstance(value, str):
        return scrub(value)
    return value


def redact_env(env: Mapping[str, Any]) -> dict[str, Any]:
    """An environment dump without secret variables' values (FTS_TOKEN, X509_USER_PROXY ...)."""
    return redact(dict(env))


add_scrubber(scrub)  # every XcbError message passes through it
