"""xcbench smoke URL: the WLCG storage checks against a gateway or a site's endpoint."""

from __future__ import annotations

import json

from xcbench.gateway.smoke import smoke


def add_parser(sub):
    p = sub.add_parser(
        "smoke", help="WLCG storage checks (upload, stat, checksum, download, HTTP-TPC pull/push, "
                      "roots:// TPC, delete) against an endpoint",
        description="Each check passes or fails with the server's answer. Read-only (stat only) "
                    "unless --write-path names a directory the token may write; only files named "
                    "xcb-smoke-* that it wrote are deleted.")
    p.add_argument("url", metavar="URL", help="the endpoint: https://host:port/path or davs://...")
    p.add_argument("--token-file", metavar="F", help="a WLCG token (default: $BEARER_TOKEN_FILE); "
                   "read from the file, never printed")
    p.add_argument("--ca-dir", metavar="DIR", help="CA certificates directory (default: $X509_CERT_DIR)")
    p.add_argument("--write-path", metavar="PATH", help="a writable directory on the endpoint: "
                   "enables the write checks")
    p.add_argument("--xroot", metavar="URL", help="root(s)://host:port of the same storage: adds "
                   "the roots:// TPC check")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    return p


def main(args) -> int:
    checks = smoke(args.url, token_file=args.token_file, ca_dir=args.ca_dir,
                   write_path=args.write_path, xroot=args.xroot)
    if args.json:
        print(json.dumps([c.to_dict() for c in checks], indent=2))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            print(f"{c.status.upper():4s}  {c.name:{width}s}  {c.answer}")
    failed = [c.name for c in checks if c.status == "fail"]
    if failed and not args.json:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0
