"""Benchmark: push rate through origins on emulated gateway hosts, 2 origins against 1.

Emulated hosts (network namespaces on a bridge): ga and gb, each with a CPU quota of --cores,
and gr for the cmsd redirector. A tmpfs gateway with 1 origin (on ga) and then with 2 origins
(on ga and gb, behind the redirector on gr); --files files of --size MiB pushed in parallel with
xrdcp from the root namespace; every file's adler32 checked. Prints MiB/s of each and the ratio
(with the origins CPU-bound at their quota, 2 origins should approach 2x; the cmsd's 1 s lookup
of a new file is paid once per file behind the redirector). Needs root; removes all it made.

    .venv/bin/python benchmarks/bench_gateway_hosts.py [--cores 0.25] [--files 8] [--size 96]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import zlib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from xcbench.cell import Cell  # noqa: E402
from xcbench.hosts import load_inventory  # noqa: E402
from xcbench.hosts.emulate import down, free_network, up  # noqa: E402
from xcbench.run.session import CellSession  # noqa: E402
from xcbench.system import proc  # noqa: E402


def push(gw, files: list[Path], tag: str) -> float:
    t0 = time.monotonic()
    ps = [proc.spawn(["xrdcp", "--nopbar", "-f", f, gw.url(f"/{tag}-{f.name}")], env=gw.client_env)
          for f in files]
    if [p.popen.wait(timeout=600) for p in ps] != [0] * len(ps):
        raise SystemExit("an xrdcp failed")
    seconds = time.monotonic() - t0
    for f in files:
        out = proc.run(["xrdfs", gw.root_url, "query", "checksum", f"/{tag}-{f.name}"]).stdout
        want = f"{zlib.adler32(f.read_bytes()) & 0xffffffff:08x}"
        if out.replace("\0", " ").split()[-1] != want:
            raise SystemExit(f"checksum mismatch on {f.name}")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cores", type=float, default=0.25)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--size", type=int, default=96, help="MiB per file")
    a = ap.parse_args()
    tag = str(os.getpid() % 10000)
    scratch = Path(tempfile.mkdtemp(prefix="xcb-bench-gwhosts-"))
    scratch.chmod(0o755)
    net = list(free_network().hosts())
    gw = {"transport": "netns", "cores": a.cores}
    data = {"bridge": {"name": f"xcbb{tag}", "address": f"{net[0]}/24"},
            "hosts": {f"ga{tag}": {"roles": ["gateway"], "address": str(net[20]), **gw},
                      f"gb{tag}": {"roles": ["gateway"], "address": str(net[21]), **gw},
                      f"gr{tag}": {"roles": ["redirector"], "transport": "netns",
                                   "address": str(net[30])}}}
    (scratch / "hosts.yaml").write_text(yaml.safe_dump(data))
    inv = load_inventory(scratch / "hosts.yaml")
    state = scratch / "state"
    size = a.size << 20
    try:
        up(inv, state)
        src = []
        for i in range(a.files):
            f = scratch / f"f{i}.bin"
            f.write_bytes(os.urandom(size))
            src.append(f)
        rates = {}
        for origins in (1, 2):
            cell = Cell(id=f"bench-o{origins}", label="bench", backend="tmpfs",
                        tmpfs_size=size * a.files + (256 << 20), origins=origins)
            procs = proc.ProcessSet()
            wd = scratch / cell.id
            wd.mkdir()
            wd.chmod(0o755)
            try:
                with CellSession(cell, cluster=None, workdir=wd, procs=procs, hosts=inv) as s:
                    seconds = push(s.gateway, src, cell.id)
                    load = s.origin_check()
            finally:
                procs.stop_all()
            rates[origins] = a.files * size / seconds / 2**20
            print(f"{origins} origin(s) at {a.cores} cores each: {a.files} x {a.size} MiB in "
                  f"{seconds:.2f} s = {rates[origins]:.0f} MiB/s; files per origin: "
                  + ", ".join(f"{r['origin']}@{r['host']} {r['files']}" for r in load))
        print(f"ratio 2 origins / 1 origin: {rates[2] / rates[1]:.2f}")
    finally:
        down(state, inv)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
