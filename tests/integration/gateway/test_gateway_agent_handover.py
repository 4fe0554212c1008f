"""The xrootd user on a gateway host reached over ssh cannot make root (the gateway agent) run its
code, write through its links or pass it root's secrets.

A gateway (a redirector and two origins, three gateway agents) is started over real ssh on an
emulated gateway host (tests/support/sshsite.py); the agents run with a token in their own
environment. The attacker (as the xrootd user) watches the scratch dir the agents make their dirs
in, and plants Python packages, sitecustomize.py and a link to a root-owned file in every dir it
is handed the moment that dir appears (before the daemons and root's helpers start), links at
every name a daemon's stdout/stderr file had in its logs dir among them, again in
every handed dir once the gateway runs, then the gateway is stopped (the agents copy the logs
back) and a second one started and stopped with the attacker still at work. No marker appears
(root ran nothing), the victim and the link targets keep owner, mode and content, the daemons'
environment holds no token, and nothing planted reaches the coordinator's kept dir.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from tests.support.gwcheck import xrootd_workdir
from tests.support.planted import VICTIM_TEXT, bait, link, plant
from tests.support.sshsite import ssh_site, why_no_ssh_site
from xcbench.backends.base import Target
from xcbench.gateway.agent_parts import SCRATCH
from xcbench.gateway.remote import start_remote_gateway
from xcbench.system import proc
from xcbench.system.xrootd_user import DAEMON_PATH, xrootd_ids

TAG = f"{os.getpid() % 10000}"
SECRET = "xcb-test-agent-secret-token"
# the dirs gateway agents make in SCRATCH: theirs, the gateways' admin dirs, the tmpfs exports
PREFIXES = ("xcb-gwagent-", "xcbgw-", "xcb-tmpfs-")

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(why_no_ssh_site()), reason=why_no_ssh_site() or "-")]


@pytest.fixture(scope="module")
def site():
    with ssh_site("h", TAG, agent_env={"XCB_TEST_TOKEN": SECRET}) as s:
        yield s


class Attacker(threading.Thread):
    """The xrootd user at work: every dir it owns below a new agent dir of SCRATCH gets the
    package, the customize files and a link, as soon as it is seen (and once more on
    :meth:`again`)."""

    def __init__(self, ids, markers: Path, victim: Path, vdir: Path, home: Path):
        super().__init__(daemon=True, name="xcb-test-attacker")
        self.ids, self.markers, self.victim, self.vdir = ids, markers, victim, vdir
        self.home = home  # the agents' state home: the dirs they record before making them
        self.before = set(os.listdir(SCRATCH))
        self.done = threading.Event()
        self.seen: set[Path] = set()
        self.planted: list[Path] = []
        self.lock = threading.Lock()

    def agents_dirs(self) -> set[str]:
        """The names of the scratch dirs this test's agents recorded (a record is written before
        its dir is made): on a shared machine, other tests' gateways make dirs of the same names,
        and are not this test's to attack."""
        names: set[str] = set()
        for f in (self.home / "procs").glob("*.json"):
            try:
                names |= {Path(d["path"]).name for d in json.loads(f.read_text()).get("dirs", [])}
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return names

    def handed(self) -> list[Path]:
        """The attacker's dirs below (or at) the agents' new dirs (not entered: its own)."""
        out = []
        ours = self.agents_dirs()
        for name in sorted(set(os.listdir(SCRATCH)) - self.before):
            if not name.startswith(PREFIXES) or name not in ours:
                continue
            top = Path(SCRATCH) / name
            if self._theirs(top):
                out.append(top)
                continue
            for r, ds, _ in os.walk(top):
                mine = [n for n in ds if self._theirs(Path(r) / n)]
                out += [Path(r) / n for n in mine]
                ds[:] = [n for n in ds if n not in mine]
        return out

    def _theirs(self, d: Path) -> bool:
        try:
            st = os.lstat(d)
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode) and st.st_uid == self.ids[0]

    def attack(self, d: Path, round_: str) -> None:
        tag = f"{round_}-{d.name}"
        try:
            got = plant(d, self.ids, self.markers, tag)
            # in an export: the origins' dirs, taken first (an origin agent makes its own)
            links = [("planted-link.log", self.victim), ("origin-1", self.vdir), ("origin-2", self.vdir)]
            # the names the daemons' stdout/stderr files had in their logs dir: to files that do
            # not exist in a dir only root writes (root opening one would create it)
            links += [(f"{n}-{dmn}.out", self.markers / f"created-{tag}-{n}-{dmn}")
                      for n in ("xcb", "mgr", "o1", "o2") for dmn in ("xrootd", "cmsd")]
            for name, to in links:
                p = link(d, name, to, self.ids)
                if p is not None:
                    got.append(p)
        except OSError:  # the dir went away meanwhile (a stop)
            return
        with self.lock:
            self.planted += got

    def run(self) -> None:
        while not self.done.wait(0.005):
            try:
                dirs = self.handed()
            except OSError:
                continue
            for d in dirs:
                if d not in self.seen:
                    self.seen.add(d)
                    self.attack(d, "early")

    def again(self) -> int:
        dirs = self.handed()
        for d in dirs:
            self.attack(d, "during")
        return len(dirs)


def _daemon_env(pid: int) -> list[bytes]:
    return [e for e in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if e]


def test_planted_code_and_links_on_an_ssh_gateway_host_do_nothing(site, capsys):
    ids = xrootd_ids()
    if ids is None:
        pytest.skip("the attack needs root handing dirs to the xrootd user")
    procs = proc.ProcessSet(record=False)
    with bait() as (markers, victim, vdir), xrootd_workdir("xcb-test-agent-handover-") as wd:
        spy = Attacker(ids, markers, victim, vdir, Path(site["home"]))
        spy.start()
        gws = []
        try:
            target = Target(cell_id="ah1", backend="tmpfs", info={"size": 32 << 20})
            gw = start_remote_gateway(target, workdir=wd, origins=2, hosts=site["inv"],
                                      procs=procs, name="ah1")
            gws.append(gw)
            agent_pids = [p.msgs["hello"]["pid"] for p in gw.parts]
            # the agents (root) hold the token: the test would see it leak
            assert all(f"XCB_TEST_TOKEN={SECRET}".encode() in _daemon_env(pid) for pid in agent_pids)
            for s in gw.servers:
                env = _daemon_env(s.pid)
                names = {e.split(b"=", 1)[0].decode() for e in env}
                assert not any(SECRET.encode() in e for e in env), s.name
                assert f"PATH={DAEMON_PATH}".encode() in env, s.name
                assert names <= {"PATH", "HOME", "LANG", "XRD_CPUSEPGWRTRD", "LISTEN_FDS",
                                 "LISTEN_PID"}, (s.name, names)
            early = len(spy.planted)
            handed = spy.again()  # during: every dir handed to the xrootd user, now
            assert handed >= 4, spy.seen  # the export and each daemon's admin path and logs dir
            assert gw.server_counters(gw.servers) is not None  # root's agents sample meanwhile
            gw.stop()
            kept = [p for p in gw.keep_dir.rglob("*") if p.is_file()]
            assert any(p.name.endswith("-xrootd.log") for p in kept), kept
            assert not any(VICTIM_TEXT in p.read_text(errors="replace") for p in kept)
            assert not any(p.name == "planted-link.log" for p in gw.keep_dir.rglob("*"))
            # a second gateway's life, the attacker still at work from its first moment
            gw2 = start_remote_gateway(Target(cell_id="ah2", backend="tmpfs",
                                              info={"size": 32 << 20}),
                                       workdir=wd, origins=1, hosts=site["inv"], procs=procs,
                                       name="ah2")
            gws.append(gw2)
            spy.again()
            gw2.stop()
        finally:
            spy.done.set()
            spy.join(10)
            for g in gws:
                g.stop()
            procs.stop_all()
        with capsys.disabled():
            print(f"\nssh handover attack: {len(spy.planted)} paths planted ({early} as soon as "
                  f"their dir appeared) in {len(spy.seen)} handed dirs")
        assert early > 0  # the attacker got in before the gateway was up
        assert sorted(p.name for p in markers.iterdir()) == ["vdir", "victim"], \
            "root ran planted code or opened a planted link"
        st = victim.stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode), victim.read_text()) == (0, 0o600, VICTIM_TEXT)
        assert vdir.stat().st_uid == 0  # never chowned through the link
