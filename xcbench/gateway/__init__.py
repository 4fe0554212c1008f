"""XRootD gateways for a cell's target: one xrootd, or N origins behind a cmsd redirector.

Every xrootd serves root:// and HTTP(S) (XrdHttp), adler32 checksums, root TPC (``ofs.tpc``: the
destination pulls with ``xrdcp --server``) and HTTP-TPC (libXrdHttpTPC). Configs are rendered
from ``xrootd-configs/*.j2`` and kept, with the logs, in ``workdir/gateway-<name>/``.
What depends on the backend (OSS library, environment, shared store, defaults) comes from the
Target (xcbench.backends). Modules: ``config`` (tunables, config text, TLS), ``launch`` (start
with retries, stop, restart, stop a recorded gateway), ``readiness`` (protocol handshakes, waits),
``placement`` (origins on an inventory's gateway hosts: ``start_gateway(..., hosts=inventory)``;
per-origin evidence and the finding for an origin that got no files), ``remote`` (a gateway on
gateway hosts reached over ssh: one ``agent`` per part, ``xcbench gateway-agent`` on its host,
``agent_parts`` what it starts there).

Measured on this machine (XRootD 5.5.3), and why the code looks like this:
- xrootd has no directive to bind one address, but takes systemd-style pre-bound sockets: every
  listening port is bound by :mod:`xcbench.system.sdlisten` on ``bind`` (loopback). The exception is a
  data server's cmsd: XrdCmsConfig forces it onto an ephemeral wildcard port, fenced here with
  ``xrd.allow host localhost``.
- xrootd refuses to run as root: it runs with ``-R xrootd`` and its dirs are chowned to that
  user. Unix sockets live under a short private dir (a socket path must fit in 108 bytes).
- URLs say ``localhost``, not 127.0.0.1: a root TPC addressed by IP literal hangs until the TPC
  TTL (the client names the destination ``[::ffff:127.0.0.1]``, the source sees ``localhost``).
- XrdHttp loads HTTP-TPC only when TLS is configured: each gateway gets a throwaway self-signed
  certificate (the HTTP port then speaks http and https).
- A redirector sends HTTP clients to an origin's xroot port: XrdHttp shares that port.
- ``if exec xrootd`` does not apply to ``xrd.protocol`` lines: each daemon gets its own file.
- cmsd: the 10 GB default minimum free space makes small origins unwritable; a new file waits
  for the query deadline (origins never say "not here"), 1 s here instead of 5.
"""

from xcbench.gateway.config import (
    CMS_SPACE,
    TEMPLATES,
    TPC_XFR,
    TUNABLE_KEYS,
    effective_tunables,
    render_config,
    url_host_for,
)
from xcbench.gateway.launch import START_TIMEOUT, Gateway, Server, start_gateway, stop_recorded
from xcbench.gateway.readiness import http_answers, xroot_handshake
from xcbench.system.xrootd_user import XROOTD_USER, reachable_by, xrootd_ids

__all__ = ["CMS_SPACE", "START_TIMEOUT", "TEMPLATES", "TPC_XFR", "TUNABLE_KEYS", "XROOTD_USER",
           "Gateway", "Server", "effective_tunables", "http_answers", "reachable_by",
           "render_config", "start_gateway", "stop_recorded", "url_host_for", "xroot_handshake",
           "xrootd_ids"]
