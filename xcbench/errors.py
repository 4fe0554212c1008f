from xcbench.system.secrets import scrub

"""The one exception type users see: a single line naming what is wrong and where."""


class XcbError(Exception):
    """A user-facing error. The CLI prints ``xcbench: error: <message>`` and exits 2, no traceback.

    Messages are one line and name the file, cell and field when there is one, e.g.
    ``layouts/x.yaml: cell cephfs-4M-ec: stripe_unit: 100000 is not a multiple of 64 KiB``.
    """

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(scrub(" ".join(str(message).split())))
