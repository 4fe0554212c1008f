"""Which daemons `cluster down` kills outright: its state is thrown away, so a clean stop
only matters while a mon hears it."""

import pytest

from xcbench.ceph.mini import _killed_outright


@pytest.mark.parametrize("name,memstore,mon_gone,killed", [
    ("osd.0", False, False, False),   # bluestore, mon up: told the mon, then exits
    ("osd.0", True, False, True),     # memstore dumps its RAM store on SIGTERM
    ("osd.1", False, True, True),     # no mon: it would wait osd_mon_shutdown_timeout
    ("mds.a", False, True, True),
    ("mds.a", False, False, True),    # its TERM shutdown outlasts any wait worth having
    ("mgr.x", False, True, False),
    ("prometheus", True, True, False),
])
def test_killed_outright(name, memstore, mon_gone, killed):
    assert _killed_outright(name, memstore, mon_gone) is killed
