"""xcbench campaign: an FTS-style transfer campaign into a gateway, from this process.

--gateway takes a root:// or http:// URL of a running gateway, or ``tmpfs`` to start a
tmpfs-backed gateway for the campaign (and, for TPC modes without --source, a tmpfs source).
Records (transfers, timeline, optimizer, campaigns, findings) go to a run directory in --store.
With --fts URL the same campaign is submitted to an FTS3 server's REST API instead.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from xcbench.backends.tmpfs import check_fits
from xcbench.campaign import CampaignSpec, OptimizerSpec, run_campaign
from xcbench.campaign.endpoints import endpoint
from xcbench.campaign.spec import memory_problem
from xcbench.cell import Cell
from xcbench.commands import add_store_arg, argcheck
from xcbench.commands.options import add_no_ceph_name, add_run_name_arg
from xcbench.errors import XcbError
from xcbench.figures.units import fmt_gbps
from xcbench.run.session import CellSession
from xcbench.scaleout.fts3 import submit_campaign
from xcbench.store.rundir import RunDir, default_store
from xcbench.system import fsutil, orphans, secrets
from xcbench.system.proc import ProcessSet
from xcbench.system.secrets import redact_argv
from xcbench.system.signals import EXIT_CODE, current
from xcbench.system.userfiles import read_text


def add_parser(sub):
    p = sub.add_parser("campaign", help="an FTS-style transfer campaign into a gateway",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--gateway", required=True, metavar="URL",
                   help="destination: root://host:port, http://host:port, or 'tmpfs'")
    p.add_argument("--source", metavar="URL", help="TPC source gateway (root:// or http://, or 'tmpfs')")
    p.add_argument("--mode", default="push", choices=("push", "tpc-root", "tpc-http"),
                   help="push: the client sends the bytes; tpc-root/tpc-http: the gateway pulls "
                        "them from --source (third-party copy; default push)")
    p.add_argument("--client", default="xrootd", choices=("xrootd", "gfal2"),
                   help="transfer client library (default xrootd)")
    p.add_argument("--files", type=int, default=16, help="files in the campaign (default 16)")
    p.add_argument("--size", default="64M", help="(mean) file size, e.g. 256M, 1G")
    p.add_argument("--size-dist", default="fixed", choices=("fixed", "uniform", "lognormal"),
                   help="how file sizes spread around --size (default fixed)")
    p.add_argument("--size-spread", type=float, default=0.5,
                   help="uniform: ±fraction of the mean; lognormal: sigma")
    p.add_argument("--seed", type=int, default=0, help="seed of the file sizes (default 0)")
    p.add_argument("--concurrency", type=int, default=4,
                   help="active transfers (the optimizer's max with --optimizer)")
    p.add_argument("--optimizer", action="store_true", help="emulate FTS3's optimizer")
    p.add_argument("--optimizer-interval", type=float, default=60.0, metavar="S",
                   help="seconds between optimizer decisions (FTS: 60)")
    p.add_argument("--optimizer-min", type=int, default=2,
                   help="fewest active transfers the optimizer goes down to (default 2)")
    p.add_argument("--optimizer-mode", default="normal",
                   choices=("conservative", "normal", "aggressive"),
                   help="FTS3's optimizer mode: how far one decision moves (default normal)")
    p.add_argument("--streams", type=int, default=1,
                   help="parallel TCP streams per transfer (default 1)")
    p.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                   help="per transfer, plus --timeout-per-mib (default 600 s)")
    p.add_argument("--timeout-per-mib", type=float, default=2.0, metavar="S",
                   help="seconds added to --timeout per MiB of the file (default 2)")
    p.add_argument("--retries", type=int, default=0,
                   help="times a failed transfer is tried again (default 0)")
    p.add_argument("--retry-delay", type=float, default=0.0, metavar="S",
                   help="seconds before a retry (default 0)")
    p.add_argument("--checksum", default="both", choices=("none", "source", "target", "both"),
                   help="adler32 checked at the source, the target, both or none (default both)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace destination files that exist (default: such a transfer fails)")
    p.add_argument("--delete-after-verify", action="store_true",
                   help="delete each destination file once verified (campaigns larger than the target)")
    p.add_argument("--connections", type=int, default=16,
                   help="XRootD client TCP connections per gateway for push")
    p.add_argument("--fts", metavar="URL", help="submit to this FTS3 REST endpoint instead")
    p.add_argument("--fts-token", metavar="TOKEN",
                   help="OAuth2 token for --fts (default: $FTS_TOKEN; else an X509 proxy); "
                   "never recorded: prefer --fts-token-file or $FTS_TOKEN (argv is visible in ps)")
    p.add_argument("--fts-token-file", metavar="FILE", help="read the OAuth2 token for --fts from FILE")
    p.add_argument("--fts-cert", metavar="PEM", help="X509 proxy or certificate for --fts")
    p.add_argument("--fts-no-verify", action="store_true", help="do not verify the FTS server's TLS")
    add_store_arg(p, "result store")
    add_run_name_arg(p)
    add_no_ceph_name(p)
    p.add_argument("--no-progress", action="store_true",
                   help="no live progress view of the campaign")
    p.add_argument("--json", action="store_true", help="print the CAMPAIGN row as JSON")
    return p


def _spec(args):
    opt = None
    if args.optimizer:
        opt = OptimizerSpec(interval=args.optimizer_interval, min_active=args.optimizer_min,
                            mode=args.optimizer_mode)
    mem = memory_problem(args.files, args.concurrency)
    if mem is not None:
        raise XcbError(f"campaign: --{mem[0]}: {mem[1]}")
    return CampaignSpec(files=args.files, file_size=args.size, size_dist=args.size_dist,
                        size_spread=args.size_spread, seed=args.seed, mode=args.mode,
                        concurrency=args.concurrency, optimizer=opt, client=args.client,
                        streams=args.streams, timeout=args.timeout,
                        timeout_per_mib=args.timeout_per_mib, retries=args.retries,
                        retry_delay=args.retry_delay, checksum=args.checksum,
                        overwrite=args.overwrite, delete_after_verify=args.delete_after_verify,
                        connections=args.connections)


def tmpfs_sizes(spec, args) -> tuple[int | None, int | None]:
    """Sizes of the tmpfs destination and source this campaign starts (None: not started).
    Each must fit in available memory minus a reserve, else the campaign is refused in one
    line before anything is mounted (the destination of --delete-after-verify holds only the
    files in flight, so that is the way to run a campaign larger than memory)."""
    dataset = int(spec.file_size * spec.files * 1.3)
    dst = src = None
    if args.gateway == "tmpfs":
        dst = max(spec.file_size * max(4, 2 * spec.concurrency), 1 << 30)
        if not args.delete_after_verify:
            dst = max(dst, dataset)
        check_fits(dst, "campaign: --gateway tmpfs",
                   "add --delete-after-verify (only the files in flight are kept), or give fewer "
                   "--files or a smaller --size" if not args.delete_after_verify
                   else "give a smaller --size or --concurrency")
    if spec.mode != "push" and args.source in (None, "tmpfs"):
        src = max(dataset, 1 << 30)  # a TPC source holds the whole dataset
        check_fits(src, "campaign: tmpfs source", "give fewer --files or a smaller --size, or --source URL")
    return dst, src


def _tmpfs_gateway(stack: ExitStack, procs, name: str, size: int):
    workdir = Path(tempfile.mkdtemp(prefix=f"xcb-campaign-{name}-"))
    workdir.chmod(0o755)  # the backend hands a dir under it to the xrootd user
    orphans.note_dir(workdir)
    stack.callback(fsutil.remove_dir, workdir)  # after the session's exit (never across a mount)
    cell = Cell(id=name, label=name, backend="tmpfs", tmpfs_size=size)
    return stack.enter_context(CellSession(cell, cluster=None, workdir=workdir, procs=procs,
                                           name=name)).gateway


def _token(args) -> str | None:
    """The FTS token from --fts-token, --fts-token-file or $FTS_TOKEN, registered as a secret
    (xcbench.system.secrets) so no manifest, record, log or error text can carry it."""
    token = args.fts_token
    if args.fts_token_file:
        token = read_text(args.fts_token_file, "--fts-token-file").strip()
        if not token:
            raise XcbError(f"{args.fts_token_file}: --fts-token-file: the file is empty")
    token = token or os.environ.get("FTS_TOKEN") or None
    secrets.register(token)
    return token


def check_args(args) -> None:
    """Every flag checked before anything starts (one line, exit 2)."""
    from urllib.parse import urlsplit

    if args.mode == "push" and args.source:
        raise XcbError("campaign: --source is for the TPC modes (tpc-root, tpc-http)")
    for flag, value in (("--gateway", args.gateway), ("--source", args.source)):
        if value is not None and value != "tmpfs":
            endpoint(value, flag)
            try:
                _ = urlsplit(value).port
            except ValueError as e:
                raise XcbError(f"campaign: {flag}: {value!r}: {e}") from None
    if args.fts is not None and not args.fts.startswith(("https://", "http://")):
        raise XcbError(f"campaign: --fts: {args.fts!r} is not an http(s):// URL")
    if args.fts_token is not None and args.fts_token_file:
        raise XcbError("campaign: give --fts-token or --fts-token-file, not both")
    argcheck.number("--optimizer-interval", args.optimizer_interval, 0, 86400, lo_open=True)
    argcheck.number("--optimizer-min", args.optimizer_min, 1, 100_000)
    argcheck.name("--run-name", args.run_name)
    argcheck.directory("--store", args.store)


def main(args) -> int:

    token = _token(args)
    check_args(args)
    spec = _spec(args)  # CampaignSpec checks every value: before any gateway starts
    procs = ProcessSet()
    with ExitStack() as stack:
        stack.callback(procs.stop_all)
        dst_size, src_size = tmpfs_sizes(spec, args)  # checked against memory before any mount
        dest = _tmpfs_gateway(stack, procs, "campaign-dst", dst_size) if dst_size else args.gateway
        source = _tmpfs_gateway(stack, procs, "campaign-src", src_size) if src_size else args.source
        run_dir = RunDir.create(args.store or default_store(), name=args.run_name, fingerprint=False,
                                kind="campaign", command=redact_argv(sys.argv[1:]))
        status = "failed"
        stop = current()
        try:
            with stop.polite() as stop_event:  # a signal: the campaign stops, flushes, cleans up
                if args.fts:
                    row = submit_campaign(spec, fts=args.fts, dest=dest, source=source,
                                          sink=run_dir.append, token=token, ucert=args.fts_cert,
                                          ukey=args.fts_cert, verify=not args.fts_no_verify,
                                          stop_event=stop_event)
                else:
                    row = run_campaign(spec, dest=dest, source=source, sink=run_dir.append,
                                       progress=not args.no_progress, stop_event=stop_event)
            status = "interrupted" if stop.stopping else "complete"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            run_dir.finalize(status)
    if status == "interrupted":
        print(f"interrupted ({stop.name}): what was measured is in {run_dir.path}", file=sys.stderr)
        return EXIT_CODE
    if args.json:
        print(json.dumps(row, default=str))
    else:
        dur = max(row["finish_time"] - row["start_time"], 1e-9)
        print(f"{row['campaign_id']}: {row['finished']}/{row['files']} finished, {row['failed']} failed, "
              f"{row['bytes'] / 1e9:.2f} GB in {dur:.1f} s = {fmt_gbps(row['rate'], gib=True)}; "
              f"records in {run_dir.path}")
    return 0 if row["failed"] == 0 else 1
