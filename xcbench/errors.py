"""The one exception type users see: a single line naming what is wrong and where."""

from __future__ import annotations

from collections.abc import Callable

# Text filters every message passes through. xcbench.system.secrets adds its scrubber when it is
# imported, which is before any secret can be registered (register() lives there): the error type
# stays on the ground floor and still never carries a token.
_SCRUBBERS: list[Callable[[str], str]] = []


def add_scrubber(fn: Callable[[str], str]) -> None:
    if fn not in _SCRUBBERS:
        _SCRUBBERS.append(fn)


class XcbError(Exception):
    """A user-facing error. The CLI prints ``xcbench: error: <message>`` and exits 2, no traceback.

    Messages are one line and name the file, cell and field when there is one, e.g.
    ``layouts/x.yaml: cell cephfs-4M-ec: stripe_unit: 100000 is not a multiple of 64 KiB``.
    """

    exit_code = 2

    def __init__(self, message: str):
        text = " ".join(str(message).split())
        for fn in _SCRUBBERS:
            text = fn(text)
        super().__init__(text)
