"""Checks of a started gateway with real clients, reusable for every backend.

    from tests.support.gwcheck import upload_and_verify
    evidence = upload_and_verify(gateway, "cephfs", tmp_path)

uploads with xrdcp, gfal2 (python binding, checksum mode both, in a subprocess so XRootD's
client environment stays per-call) and an HTTP PUT; reads every file back; and compares the
gateway's adler32 with zlib's. Every client runs with ``gateway.client_env``. gfal2 uses http://
into XrdCeph (root:// fails there by design: XrdCeph refuses the chmod gfal2 sends).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import zlib
from pathlib import Path

import requests

from xcbench.backends.tmpfs import BACKEND as TMPFS
from xcbench.cell import Cell
from xcbench.gateway import start_gateway
from xcbench.system import proc


@contextlib.contextmanager
def xrootd_workdir(prefix: str):
    """A scratch dir the xrootd user can reach (pytest's tmp_path is 0700), removed after."""
    d = Path(tempfile.mkdtemp(prefix=prefix))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def tmpfs_gateways(workdir: Path, names, size: int = 64 << 20, **gateway_kw):
    """Started gateways, one per name, each on its own tmpfs target; all stopped and the
    targets removed afterwards."""
    procs = proc.ProcessSet()
    backend = TMPFS(None, workdir, procs)
    targets, gws = [], []
    try:
        for n in names:
            targets.append(backend.prepare(Cell(id=n, label=n, backend="tmpfs", tmpfs_size=size)))
            gws.append(start_gateway(targets[-1], workdir=workdir, procs=procs, name=n,
                                     **gateway_kw))
        yield gws
    finally:
        for gw in gws:
            gw.stop()
        procs.stop_all()
        for t in targets:
            backend.cleanup(t)


GFAL_COPY = r"""
import json, sys, gfal2
src, dst = sys.argv[1], sys.argv[2]
ctx = gfal2.creat_context()
p = ctx.transfer_parameters()
p.overwrite = True
p.timeout = 120
p.set_checksum(gfal2.checksum_mode.both, "ADLER32", "")
try:
    ctx.filecopy(p, src, dst)
    print(json.dumps({"ok": True, "checksum": ctx.checksum(dst, "ADLER32")}))
except gfal2.GError as e:
    print(json.dumps({"ok": False, "error": str(e)}))
"""


def adler32_hex(data: bytes) -> str:
    return f"{zlib.adler32(data) & 0xffffffff:08x}"


def make_file(path: Path, size: int, seed: int = 0) -> bytes:
    """A file of ``size`` pseudo-random bytes (fast, reproducible)."""
    import random
    data = random.Random(seed).randbytes(size)
    path.write_bytes(data)
    return data


def gateway_checksum(gateway, name: str) -> str:
    """adler32 the gateway reports for ``name`` (xrdfs query checksum)."""
    out = proc.run(["xrdfs", gateway.root_url, "query", "checksum", "/" + name.lstrip("/")],
                   env=gateway.client_env, timeout=60).stdout
    m = re.search(r"adler32\s+([0-9a-fA-F]+)", out.replace("\x00", ""))
    assert m, f"no adler32 in {out!r}"
    return m.group(1).lower().zfill(8)


def xrdcp_put(gateway, local: Path, name: str) -> None:
    proc.run(["xrdcp", "-f", "--nopbar", local, gateway.url(name)], env=gateway.client_env, timeout=120)


def xrdcp_get(gateway, name: str, local: Path) -> bytes:
    proc.run(["xrdcp", "-f", "--nopbar", gateway.url(name), local], env=gateway.client_env, timeout=120)
    return local.read_bytes()


def gfal_copy(gateway, src: str, dst: str) -> dict:
    res = proc.run([sys.executable, "-c", GFAL_COPY, src, dst], env=gateway.client_env, timeout=180)
    return json.loads(res.stdout.strip().splitlines()[-1])


def http_put(gateway, local: Path, name: str) -> requests.Response:
    url = gateway.url(name, "http")
    if len(gateway.origins) > 1:
        # a redirector answers 307 without reading the body: ask it where to write first
        r = requests.put(url, data=b"", allow_redirects=False, timeout=120)
        if r.status_code in (301, 302, 307, 308):
            url = r.headers["Location"]
    with open(local, "rb") as fh:
        return requests.put(url, data=fh, timeout=120)


def upload_and_verify(gateway, backend_name: str, workdir: Path, size: int = 3 << 20,
                      prefix: str = "gwcheck") -> dict:
    """Upload with xrdcp, gfal2 and HTTP PUT; read back; compare adler32. Returns the evidence."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    data = make_file(workdir / "src.bin", size, seed=size)
    want = adler32_hex(data)
    names = {c: f"{prefix}-{backend_name}-{c}-{os.getpid()}.bin" for c in ("xrdcp", "gfal2", "http")}
    evidence: dict = {"size": size, "adler32": want, "names": names}

    xrdcp_put(gateway, workdir / "src.bin", names["xrdcp"])

    scheme = "http" if backend_name == "rados" else "root"
    res = gfal_copy(gateway, (workdir / "src.bin").resolve().as_uri(), gateway.url(names["gfal2"], scheme))
    assert res["ok"], f"gfal2 copy over {scheme}:// failed: {res.get('error')}"
    evidence["gfal2_scheme"] = scheme
    evidence["gfal2_checksum"] = res["checksum"]

    r = http_put(gateway, workdir / "src.bin", names["http"])
    assert r.status_code in (200, 201, 204), f"HTTP PUT: {r.status_code} {r.text[:200]}"

    for client, name in names.items():
        back = xrdcp_get(gateway, name, workdir / f"back-{client}.bin")
        assert back == data, f"{client}: read back {len(back)} bytes differ from the {size} written"
        got = gateway_checksum(gateway, name)
        assert got == want, f"{client}: gateway adler32 {got} != local {want}"
        evidence[f"{client}_adler32"] = got
    r = requests.get(gateway.url(names["http"], "http"), timeout=120)
    assert r.status_code == 200 and r.content == data, f"HTTP GET: {r.status_code}, {len(r.content)} bytes"
    return evidence


def listeners(pids) -> list[tuple[str, int, int]]:
    """(address, port, pid) of every listening TCP socket of ``pids`` (ss -ltnp)."""
    pids = set(pids)
    out = proc.run(["ss", "-Hltnp"], timeout=30).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 6:
            continue
        addr, _, port = parts[3].rpartition(":")
        for pid in re.findall(r"pid=(\d+)", line):
            if int(pid) in pids:
                rows.append((addr.strip("[]"), int(port), int(pid)))
    return rows
