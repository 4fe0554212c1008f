"""Capture real xrd.report packets from this machine's xrootd (how the files beside this were made).

    /work/main/.venv/bin/python tests/data/xrd-report/capture.py [OUTDIR]

Starts two plain xrootd servers (tmpfs, loopback, run as the xrootd user) and a cmsd manager,
all reporting every 1 s to one ReportListener; pushes 64 MiB with xrdcp (root://), 16 MiB over
HTTP, reads the file back, makes one root:// third-party copy A -> B, then keeps one packet per
phase. Not run by the tests (the tests read the kept packets).
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

from xcbench.system import proc
from xcbench.telemetry.xrdreport import ReportListener, parse_report


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def owned_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    shutil.chown(path, "xrootd", "xrootd")
    return path


def start(kind: str, name: str, base: Path, cfg: str, procs: proc.ProcessSet) -> Path:
    d = owned_dir(base / name)
    (d / "x.cfg").write_text(cfg)
    log = d / "x.log"
    proc.spawn([kind, "-R", "xrootd", "-c", d / "x.cfg", "-l", log, "-n", name], cwd=d,
               procs=procs, name=kind)
    real_log = d / name / "x.log"
    for _ in range(100):
        if "initialization completed" in proc.tail(real_log, 200):
            return real_log
        time.sleep(0.1)
    raise RuntimeError(f"{name} did not start: {proc.tail(real_log)}")


def slow_upload(url: str, chunk: bytes, n: int) -> None:
    """One open file, one chunk a second: counters must move while the link stays open."""
    from XRootD import client
    from XRootD.client.flags import OpenFlags

    f = client.File()
    st, _ = f.open(url, OpenFlags.DELETE)
    assert st.ok, st.message
    for i in range(n):
        f.write(chunk, offset=i * len(chunk))
        time.sleep(1)
    f.close()


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="xcb-telemetry-capture-", dir="/dev/shm"))
    shutil.chown(base, "xrootd", "xrootd")
    procs = proc.ProcessSet()
    listener = ReportListener(save_dir=base / "packets").start()
    pa, pb, ph, pm = free_port(), free_port(), free_port(), free_port()
    common = ("all.export /\nxrootd.chksum adler32\n"
              f"xrd.report {listener.addr} every 1s all\n")
    try:
        start("xrootd", "gwa", base, common + f"oss.localroot {owned_dir(base / 'a')}\n"
              f"xrd.port {pa}\nxrd.protocol XrdHttp:{ph} libXrdHttp.so\n"
              "ofs.tpc pgm /usr/bin/xrdcp --server\n"
              f"all.adminpath {base}/gwa\nall.pidpath {base}/gwa\n", procs)
        start("xrootd", "gwb", base, common + f"oss.localroot {owned_dir(base / 'b')}\n"
              f"xrd.port {pb}\nall.adminpath {base}/gwb\nall.pidpath {base}/gwb\n"
              "ofs.tpc pgm /usr/bin/xrdcp --server\n", procs)
        start("cmsd", "mgr", base, f"all.role manager\nall.manager 127.0.0.1:{pm}\n"
              f"xrd.port {pm}\nall.export /\nall.adminpath {base}/mgr\nall.pidpath {base}/mgr\n"
              f"xrd.report {listener.addr} every 1s all\n", procs)
        listener.wait(6)
        marks = {"idle": listener.received}
        src = base / "src"
        src.write_bytes(os.urandom(64 << 20))
        proc.run(["xrdcp", "-f", src, f"root://127.0.0.1:{pa}//up64"])
        time.sleep(1.5)
        marks["after-root-upload"] = listener.received
        src16 = base / "src16"
        src16.write_bytes(src.read_bytes()[: 16 << 20])
        proc.run(["curl", "-sS", "-f", "-T", src16, f"http://127.0.0.1:{ph}/http16"])
        time.sleep(1.5)
        marks["after-http-upload"] = listener.received
        proc.run(["xrdcp", "-f", f"root://127.0.0.1:{pa}//up64", "/dev/null"])
        time.sleep(1.5)
        marks["after-read"] = listener.received
        tpc = proc.run(["xrdcp", "-f", "--tpc", "only", f"root://127.0.0.1:{pa}//up64",
                        f"root://127.0.0.1:{pb}//tpc64"], check=False)
        print("tpc:", tpc.returncode, tpc.stderr.strip()[-300:])
        time.sleep(2.5)
        marks["after-tpc"] = listener.received
        slow_from = listener.received
        slow_upload(f"root://127.0.0.1:{pa}//slow", src.read_bytes()[: 4 << 20], 4)
        time.sleep(1.5)
        slow_to = listener.received
    finally:
        procs.stop_all()
        listener.stop()
    packets = sorted((base / "packets").glob("*.xml"))
    print(f"{len(packets)} packets, marks {marks}")
    # the last packet of each server before each mark
    for phase, n in marks.items():
        for who in ("gwa", "gwb", "mgr"):
            for p in reversed(packets[:n]):
                rep = parse_report(p.read_bytes())
                if rep.header.get("ins") == who:
                    shutil.copy(p, out / f"{who}-{phase}.xml")
                    break
    k = 0
    for p in packets[slow_from:slow_to]:
        if parse_report(p.read_bytes()).header.get("ins") == "gwa":
            k += 1
            shutil.copy(p, out / f"gwa-slow-{k}.xml")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
