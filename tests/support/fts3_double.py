"""A small local stand-in for an FTS3 server's REST API, on 127.0.0.1, that really transfers.

It answers what xcbench's FTS path uses, in FTS3's JSON shapes (fts-rest-flask: GET /,
POST /jobs, GET /jobs/<id>, GET /jobs/<id>/files, GET /jobs/<id>/files/<file_id>/retries,
GET /jobs/<id>/dm, DELETE /jobs/<id>, POST /config/links), and runs each job's files with gfal2
(the library FTS's url-copy uses): checksum mode and the per-file ``ADLER32:`` value, overwrite,
nostreams, timeout, retries with retry_delay, and at most ``max_active`` transfers per link
(from /config/links, else ``default_max_active``). Datetimes are UTC with second resolution,
as FTS stores them. It is a test double: no optimizer, no delegation, one bearer token.

For tests: ``config_rights=False`` answers /config/links with 403 as FTS does for a user without
config rights; ``hold_after=N`` keeps every file of a job after its first N ACTIVE (in flight)
until ``release`` is set or the job is cancelled, so a test can act on a job that is surely
running, whatever the machine's speed. ``link_calls`` lists every accepted /config/links body.
``answer_dest(file_index, dest)`` (a misbehaving or hostile server): the file is copied to the
destination submitted, but its ``dest_surl`` is answered as what the function returns.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import gfal2

from xcbench.clients.gfal2_client import new_context

_CKMODE = {"source": "source", "target": "target", "destination": "target", "both": "both",
           "none": "none", "s": "source", "t": "target", "b": "both", "n": "none"}


def _now() -> str:
    return datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="seconds")


def _se(url: str) -> str:
    p = urlsplit(url)
    return f"{p.scheme}://{p.hostname}"


class Fts3Double:
    def __init__(self, token: str = "xcbench-test", default_max_active: int = 4, *,
                 config_rights: bool = True, hold_after: int | None = None, answer_dest=None):
        self.token, self.default_max_active = token, default_max_active
        self.config_rights, self.hold_after = config_rights, hold_after
        self.release = threading.Event()
        self.answer_dest = answer_dest
        self.link_calls: list[dict] = []
        self.jobs: dict[str, dict] = {}
        self.submitted: list[dict] = []      # job JSON bodies as received
        self.links: dict[tuple[str, str], dict] = {}
        self.peak_active: dict[tuple[str, str], int] = {}
        self._active: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        self._threads: list[threading.Thread] = []
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, code: int, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self) -> bool:
                if self.headers.get("Authorization") != f"Bearer {double.token}":
                    self._send(401, {"status": "401 Unauthorized", "message": "bad or no token"})
                    return False
                return True

            def do_GET(self):
                if not self._authorized():
                    return
                code, body = double.get(urlsplit(self.path).path.rstrip("/") or "/")
                self._send(code, body)

            def do_POST(self):
                if not self._authorized():
                    return
                n = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(n) or b"{}")
                except ValueError:
                    return self._send(400, {"message": "body is not JSON"})
                code, out = double.post(urlsplit(self.path).path.rstrip("/"), body)
                self._send(code, out)

            def do_DELETE(self):
                if not self._authorized():
                    return
                code, out = double.cancel(urlsplit(self.path).path.rstrip("/"))
                self._send(code, out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._serve = threading.Thread(target=self.server.serve_forever, daemon=True)

    # --- lifecycle -----------------------------------------------------------------------
    def start(self) -> Fts3Double:
        self._serve.start()
        return self

    def stop(self) -> None:
        for job in self.jobs.values():
            job["_cancel"] = True
        for t in self._threads:
            t.join(timeout=60)
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- REST ------------------------------------------------------------------------------
    def get(self, path: str):
        if path == "/":
            return 200, {"api": {"major": 3, "minor": 12, "patch": 0},
                         "schema": {"major": 8, "minor": 0, "patch": 0},
                         "delegation": {"major": 1, "minor": 0, "patch": 0}}
        if path == "/whoami":
            return 200, {"dn": ["xcbench"], "vos": ["xcbench"], "delegation_id": "none"}
        m = re.fullmatch(r"/jobs/([^/]+)(/files(?:/(\d+)/retries)?|/dm)?", path)
        if not m or m.group(1) not in self.jobs:
            return 404, {"status": "404 Not Found", "message": f"No job with the id {path!r}"}
        job = self.jobs[m.group(1)]
        with self._lock:
            if m.group(2) is None:
                return 200, {k: v for k, v in job.items() if not k.startswith("_") and k != "files"}
            if m.group(2) == "/dm":
                return 200, []
            if m.group(3) is None:
                return 200, [{k: v for k, v in f.items() if not k.startswith("_")} for f in job["files"]]
            f = next((f for f in job["files"] if f["file_id"] == int(m.group(3))), None)
            return (200, list(f["_retries"])) if f else (404, {"message": "no such file"})

    def post(self, path: str, body: dict):
        if path == "/config/links":
            if not self.config_rights:
                return 403, {"status": "403 Forbidden", "message": "User has no config rights"}
            for k in ("symbolicname", "source", "destination"):
                if not body.get(k):
                    return 400, {"message": f"Missing {k}"}
            if int(body.get("min_active", 2)) > int(body.get("max_active", 2)):
                return 400, {"message": "max_active is lower than min_active"}
            self.links[(body["source"], body["destination"])] = dict(body)
            self.link_calls.append(dict(body))
            return 200, body
        if path != "/jobs":
            return 404, {"message": f"no such resource {path}"}
        files = body.get("files") or []
        if not files:
            return 400, {"message": "Bad request: No transfers or deletion jobs are provided"}
        params = body.get("params") or {}
        self.submitted.append(body)
        job_id = str(uuid.uuid1())
        job = {"job_id": job_id, "job_state": "SUBMITTED", "job_type": "N", "submit_time": _now(),
               "job_finished": None, "reason": None, "user_dn": "xcbench", "vo_name": "xcbench",
               "verify_checksum": params.get("verify_checksum", "none"),
               "overwrite_flag": bool(params.get("overwrite")), "retry": int(params.get("retry") or 0),
               "retry_delay": int(params.get("retry_delay") or 0),
               "job_metadata": params.get("job_metadata"),
               "source_se": _se(files[0]["sources"][0]), "dest_se": _se(files[0]["destinations"][0]),
               "files": [], "_params": params, "_cancel": False, "_peak_active": 0,
               "_active": 0, "_max_active": None}
        for i, f in enumerate(files):
            src, dst = f["sources"][0], f["destinations"][0]
            job["files"].append({
                "file_id": len(self.jobs) * 100000 + i + 1, "file_index": i, "job_id": job_id,
                "file_state": "SUBMITTED", "source_surl": src, "_dest": dst,
                "dest_surl": self.answer_dest(i, dst) if self.answer_dest else dst,
                "source_se": _se(src), "dest_se": _se(dst), "filesize": f.get("filesize"),
                "user_filesize": f.get("filesize"), "checksum": f.get("checksum"),
                "file_metadata": f.get("metadata"), "retry": 0, "reason": None,
                "start_time": None, "finish_time": None, "tx_duration": None, "throughput": None,
                "_retries": []})
        self.jobs[job_id] = job
        t = threading.Thread(target=self._run_job, args=(job,), daemon=True)
        self._threads.append(t)
        t.start()
        return 200, {"job_id": job_id}

    def cancel(self, path: str):
        m = re.fullmatch(r"/jobs/([^/]+)", path)
        if not m or m.group(1) not in self.jobs:
            return 404, {"message": "no such job"}
        job = self.jobs[m.group(1)]
        job["_cancel"] = True
        return 200, {k: v for k, v in job.items() if not k.startswith("_") and k != "files"}

    # --- the transfer agent ----------------------------------------------------------------
    def _max_active(self, job) -> int:
        cfg = self.links.get((job["source_se"], job["dest_se"])) or self.links.get(("*", "*"))
        return int(cfg["max_active"]) if cfg else self.default_max_active

    def _run_job(self, job: dict) -> None:
        job["job_state"] = "ACTIVE"
        link = (job["source_se"], job["dest_se"])
        job["_max_active"] = self._max_active(job)
        with ThreadPoolExecutor(max_workers=job["_max_active"]) as pool:
            list(pool.map(lambda f: self._run_file(job, f, link), job["files"]))
        states = {f["file_state"] for f in job["files"]}
        job["job_state"] = ("CANCELED" if "CANCELED" in states else "FINISHED" if states == {"FINISHED"}
                            else "FAILED" if "FINISHED" not in states else "FINISHEDDIRTY")
        job["job_finished"] = _now()

    def _ctx(self):
        ctx = getattr(self._local, "ctx", None)
        if ctx is None:
            ctx = self._local.ctx = new_context()  # the thread's signal mask kept
            ctx.set_opt_boolean("HTTP PLUGIN", "ENABLE_STREAM_COPY", False)
            ctx.set_opt_boolean("HTTP PLUGIN", "ENABLE_FALLBACK_TPC_COPY", False)
        return ctx

    def _run_file(self, job: dict, f: dict, link) -> None:
        p = job["_params"]
        retries = max(int(p.get("retry") or 0), 0)
        while True:
            if job["_cancel"]:
                f.update(file_state="CANCELED", finish_time=_now(), reason="Job canceled by the user")
                return
            with self._lock:
                f.update(file_state="ACTIVE", start_time=_now())
                self._active[link] = self._active.get(link, 0) + 1
                self.peak_active[link] = max(self.peak_active.get(link, 0), self._active[link])
                job["_active"] += 1
                job["_peak_active"] = max(job["_peak_active"], job["_active"])
            if self.hold_after is not None and f["file_index"] >= self.hold_after:
                while not job["_cancel"] and not self.release.wait(0.05):
                    pass
                if job["_cancel"]:  # FTS kills the url-copy of a cancelled job
                    with self._lock:
                        self._active[link] -= 1
                        job["_active"] -= 1
                        f.update(file_state="CANCELED", finish_time=_now(),
                                 reason="Job canceled by the user")
                    return
            t0 = time.time()
            error = None
            try:
                ctx = self._ctx()
                params = ctx.transfer_parameters()
                params.overwrite = bool(p.get("overwrite"))
                params.nbstreams = int(p.get("nostreams") or 1)
                params.timeout = int(p.get("timeout") or 600 + 2 * (f["filesize"] or 0) / 2**20)
                params.create_parent = True
                mode = _CKMODE.get(str(p.get("verify_checksum") or "none"), "none")
                if mode != "none" and f["checksum"]:
                    algo, value = f["checksum"].split(":", 1)
                    params.set_checksum(getattr(gfal2.checksum_mode, mode), algo.lower(), value)
                ctx.filecopy(params, f["source_surl"], f["_dest"])
            except gfal2.GError as e:
                error = " ".join(str(e.message).split())
            dur = time.time() - t0
            with self._lock:
                self._active[link] -= 1
                job["_active"] -= 1
                if error is None:
                    f.update(file_state="FINISHED", finish_time=_now(), tx_duration=dur,
                             throughput=(f["filesize"] or 0) / dur / 2**20 if dur > 0 else None)
                    return
                if f["retry"] < retries and not job["_cancel"]:
                    f["_retries"].append({"attempt": f["retry"], "datetime": _now(), "reason": error})
                    f.update(file_state="SUBMITTED", retry=f["retry"] + 1, reason=error)
                else:
                    f.update(file_state="FAILED", finish_time=_now(), tx_duration=dur, reason=error)
                    return
            time.sleep(int(p.get("retry_delay") or 0))
