"""A TPC smoke test for any gateway: the checks a WLCG site's storage must pass, each with
pass/fail and the server's answer (``xcbench smoke``).

Read-only by default: only ``stat`` of the URL's path. With a writable path (``--write-path``)
it writes one small random file there and checks, in order, as the WLCG HTTP-TPC tests do:

    upload      PUT the file                       stat        HEAD: the size
    checksum    HEAD Want-Digest: adler32          download    GET: the same bytes
    tpc-pull    COPY to the endpoint with Source: (the endpoint pulls its own upload), the token
                forwarded as TransferHeaderAuthorization; the copy's adler32 checked
    tpc-push    COPY on the endpoint with Destination: (the endpoint pushes), the token for the
                destination as TransferHeaderAuthorization; the copy's adler32 checked
    roots-tpc   with ``--xroot URL``: a root(s):// third-party copy (XrdCl, thirdParty only)
    delete      DELETE every file it wrote, then HEAD says 404

The two COPYs are the campaign's HTTP-TPC (xcbench.clients.http_client: its headers, its
reading of the markers and the final line); the other requests go through requests.

Every file is named xcb-smoke-<random>-*, and only those are deleted. The token (``--token-file``
or BEARER_TOKEN_FILE) is read from its file, registered with xcbench.system.secrets and scrubbed from
every answer printed; the CA dir (``--ca-dir`` or X509_CERT_DIR) is what TLS is verified with.
"""

from __future__ import annotations

import os
import ssl
import sys
import time
import uuid
import zlib
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from xcbench.clients.base import Progress
from xcbench.clients.http_client import CopyReply, KeptAlive, tpc_headers
from xcbench.errors import XcbError
from xcbench.system import proc, secrets
from xcbench.system.secrets_policy import check_transport

SIZE = 1 << 20
ROOTS_TPC = """
import sys
from XRootD import client
p = client.CopyProcess()
p.add_job(sys.argv[1], sys.argv[2], thirdparty="only", force=True, tpctimeout=60)
p.prepare()
st, res = p.run()
job = (res or [{}])[0].get("status")
ok = st.ok and job is not None and job.ok
print(("ok " if ok else "failed ") + str(job.message if job is not None else st.message).strip())
sys.exit(0 if ok else 1)
"""
CHECKS = ("stat", "upload", "stat-file", "checksum", "download", "tpc-pull", "tpc-push", "roots-tpc",
          "delete")


@dataclass
class Check:
    name: str
    status: str  # pass | fail | skip
    answer: str  # the server's answer (status and first line), or why it was skipped

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _answer(resp: Any) -> str:
    return _said(resp.status_code, resp.reason, resp.text or "")


def _said(status: int, reason: str, body: str) -> str:
    """The server's status and its last success/failure line (else its last line), scrubbed."""
    lines = [ln for ln in body.strip().replace("\r", "").splitlines() if ln.strip()]
    last = [ln for ln in lines if ln.startswith(("success", "failure"))]
    text = (last or lines or [""])[-1][:240]
    return secrets.scrub(f"{status} {reason}" + (f": {text}" if text else ""))


def _copy_answer(reply: CopyReply) -> str:
    return _said(reply.status, reply.reason, reply.body or reply.final)


def _adler(data: bytes) -> str:
    return f"{zlib.adler32(data) & 0xFFFFFFFF:08x}"


class Smoke:
    def __init__(self, url: str, *, token: str | None, ca_dir: str | None, write_path: str | None,
                 xroot: str | None, timeout: float = 120):
        p = urlsplit(url)
        if p.scheme not in ("http", "https", "davs") or not p.netloc:
            raise XcbError(f"smoke: {url!r}: give the endpoint's https:// or davs:// URL "
                           "(and --xroot root(s)://... for the roots:// TPC check)")
        self.base = f"{'http' if p.scheme == 'http' else 'https'}://{p.netloc}"
        self.path = p.path or "/"
        self.token, self.timeout = token, timeout
        self.verify: Any = ca_dir if ca_dir else True
        # the COPYs trust what requests does: the CA dir alone when given (the token is ours
        # to send, not the environment's)
        self.http = KeptAlive(context=ssl.create_default_context(capath=ca_dir) if ca_dir else None,
                              env_token=False)
        if token:  # the token (and the one it hands on for TPC) only over verified TLS or loopback
            check_transport(self.base, self.verify, "smoke")
        self.write_path = "/" + write_path.strip("/") if write_path else None
        self.xroot = xroot
        self.stem = f"xcb-smoke-{uuid.uuid4().hex[:10]}"
        self.written: list[str] = []
        self.results: list[Check] = []

    def _h(self, extra: dict | None = None) -> dict:
        h = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return {**h, **(extra or {})}

    def _req(self, method: str, path: str, **kw: Any):
        import requests
        return requests.request(method, self.base + path, verify=self.verify, timeout=self.timeout, **kw)

    def _add(self, name: str, ok: bool, answer: str) -> bool:
        self.results.append(Check(name, "pass" if ok else "fail", answer))
        return ok

    def _skip(self, name: str, why: str) -> None:
        self.results.append(Check(name, "skip", why))

    def _try(self, name: str, fn) -> bool:
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - a check fails with what the client said
            return self._add(name, False, secrets.scrub(f"{type(e).__name__}: {e}")[:300])

    def _digest(self, path: str) -> tuple[str | None, Any]:
        r = self._req("HEAD", path, headers=self._h({"Want-Digest": "adler32"}))
        d = r.headers.get("Digest", "")
        return (d.split("=", 1)[1].split(",")[0].lower().zfill(8) if "adler32=" in d.lower() else None), r

    def run(self) -> list[Check]:
        try:
            return self._run()
        finally:
            self.http.disconnect()

    def _run(self) -> list[Check]:
        self._try("stat", self._stat)
        if self.write_path is None:
            for name in CHECKS[1:]:
                self._skip(name, "read-only: give --write-path PATH (a directory this token may write)")
            return self.results
        data = os.urandom(SIZE)
        src = f"{self.write_path}/{self.stem}.bin"
        if not self._try("upload", lambda: self._upload(src, data)):
            for name in CHECKS[2:-1]:
                self._skip(name, "the upload failed")
        else:
            self._try("stat-file", lambda: self._stat_file(src))
            self._try("checksum", lambda: self._checksum(src, data))
            self._try("download", lambda: self._download(src, data))
            self._try("tpc-pull", lambda: self._tpc_pull(src, data))
            self._try("tpc-push", lambda: self._tpc_push(src, data))
            if self.xroot:
                self._try("roots-tpc", lambda: self._roots_tpc(src, data))
            else:
                self._skip("roots-tpc", "no --xroot root(s):// URL given")
        self._try("delete", self._delete)
        return self.results

    def _stat(self) -> bool:
        r = self._req("PROPFIND", self.path, headers=self._h({"Depth": "0"}))
        return self._add("stat", r.status_code in (200, 207), _answer(r))

    def _upload(self, path: str, data: bytes) -> bool:
        import requests
        try:
            r = self._req("PUT", path, data=data, headers=self._h())
        except requests.exceptions.ConnectionError as e:
            # a server refusing the write may answer and close before the body is sent: ask
            # again with an empty body to get its answer (and remove what that may create)
            r = self._req("PUT", path, data=b"", headers=self._h())
            if r.status_code in (200, 201, 204):
                self.written.append(path)
            return self._add("upload", False, f"connection closed while sending ({type(e).__name__}); "
                             f"the answer to an empty PUT: {_answer(r)}")
        if r.status_code in (200, 201, 204):
            self.written.append(path)
        return self._add("upload", r.status_code in (200, 201, 204), _answer(r))

    def _stat_file(self, path: str) -> bool:
        r = self._req("HEAD", path, headers=self._h())
        size = r.headers.get("Content-Length")
        return self._add("stat-file", r.status_code == 200 and size == str(SIZE),
                         f"{r.status_code} {r.reason}, Content-Length {size} (want {SIZE})")

    def _checksum(self, path: str, data: bytes) -> bool:
        got, r = self._digest(path)
        return self._add("checksum", got == _adler(data),
                         f"{r.status_code} {r.reason}, Digest {r.headers.get('Digest')!r} (want adler32={_adler(data)})")

    def _download(self, path: str, data: bytes) -> bool:
        r = self._req("GET", path, headers=self._h())
        return self._add("download", r.status_code == 200 and r.content == data,
                         f"{r.status_code} {r.reason}, {len(r.content)} bytes "
                         f"{'identical' if r.content == data else 'DIFFERENT'}")

    def _copy(self, at: str, headers: dict) -> CopyReply:
        """An HTTP-TPC COPY sent to ``at`` (a path of the endpoint), within the timeout."""
        return self.http.copy(self.base + at, self._h(headers), time.time() + self.timeout, Progress())

    def _tpc_result(self, name: str, reply: CopyReply, copy: str, data: bytes) -> bool:
        ok = reply.status in (201, 202) and reply.final.startswith("success")
        if reply.status in (201, 202):
            self.written.append(copy)
        if not ok:
            return self._add(name, False, _copy_answer(reply))
        got, _ = self._digest(copy)
        return self._add(name, got == _adler(data),
                         _copy_answer(reply) + f"; copy adler32 {got} (want {_adler(data)})")

    def _tpc_pull(self, src: str, data: bytes) -> bool:
        copy = f"{self.write_path}/{self.stem}-pull.bin"
        reply = self._copy(copy, tpc_headers(source=self.base + src, token=self.token))
        return self._tpc_result("tpc-pull", reply, copy, data)

    def _tpc_push(self, src: str, data: bytes) -> bool:
        copy = f"{self.write_path}/{self.stem}-push.bin"
        reply = self._copy(src, tpc_headers(destination=self.base + copy, token=self.token))
        return self._tpc_result("tpc-push", reply, copy, data)

    def _roots_tpc(self, src: str, data: bytes) -> bool:
        # in a child: XrdCl reads X509_CERT_DIR once per process (its TLS context), and the
        # token goes by its file's path in the environment, never on the command line
        p = urlsplit(str(self.xroot))
        root = f"{p.scheme}://{p.netloc}"
        copy = f"{self.write_path}/{self.stem}-roots.bin"
        res = proc.run([sys.executable, "-c", ROOTS_TPC, f"{root}/{src}", f"{root}/{copy}"],
                       env={"XRD_CPUSEPGWRTRD": "0"}, timeout=self.timeout, check=False)
        ok = res.returncode == 0 and res.stdout.startswith("ok")
        msg = secrets.scrub((res.stdout + res.stderr).strip().splitlines()[-1] if (res.stdout + res.stderr).strip()
                            else f"exit {res.returncode}")
        if ok or self._req("HEAD", copy, headers=self._h()).status_code != 404:
            self.written.append(copy)
        if not ok:
            return self._add("roots-tpc", False, msg[:300])
        got, _ = self._digest(copy)
        return self._add("roots-tpc", got == _adler(data), f"{msg or 'ok'}; copy adler32 {got} (want {_adler(data)})")

    def _delete(self) -> bool:
        answers, ok = [], bool(self.written)
        for path in self.written:
            r = self._req("DELETE", path, headers=self._h())
            gone = self._req("HEAD", path, headers=self._h()).status_code == 404
            ok &= r.status_code in (200, 204) and gone
            answers.append(f"{path.rsplit('/', 1)[-1]}: {r.status_code} {r.reason}{'' if gone else ', still there'}")
        return self._add("delete", ok, "; ".join(answers) or "nothing was written")


def read_token(path: str | None) -> str | None:
    """The token of ``--token-file`` (or BEARER_TOKEN_FILE); registered as a secret."""
    path = path or os.environ.get("BEARER_TOKEN_FILE")
    if not path:
        return None
    try:
        with open(path) as f:
            value = f.read().strip()
    except OSError as e:
        raise XcbError(f"smoke: --token-file {path}: {e.strerror}") from None
    if not value:
        raise XcbError(f"smoke: --token-file {path}: empty")
    secrets.register(value)
    return value


def smoke(url: str, *, token_file: str | None = None, ca_dir: str | None = None,
          write_path: str | None = None, xroot: str | None = None) -> list[Check]:
    token = read_token(token_file)
    ca_dir = ca_dir or os.environ.get("X509_CERT_DIR")
    if ca_dir:
        os.environ["X509_CERT_DIR"] = ca_dir  # XrdCl (roots-tpc) reads it
    if token_file:
        os.environ["BEARER_TOKEN_FILE"] = os.path.abspath(token_file)
    return Smoke(url, token=token, ca_dir=ca_dir, write_path=write_path, xroot=xroot).run()
