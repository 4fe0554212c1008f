"""A tmpfs target is sized against available memory: a campaign whose tmpfs would not fit is
refused in one line before anything is mounted or started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from xcbench.backends import tmpfs
from xcbench.cell import Cell
from xcbench.errors import XcbError

XCBENCH = [sys.executable, "-m", "xcbench.cli"]


def _tmpfs_mounts() -> list[str]:
    return [ln for ln in Path("/proc/self/mounts").read_text().splitlines() if "xcbench-" in ln.split()[0]]


def test_campaign_larger_than_memory_refused_before_any_mount(tmp_path):
    avail = psutil.virtual_memory().available
    size = 64 << 20
    files = int(avail / size) + 50  # the dataset alone is larger than what is available
    scratch = tmp_path / "tmp"  # the campaign's workdirs (mkdtemp) would appear here first
    scratch.mkdir()
    r = subprocess.run(XCBENCH + ["campaign", "--gateway", "tmpfs", "--files", str(files), "--size", "64M",
                                  "--store", str(tmp_path / "results"), "--no-progress"],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "TMPDIR": str(scratch)})
    assert r.returncode == 2, r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and "Traceback" not in r.stderr
    assert "does not fit in memory" in err[0] and "--delete-after-verify" in err[0]
    assert list(scratch.iterdir()) == []  # no workdir made: nothing mounted, no gateway
    assert not [m for m in _tmpfs_mounts() if str(tmp_path) in m]
    assert not (tmp_path / "results").exists()  # nothing recorded: nothing ran


def test_delete_after_verify_holds_only_files_in_flight(tmp_path):
    """The same campaign with --delete-after-verify needs a tmpfs of the files in flight only."""
    from types import SimpleNamespace

    from xcbench.campaign import CampaignSpec
    from xcbench.commands.campaign import tmpfs_sizes
    spec = CampaignSpec(files=100000, file_size="64M", concurrency=4)
    dst, src = tmpfs_sizes(spec, SimpleNamespace(gateway="tmpfs", delete_after_verify=True, source=None))
    assert dst == 1 << 30 and src is None
    with pytest.raises(XcbError, match="does not fit in memory"):
        tmpfs_sizes(spec, SimpleNamespace(gateway="tmpfs", delete_after_verify=False, source=None))


def test_backend_refuses_a_cell_larger_than_memory(tmp_path):
    avail, reserve = tmpfs.memory_room()
    b = tmpfs.BACKEND(None, tmp_path)
    with pytest.raises(XcbError, match="cell big: tmpfs_size: a tmpfs of .* does not fit in memory"):
        b.prepare(Cell(id="big", label="big", backend="tmpfs", tmpfs_size=avail - reserve + (1 << 30)))
    assert list(tmp_path.iterdir()) == []  # nothing made


def test_reserve_is_stated():
    avail, reserve = tmpfs.memory_room()
    assert reserve >= tmpfs.RESERVE_MIN and reserve >= psutil.virtual_memory().total * tmpfs.RESERVE_FRACTION - 1
    assert os.sysconf("SC_PAGE_SIZE") > 0 and avail > 0
