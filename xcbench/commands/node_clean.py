"""xcbench node-clean: remove what a run's agents made on this host (hidden; run as a job step on
each node by xcbench.hosts.slurm when a run ends and by the next command after a kill -9).

What: the dirs in the scratch bases named with the run's scratch tag (``$XCBENCH_SCRATCH_TAG``,
given to every step of the run: xcbench.system.scratch), what was mounted below them first, and
whatever this host's own state home records of xcbench commands that died here (an agent that
Slurm killed with SIGKILL: xcbench.system.orphans.reap). One JSON line on stdout:

    {"node-clean": {"host": H, "removed": [dirs], "left": ["dir: why"], "reaped": "..."|null}}
"""

from __future__ import annotations

import json
import socket
import sys

from xcbench.errors import XcbError
from xcbench.system import orphans
from xcbench.system.scratch import TAG_ENV, remove_tagged, scratch_tag


def add_parser(sub):
    return sub.add_parser("node-clean", help="(internal) remove what a run's agents made here",
                          description="Remove the dirs named with the run's scratch tag "
                          f"(${TAG_ENV}) and what killed xcbench commands recorded here.")


def main(args) -> int:
    tag = scratch_tag()
    if tag is None:
        raise XcbError(f"node-clean: ${TAG_ENV} is not set (the run's scratch tag)")
    reaped = orphans.reap(grace=3.0)
    removed, left = remove_tagged(tag)
    print(json.dumps({"node-clean": {"host": socket.gethostname(), "removed": removed,
                                     "left": left, "reaped": reaped}}), flush=True)
    return 0 if not left else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(None))
