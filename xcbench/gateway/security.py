"""Security modes of a gateway (none, tls, scitokens, macaroons), as WLCG sites run them.

    tls        roots:// (xrd.tls; ``xrootd.tls capable all``: every TLS-capable client must use it)
               and https/davs on XrdHttp, with a certificate from a throwaway CA made for the run
    scitokens  tls + the xrootd-scitokens-plugins authorization (XrdAccSciTokens, ``ztn`` for
               root://, ``Authorization: Bearer`` for HTTP): xcbench runs its own issuer on
               loopback (an EC key, /.well-known/openid-configuration and the JWKS over HTTPS
               with the run's CA) and mints short-lived WLCG-profile tokens (storage.create:/,
               storage.read:/, storage.modify:/)
    macaroons  tls + XrdMacaroons with a per-run secret; the client asks the gateway for a
               macaroon (POST application/macaroon-request) with an X509 certificate of the run's
               CA, whose subject hash the gateway's authdb grants everything; anyone else (no
               certificate, no macaroon) is refused. HTTP only: XRootD 5.5's ztn validates
               SciTokens, not macaroons, so root:// cannot carry a macaroon

Measured by hand on this machine (XRootD 5.5.3, libscitokens 0.7.3), and why the code does what
it does:
- XrdCl and gfal2 (davix) trust the run's CA through ``X509_CERT_DIR`` (a hashed directory);
  without it roots:// fails ("Unable to use CA cert directory /etc/grid-security/certificates").
  XrdCl builds its TLS context once per process: one run's CA per process (a second CA in the
  same process fails with "TLS error: resource temporarily unavailable").
- XrdSecztn (the client) uses ``BEARER_TOKEN_FILE`` only when the file is the user's own and
  mode 0600 ("Auth failed: No protocols left to try" otherwise).
- libscitokens fetches the issuer's keys with libcurl, which trusts only the system store (no
  environment variable adds a CA, measured), so the gateway's key cache
  ($XDG_CACHE_HOME/scitokens/scitokens_cpp.sqllite) is seeded with the JWKS that xcbench fetched
  from its own issuer over HTTPS (verified with the run's CA): nothing is added to the host's
  trust store.
- XrdMacaroons 5.5 computes a macaroon's activities from the requester's identity through the
  chained authorization without the request's token: a token holder gets READ_METADATA only.
  A client certificate works: XrdHttp names the requester by its subject hash (no gridmap),
  and ``acc.authdb`` grants that name everything.
- HTTP-TPC pull with tokens: COPY with ``Authorization`` (the destination's token) and
  ``TransferHeaderAuthorization`` (forwarded to the source as its Authorization); without the
  latter the source answers 403 and the destination keeps a 0-byte file.

A token never reaches a command line, a log or a record: it lives in a 0600 file of the run's
security dir and is registered with xcbench.system.secrets (scrubbed from any text the store writes).
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import sqlite3
import ssl
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from xcbench.cell import SECURITY_MODES
from xcbench.errors import XcbError
from xcbench.system import orphans, proc, secrets
from xcbench.system.fsutil import make_dir, remove_tree, write_file
from xcbench.system.scratch import private_dir
from xcbench.system.xrootd_user import own

# how the gateway is reached: anonymous root/http; roots/https with a per-run CA; WLCG tokens from
# xcbench's own issuer; macaroons the client asks the gateway for (a cell's `security`)

AUDIENCE = "https://wlcg.cern.ch/jwt/v1/any"  # the WLCG profile's "any audience"
WRITE_SCOPES = "storage.create:/ storage.read:/ storage.modify:/"
READ_SCOPES = "storage.read:/"
TOKEN_LIFETIME = 6 * 3600  # short-lived, but longer than any level of a run
MACAROON_ACTIVITIES = "activity:DOWNLOAD,UPLOAD,DELETE,MANAGE,LIST,READ_METADATA"
MACAROON_VALIDITY = "PT6H"


ISSUER_TIMEOUT = 10.0  # s a connection to the issuer has for its TLS handshake and each read


class _TLSServer(http.server.ThreadingHTTPServer):
    """HTTPS whose TLS handshake runs in the connection's own thread, with a deadline: a
    listening socket wrapped in TLS shakes hands inside accept(), so one silent connection
    would stop every other one."""
    daemon_threads = True

    def __init__(self, addr: tuple[str, int], handler: Any, ctx: ssl.SSLContext):
        super().__init__(addr, handler)
        self.ctx = ctx

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(ISSUER_TIMEOUT)
        try:
            tls = self.ctx.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            tls.close()


class Issuer:
    """A WLCG token issuer on loopback: its key signs the tokens; /.well-known/openid-configuration
    and /jwks are served over HTTPS with the run's CA."""

    def __init__(self, cert: Path, key: Path):
        from cryptography.hazmat.primitives.asymmetric import ec
        self._key = ec.generate_private_key(ec.SECP256R1())
        self.kid = uuid.uuid4().hex[:12]
        nums = self._key.public_key().public_numbers()

        def b64(n: int) -> str:
            return base64.urlsafe_b64encode(n.to_bytes(32, "big")).rstrip(b"=").decode()
        self.jwks = {"keys": [{"kty": "EC", "crv": "P-256", "x": b64(nums.x), "y": b64(nums.y),
                               "kid": self.kid, "alg": "ES256", "use": "sig"}]}
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        issuer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                body: dict[str, Any]
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks"}
                elif self.path == "/jwks":
                    body = issuer.jwks
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a: Any) -> None:  # quiet: the run's output is the driver's
                pass

        Handler.timeout = ISSUER_TIMEOUT  # each read of a request (StreamRequestHandler)
        self._server = _TLSServer(("127.0.0.1", 0), Handler, ctx)
        self.url = f"https://localhost:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="xcb-issuer", daemon=True)
        self._thread.start()

    def mint(self, scopes: str, lifetime: int = TOKEN_LIFETIME) -> str:
        """A signed WLCG-profile token (registered as a secret before it is returned)."""
        import scitokens  # type: ignore[import-untyped]
        tok = scitokens.SciToken(key=self._key, key_id=self.kid, algorithm="ES256")
        tok.update_claims({"sub": "xcbench", "aud": AUDIENCE, "scope": scopes, "wlcg.ver": "1.0",
                           "jti": uuid.uuid4().hex})
        value = tok.serialize(issuer=self.url, lifetime=lifetime).decode()
        secrets.register(value)
        return value

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class RunSecurity:
    """The run's security material: a throwaway CA, host certificates signed by it, and (for
    tokens) the issuer and the tokens' files. ``close()`` stops the issuer and removes it all."""

    def __init__(self, base: Path | None = None):
        self.dir = Path(tempfile.mkdtemp(prefix="xcbsec-", dir=str(base) if base else "/var/tmp"))
        orphans.note_dir(self.dir)  # after a kill -9 the next command removes it (keys in it)
        os.chmod(self.dir, 0o711)  # xrootd traverses to its certificate; nothing is listable
        self.cadir = self.dir / "ca"  # hashed CA dir: X509_CERT_DIR of every client
        self.cadir.mkdir(mode=0o755)
        self.ca_cert, self._ca_key = self.cadir / "ca.pem", self.dir / "ca.key"
        try:
            proc.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                      "-nodes", "-keyout", self._ca_key, "-out", self.ca_cert, "-days", "7",
                      "-subj", f"/CN=xcbench throwaway CA {self.dir.name}",
                      "-addext", "basicConstraints=critical,CA:TRUE",
                      "-addext", "keyUsage=critical,keyCertSign,cRLSign"], timeout=60)
            os.chmod(self.ca_cert, 0o644)
            proc.run(["openssl", "rehash", self.cadir], timeout=60)
        except BaseException:
            remove_tree(self.dir)
            raise
        self._issuer: Issuer | None = None
        self._tokens: dict[str, Path] = {}
        self._n = 0
        self._client: tuple[Path, Path, str] | None = None
        self._secret: bytes | None = None

    @classmethod
    def from_ca(cls, ca_cert: str, ca_key: str, base: str = "/var/tmp") -> RunSecurity:
        """The run's CA on a gateway host (xcbench.gateway.agent; the PEM texts came over its
        stdin): a private dir of that host, recorded before it is made, the key 0600 in it, so
        host certificates are signed there as here. ``close()`` removes it."""
        self = cls.__new__(cls)
        self.dir = private_dir(base, "xcbsec-", mode=0o711)
        try:
            self.cadir = self.dir / "ca"
            self.cadir.mkdir(mode=0o755)
            self.ca_cert, self._ca_key = self.cadir / "ca.pem", self.dir / "ca.key"
            write_file(self._ca_key, ca_key, 0o600, new=True)
            write_file(self.ca_cert, ca_cert, 0o644, new=True)
            proc.run(["openssl", "rehash", self.cadir], timeout=60)
        except BaseException:
            remove_tree(self.dir)
            orphans.forget_dir(self.dir)
            raise
        self._issuer, self._tokens, self._n, self._client, self._secret = None, {}, 0, None, None
        return self

    def ca_material(self) -> dict[str, str]:
        """The CA's certificate and key as PEM text, for a gateway agent's stdin only."""
        return {"ca_cert": self.ca_cert.read_text(), "ca_key": self._ca_key.read_text()}

    def host_cert(self, directory: Path, ids: Any, host: str) -> tuple[Path, Path]:
        """A certificate for ``host`` (and localhost) signed by the run's CA in a new directory
        of root's; the key (only it) is then handed to ``ids``."""
        self._n += 1
        make_dir(directory, 0o711)
        cert, key, csr = directory / "cert.pem", directory / "key.pem", directory / "req.csr"
        # an address also as a DNS name: XrdCl 5.5 matches the URL's host against DNS entries
        # only ("Unable to validate 10.x.y.z; hostname not in SAN extension" with IP: alone)
        san = "DNS:localhost,IP:127.0.0.1" + (f",IP:{host},DNS:{host}" if host[:1].isdigit() and host != "127.0.0.1" else "")
        ext = write_file(directory / "ext.cnf", f"subjectAltName={san}\nbasicConstraints=CA:FALSE\n"
                       "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n",
                         new=True)
        proc.run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                  "-keyout", key, "-out", csr, "-subj", "/CN=localhost"], timeout=60)
        proc.run(["openssl", "x509", "-req", "-in", csr, "-CA", self.ca_cert, "-CAkey", self._ca_key,
                  "-set_serial", str(int(time.time() * 1000) * 100 + self._n), "-out", cert, "-days", "7",
                  "-extfile", ext], timeout=60)
        for p in (csr, ext):
            p.unlink()
        own(cert, None, 0o644)
        own(key, ids, 0o600)
        return cert, key

    @property
    def issuer(self) -> Issuer:
        if self._issuer is None:
            d = self.dir / "issuer"
            cert, key = self.host_cert(d, None, "127.0.0.1")
            self._issuer = Issuer(cert, key)
        return self._issuer

    def token_file(self, scopes: str = WRITE_SCOPES) -> Path:
        """A 0600 file of this process's user holding a token with ``scopes`` (BEARER_TOKEN_FILE)."""
        if scopes not in self._tokens:
            path = self.dir / f"token-{len(self._tokens)}"
            write_file(path, self.issuer.mint(scopes), 0o600, new=True)
            self._tokens[scopes] = path
        return self._tokens[scopes]

    def client_cert(self) -> tuple[Path, Path, str]:
        """(cert, key, name): the client's X509 identity for macaroon requests; ``name`` is what
        XrdHttp calls it (the subject hash, ``<hash>.0``)."""
        if self._client is None:
            d = make_dir(self.dir / "client", 0o700)
            cert, key, csr, ext = d / "cert.pem", d / "key.pem", d / "req.csr", d / "ext.cnf"
            write_file(ext, "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                       "extendedKeyUsage=clientAuth\n", new=True)
            proc.run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                      "-keyout", key, "-out", csr, "-subj", "/O=xcbench/CN=xcbench client"], timeout=60)
            self._n += 1
            proc.run(["openssl", "x509", "-req", "-in", csr, "-CA", self.ca_cert, "-CAkey", self._ca_key,
                      "-set_serial", str(int(time.time() * 1000) * 100 + self._n), "-out", cert,
                      "-days", "7", "-extfile", ext], timeout=60)
            h = proc.run(["openssl", "x509", "-noout", "-subject_hash", "-in", cert], timeout=60).stdout.strip()
            self._client = (cert, key, f"{h}.0")
        return self._client

    def macaroon_secret(self, admin: Path, ids: Any) -> Path:
        """The run's macaroon secret for a gateway (one per run, so a macaroon of one gateway
        holds at another of the run, as TPC needs): a file in root's admin dir, handed to
        xrootd, which reads it and never replaces it. The gateway's authdb grants the client's
        certificate (:meth:`client_cert`) the gateway's namespace (xcbench.gateway.authz)."""
        if self._secret is None:
            self._secret = base64.encodebytes(os.urandom(64))  # 76-column lines, as openssl writes
        secret = write_file(admin / "macaroon.secret", self._secret, 0o600, new=True)
        own(secret, ids)
        return secret

    def request_macaroon(self, http_url: str, path: Path) -> Path:
        """Ask the gateway at ``http_url`` for a macaroon (the client's certificate proves who
        asks) and keep it in ``path`` (0600): the campaign's BEARER_TOKEN_FILE."""
        import requests
        cert, key, _ = self.client_cert()
        r = requests.post(f"{http_url}/", cert=(str(cert), str(key)), verify=str(self.ca_cert), timeout=60,
                          headers={"Content-Type": "application/macaroon-request"},
                          data=json.dumps({"caveats": [MACAROON_ACTIVITIES], "validity": MACAROON_VALIDITY}))
        if r.status_code != 200 or "macaroon" not in r.text:
            raise XcbError(f"gateway: the macaroon request to {http_url} was answered "
                           f"{r.status_code} {r.reason}")
        value = r.json()["macaroon"]
        secrets.register(value)
        path.unlink(missing_ok=True)
        write_file(path, value, 0o600, new=True)
        return path

    def keycache(self, directory: Path, ids: Any) -> Path:
        """An XDG_CACHE_HOME for a gateway whose scitokens key cache holds the issuer's JWKS,
        fetched from the issuer over HTTPS and verified with the run's CA (module docstring)."""
        import requests
        cfg = requests.get(f"{self.issuer.url}/.well-known/openid-configuration", verify=str(self.ca_cert),
                           timeout=30).json()
        jwks = requests.get(cfg["jwks_uri"], verify=str(self.ca_cert), timeout=30).json()
        make_dir(directory, 0o700)  # made and filled as root's, handed over last
        sub = make_dir(directory / "scitokens", 0o700)
        db_path = sub / "scitokens_cpp.sqllite"
        now = int(time.time())
        with sqlite3.connect(db_path) as db:
            db.execute("CREATE TABLE IF NOT EXISTS keycache (issuer text UNIQUE PRIMARY KEY NOT NULL,"
                       "keys text NOT NULL)")
            db.execute("INSERT OR REPLACE INTO keycache VALUES (?, ?)",
                       (cfg["issuer"], json.dumps({"jwks": jwks, "next_update": now + 86400,
                                                   "expires": now + 7 * 86400})))
        db.close()
        for p in (db_path, sub, directory):  # deepest first: nothing made in a dir already given
            own(p, ids)
        return directory

    def close(self) -> None:
        if self._issuer is not None:
            self._issuer.close()
            self._issuer = None
        remove_tree(self.dir)
        orphans.forget_dir(self.dir)


def check_mode(mode: str) -> None:
    if mode not in SECURITY_MODES:
        raise XcbError(f"gateway: security {mode!r} is not one of {', '.join(SECURITY_MODES)}")


def gateway_security(mode: str, sec: RunSecurity | None, admin: Path, ids: Any, host: str) -> dict[str, Any]:
    """What a gateway of ``mode`` needs: {"mode", "tls": (cert, key), "cadir", "scitokens": cfg
    path, "env": gateway env, "client_env": for its clients, "authdb_user": whom its authdb
    grants the namespace (xcbench.gateway.authz: anyone; for macaroons the client's
    certificate)}; for none: the mode and "authdb_user" only. With scitokens the token decides
    (no authdb): only the run's token, a 0600 file of root's, opens the gateway."""
    out: dict[str, Any] = {"mode": mode, "cadir": None, "scitokens": None, "macaroons": None,
                           "env": {}, "client_env": {}, "authdb_user": "*"}
    if mode == "none":
        return out
    check_mode(mode)
    if sec is None:
        raise XcbError(f"gateway: security {mode} needs the run's security material (RunSecurity)")
    out["tls"] = sec.host_cert(admin / "tls", ids, host)
    out["cadir"] = str(sec.cadir)
    # the gateway's own TLS clients (root TPC's xrdcp, HTTP-TPC's libcurl) trust the run's CA
    out["env"]["X509_CERT_DIR"] = str(sec.cadir)
    out["client_env"]["X509_CERT_DIR"] = str(sec.cadir)
    if mode == "scitokens":
        cfg = write_file(admin / "scitokens.cfg", f"[Global]\naudience = {AUDIENCE}\n\n[Issuer xcbench]\n"
                         f"issuer = {sec.issuer.url}\nbase_path = /\n", new=True)
        own(cfg, ids)
        out["scitokens"] = str(cfg)
        out["env"]["XDG_CACHE_HOME"] = str(sec.keycache(admin / "cache", ids))
        out["client_env"]["BEARER_TOKEN_FILE"] = str(sec.token_file(WRITE_SCOPES))
    if mode == "macaroons":
        out["macaroons"] = {"secret": str(sec.macaroon_secret(admin, ids))}
        out["authdb_user"] = sec.client_cert()[2]
        # written once the gateway answers (xcbench.gateway.launch asks for the macaroon)
        out["client_env"]["BEARER_TOKEN_FILE"] = str(sec.dir / f"macaroon-{admin.name}")
    return out
