"""The verdict rules (analysis/verdicts/verdicts.md states them): utilisations, then the
first rule that matches. Input: one point's figures (``ev``, built by analysis.verdicts.attribution);
a read point (``ev["direction"] == "read"``) is held against the read ceilings of its cell, so
the texts say read where a write point's say write.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from xcbench.analysis.verdicts import between_run as _between
from xcbench.analysis.verdicts import borderline as _bl
from xcbench.analysis.verdicts import roles as _roles
from xcbench.analysis.verdicts import saturation as _sat
from xcbench.analysis.verdicts.amplification import describe
from xcbench.figures.numbers import is_finite
from xcbench.figures.stats import CONFIDENCE
from xcbench.figures.units import fmt_gbps, fmt_num

# client: the driver's host at its CPU or NIC limit (or not keeping its slots busy);
# concurrency: more transfers in flight would go faster (the site's knob, not its hardware)
VERDICTS = ("gateway", "storage-bandwidth", "storage-iops", "ec-overhead", "client", "concurrency",
            "network", "host-cpu", "storage-network", "storage-disk", "storage-host-cpu",
            "inconclusive")
NEAR = 0.85
OVER = 1.15  # the chain beats a storage probe by more than this: the probe is not its ceiling
STARVED = 0.25
SCALING = 1.25
GIB = float(1 << 30)
BIG_OP = float(1 << 20)  # a mean client op this large is held by bandwidth, not by an IOPS ceiling
SAME_IO = 2.0  # ops within this factor of fio's IOPS job's block size are "the same IO size"


def gbps(v: float) -> str:
    return fmt_gbps(v)  # the one rate unit of every figure a user reads


def pct(v: float) -> str:
    return f"{v * 100:.0f} %"


def io_word(ev: dict[str, Any]) -> str:
    """"read" for a read point, else "write" (old evidence has no direction: writes)."""
    return "read" if ev.get("direction") == "read" else "write"


def ops_key(ev: dict[str, Any]) -> str:
    """The evidence key of the pool's client op/s in the point's direction."""
    return f"pool_{io_word(ev)}_ops"


def _dev_iops(ev: dict[str, Any]) -> bool:
    """The level's and the IOPS probe's IOs were both counted at the storage device (writes)."""
    return (io_word(ev) == "write" and is_finite(ev.get("device_write_iops"))
            and is_finite(ev.get("fio_device_iops")) and ev["fio_device_iops"] > 0)


def _util(ev: dict[str, Any]) -> dict[str, float]:
    r = ev["rate"]
    u = {}
    if is_finite(ev.get("network_bytes_per_s")) and ev["network_bytes_per_s"] > 0:
        u["network"] = r / ev["network_bytes_per_s"]
    ops = ev.get(ops_key(ev))
    # a 4 KiB-op IOPS ceiling holds small ops; the chain's large ops (>= 1 MiB each) are
    # bounded by bytes, not by that count (under a device-bytes limit both fall together)
    small = not is_finite(ops) or ops <= 0 or r / ops < BIG_OP
    if small and _dev_iops(ev):
        # like with like: the device IOs the level made per second against those fio's IOPS
        # job made; a chain op (an XrdCeph lock, xattr or 256 KiB write) costs the device
        # another number of IOs than a 4 KiB random write, so op counts do not compare. The IO
        # count is the cap only where it is nearer its ceiling than the device's bytes are
        # theirs (under a bytes limit fio's 4 KiB job is held by bytes too: its IO/s are then
        # no IO-count ceiling)
        ui = ev["device_write_iops"] / ev["fio_device_iops"]
        ub = (ev["device_write_bytes_per_s"] / ev["fio_device_bytes_per_s"]
              if is_finite(ev.get("device_write_bytes_per_s")) and is_finite(ev.get("fio_device_bytes_per_s"))
              and ev["fio_device_bytes_per_s"] > 0 else math.nan)
        ev["device_use"] = {"ios": ui, "bytes": ub}
        if not (is_finite(ub) and ub >= ui):
            u["storage-iops"] = ui
    elif is_finite(ops) and ops > 0 and is_finite(ev.get("fio_iops")) and ev["fio_iops"] > 0 and small:
        # like with like: the pool's op/s against an IOPS figure of the same IO size only (an
        # IOPS figure at one size says nothing of another: a device holds fewer 256 KiB writes a
        # second than 4 KiB ones); ops of another size than fio's IOPS job are not compared
        bs, size = ev.get("fio_iops_bs"), r / ops
        if is_finite(bs) and bs > 0 and bs / SAME_IO <= size <= bs * SAME_IO:
            u["storage-iops"] = ops / ev["fio_iops"]
        else:
            ev["iops_not_comparable"] = (
                f"the chain's {io_word(ev)} ops average {size / 1024:.0f} KiB, fio's IOPS job "
                + (f"moves {float(bs) / 1024:.0f} KiB an IO" if is_finite(bs) else "has no one IO size")
                + ": not the same IO size (the device's own IO counts would compare)")
    # the tmpfs rate is a gateway *ceiling* only if it stopped growing with concurrency
    ceiling = ev.get("gateway_ceiling") if not (ev.get("gateway_growth", 0) >= SCALING) else None
    own = (ev.get("roles") or {}).get("gateway", {}).get("limit")
    twin = ev.get("gateway_twin_limit")
    if is_finite(own) and is_finite(twin) and abs(own - twin) > 0.01 * max(own, twin):
        ceiling = None  # the tmpfs gateway ran under another CPU limit: not this gateway's ceiling
        ev["gateway_ceiling_note"] = (f"tmpfs gateway limit {fmt_num(twin)} cores "
                                      f"({ev.get('gateway_twin_limit_source')}) vs {fmt_num(own)} here")
    gw = [x for x in (r / ceiling if is_finite(ceiling) and ceiling > 0 else None, ev.get("cpu")) if is_finite(x)]
    if gw:
        u["gateway"] = max(gw)
    if is_finite(ev.get("fio_bw")) and ev["fio_bw"] > 0:
        u["storage-bandwidth"] = r / ev["fio_bw"]
    return u


# Causes that predict opposite outcomes of one experiment are never co-limits of each other:
# concurrency says twice the transfers go faster; a resource the transfers share at its limit
# (the host's CPU, the gateway's, the driver's, a link) says they do not. Where both rules hold
# the second is a *conflict* (evidence ``conflicts``): an experiment decides, not a "+".
OPPOSED = frozenset(frozenset({"concurrency", r}) for r in ("host-cpu", "gateway", "client", "network"))


def opposed(a: str, b: str) -> bool:
    """Do the causes ``a`` and ``b`` predict opposite outcomes of one experiment (OPPOSED)?"""
    return frozenset({a, b}) in OPPOSED


def decide(ev: dict[str, Any]) -> tuple[str, str]:
    """(verdict, reason) for one point's figures (the rules of the module docstring). A rule
    the cascade looked at whose figure is within its own noise of the threshold is named as
    borderline (analysis.verdicts.borderline: evidence and reason say so), and so is the verdict the
    cascade reaches when the deciding figure falls on the other side of its threshold. Every
    other rule that holds too is a co-limit (evidence ``co_limits``, in the rules' order), but
    one predicting the opposite of the verdict or of a co-limit (OPPOSED) is a conflict
    (evidence ``conflicts``). The figure that decided is evidence ``deciding``."""
    ev.pop("borderline_candidates", None)
    ev.pop("co_limits", None)
    ev.pop("conflicts", None)
    ev.pop(_bl.PASSED, None)
    verdict, reason = _decide(ev)
    ev["deciding"] = deciding(ev, verdict)
    ev.pop(_bl.PASSED, None)
    if ev.get("probe_doubt"):  # analysis.verdicts.probes.doubted
        reason = reason.rstrip(".") + f"; {ev['probe_doubt']}."
    other = _otherwise(ev, verdict)
    if other:
        ev["borderline_candidates"].append({"rule": other, "figure": "otherwise", "otherwise_of": verdict})
    co, against = co_limits(ev, verdict, with_conflicts=True)
    ev["co_limits"], ev["conflicts"] = co, against
    reason = with_conflicting(with_co_limits(reason, co), against)
    return _bl.mark(ev, verdict, reason)


def deciding(ev: dict[str, Any], verdict: str) -> dict[str, Any] | None:
    """The figure that decided ``verdict``: the one its rule passed (analysis.verdicts.borderline
    records each), the role at its limit for a role-limit verdict, host-cpu's scaling efficiency
    where the busy cores did not reach the line and the chain's waits decided. None where no
    single figure did (inconclusive)."""
    passed = (ev.get(_bl.PASSED) or {}).get(verdict)
    if passed:
        return dict(passed)
    role = ev.get("limited_role")
    x = (ev.get("roles") or {}).get(role) if role else None
    if x and verdict in ("gateway", "client", "storage-iops", "storage-bandwidth") and is_finite(x.get("use")):
        return {"figure": f"{role} CPU of its limit", "value": x["use"], "threshold": NEAR, "at_most": False}
    eff = ev.get("scaling_efficiency") or {}
    if verdict == "host-cpu" and (ev.get("host_cpu_waits") or {}).get("low_efficiency") and is_finite(eff.get("high")):
        return {"figure": "scaling efficiency (upper bound)", "value": eff["high"],
                "threshold": _sat.EFFICIENCY_LOW, "at_most": True, "estimate": eff.get("value")}
    if verdict == "client" and is_finite(ev.get("starved_frac")):
        return {"figure": "seconds with idle slots and queued files", "value": ev["starved_frac"],
                "threshold": STARVED, "at_most": False}
    if verdict == "concurrency" and is_finite(ev.get("best_higher_growth_low")):
        return {"figure": "growth (lower bound)", "value": ev["best_higher_growth_low"],
                "threshold": SCALING, "at_most": False}
    return None


def with_co_limits(reason: str, co: list[str]) -> str:
    """The reason with its co-limits clause (none: as it is)."""
    if not co:
        return reason
    return reason.rstrip(".") + f"; co-limit{'s' if len(co) > 1 else ''} (their rules hold too): {', '.join(co)}."


def with_conflicting(reason: str, against: list[str]) -> str:
    """The reason with its conflicts clause (none: as it is)."""
    if not against:
        return reason
    return reason.rstrip(".") + (f"; conflicting (its rule holds too but predicts the opposite): "
                                 f"{', '.join(against)}: an experiment decides (xcbench confirm).")


def co_limits(ev: dict[str, Any], verdict: str, with_conflicts: bool = False):
    """The other rules that hold for this point, in the rules' order: the cascade run again
    with the verdict's rule (then each found one) taken as not passing, until it reaches
    inconclusive. Two runs that both see two causes then name both, whichever came first. A
    rule predicting the opposite of the verdict or of a co-limit already found (OPPOSED) is no
    co-limit: ``with_conflicts`` returns (co-limits, conflicts)."""
    found: list[str] = []
    against: list[str] = []
    skip = [verdict]
    while verdict != "inconclusive":
        alt = copy.deepcopy(ev)
        alt.pop("borderline_candidates", None)
        alt[_bl.SKIP] = list(skip)
        v = _decide(alt)[0]
        if v == "inconclusive" or v in skip:
            break
        (against if any(opposed(v, w) for w in (verdict, *found)) else found).append(v)
        skip.append(v)
    return (found, against) if with_conflicts else found


def _otherwise(ev: dict[str, Any], verdict: str) -> str | None:
    """The verdict one figure's noise away past the deciding rule: when the figure that named
    ``verdict`` passed its threshold only within its noise, the rest of the cascade decides (a
    run whose figure fell short names that); None when the verdict was not a borderline pass or
    the rest names it too."""
    if not any(c["rule"] == verdict and c.get("figure") != "otherwise"
               for c in ev.get("borderline_candidates") or ()):
        return None
    alt = copy.deepcopy(ev)
    alt.pop("borderline_candidates", None)
    alt[_bl.SKIP] = [verdict]  # that rule's figure fell short: its passes() are False
    other = _decide(alt)[0]
    return other if other != verdict else None


def _gw_rel_se(ev: dict[str, Any], u: dict[str, float]) -> float:
    """The noise of u_gw: of R/G (both rates' errors) when that is the larger part, else of the
    gateway's CPU share (its samples' error over the window)."""
    r, g, se = ev["rate"], ev.get("gateway_ceiling"), ev.get("rate_rel_se")
    if is_finite(g) and g > 0 and math.isclose(u.get("gateway", math.nan), r / g):
        return _bl.combined(se, ev.get("gateway_ceiling_rel_se"))
    return _bl.combined(ev.get("gateway_cores_rel_se"))


def _decide(ev: dict[str, Any]) -> tuple[str, str]:
    r, conc, mode = ev["rate"], ev["concurrency"], ev["mode"]
    se = _bl.combined(ev.get("rate_rel_se"))  # the level's own noise (0 when unknown)
    io = io_word(ev)
    u = _util(ev)
    ev["utilisation"] = u
    beaten = {k: v for k, v in u.items() if k in ("storage-bandwidth", "storage-iops") and v > OVER}
    u = {k: v for k, v in u.items() if k not in beaten}
    ev["not_ceilings"] = sorted(beaten)
    ev["thresholds"] = {"near": NEAR, "starved": STARVED, "scaling": SCALING, "scaling_confidence": CONFIDENCE}
    at = f"at {fmt_num(conc)} transfers ({mode}{', reads' if io == 'read' else ''})"
    cpu_txt = (f"gateway CPU {fmt_num(ev['gateway_cores'])} of {fmt_num(ev['cores'])} cores "
               f"({pct(ev['cpu'])})") if is_finite(ev.get("cpu")) else None
    host_txt = f"host CPU {pct(ev['host_busy'])} busy" if is_finite(ev.get("host_busy")) else None

    if _bl.passes(ev, "network", "share of the iperf3 baseline", u.get("network"), NEAR, se):
        return "network", (f"The chain moves {gbps(r)} {at}, "
                           f"{pct(u['network'])} of the iperf3 baseline "
                           f"({gbps(ev['network_bytes_per_s'])}).")
    skip = ev.get(_bl.SKIP, ())
    limited = _roles.at_limit_verdict(ev, at, gbps(r))
    if limited and limited[0] not in skip:
        return limited
    dev = _dev_iops(ev) and "storage-iops" in u
    between = ev.get("between_run") or {}
    if _bl.passes(ev, "storage-iops", "share of fio's IOPS" + (" (device IOs)" if dev else ""),
                  u.get("storage-iops"), NEAR, _bl.combined(None if dev else ev.get(ops_key(ev) + "_rel_se"),
                                                           _between.probe(between, io, "iops"))):
        if dev:
            ops, ub = ev.get(ops_key(ev)), ev["device_use"]["bytes"]
            return "storage-iops", (f"The storage device does {fmt_num(ev['device_write_iops'])} write "
                                    f"IO/s {at}, {pct(u['storage-iops'])} of the "
                                    f"{fmt_num(ev['fio_device_iops'])} IO/s fio's {ev['fio_iops_job']} "
                                    f"job made it do ({fmt_num(ev['fio_iops'])} IOPS)"
                                    + (f", its bytes at {pct(ub)} of their ceiling" if is_finite(ub) else "")
                                    + f", while the chain moves only {gbps(r)}"
                                    + (f" in {fmt_num(ops)} pool {io} op/s" if is_finite(ops) else "") + ".")
        return "storage-iops", (f"The pool {ev['pool']} sustains {fmt_num(ev[ops_key(ev)])} "
                                f"{io} op/s {at}, {pct(u['storage-iops'])} of the "
                                f"{fmt_num(ev['fio_iops'])} IOPS fio measured ({ev['fio_iops_job']}), "
                                f"while the chain moves only {gbps(r)}.")
    ugw, ubw = u.get("gateway", 0), u.get("storage-bandwidth", 0)
    if ugw < NEAR and _bl.passes(ev, "ec-overhead", "EC/replicated rate", ev.get("ec_ratio"), NEAR,
                                 _bl.combined(se, ev.get("rep_rate_rel_se")), at_most=True):
        rho = (f"; measured raw/logical {fmt_num(ev['raw_per_logical'])} "
               f"(expected {fmt_num(ev['raw_expected'])})") if is_finite(ev.get("raw_per_logical")) else ""
        if io == "read":
            rho = "; " + amplification_text(ev)
        tail = f"; {host_txt}" if host_txt and ev.get("roles") else ""
        return "ec-overhead", (f"On the EC pool the chain moves {gbps(r)} {at}, "
                               f"{pct(ev['ec_ratio'])} of the same layout on {ev['rep_pool']} "
                               f"({gbps(ev['rep_rate'])}){rho}{tail}.")
    # a storage ceiling measured on this host and reached names the cap more closely than a busy
    # host CPU (which others' load may fill): it comes first unless the gateway's is nearer
    bw_first = ubw >= ugw
    # R / F: the probe's own noise (fio's interval samples) and its between-run term too
    se_bw = _bl.combined(se, ev.get("fio_bw_rel_se"), _between.probe(between, io, "bw"))
    if bw_first and _bl.passes(ev, "storage-bandwidth", "share of the fio ceiling",
                               u.get("storage-bandwidth"), NEAR, se_bw):
        return _bandwidth(ev, r, at, io, ubw)
    host = _roles.host_cpu_verdict(ev, at, gbps(r), NEAR, reaches=lambda busy: _bl.passes(
        ev, "host-cpu", "host CPU busy", busy, NEAR,
        _bl.combined(ev.get("host_busy_rel_se"), between.get("host_busy"))))
    if host:
        return host
    if ugw >= ubw and _bl.passes(ev, "gateway", "gateway use", u.get("gateway"), NEAR, _gw_rel_se(ev, u)):
        parts = []
        if is_finite(ev.get("gateway_ceiling")):
            parts.append(f"{pct(r / ev['gateway_ceiling'])} of the tmpfs-gateway ceiling "
                         f"({gbps(ev['gateway_ceiling'])})")
        if cpu_txt:
            parts.append(cpu_txt)
        if is_finite(ev.get("fio_bw")):
            parts.append(f"fio allows {gbps(ev['fio_bw'])}")
        return "gateway", f"The chain moves {gbps(r)} {at}: " + "; ".join(parts) + "."
    if not bw_first and _bl.passes(ev, "storage-bandwidth", "share of the fio ceiling",
                                   u.get("storage-bandwidth"), NEAR, se_bw):
        return _bandwidth(ev, r, at, io, ubw)
    starved = ev.get("starved_frac")
    if is_finite(starved) and starved >= STARVED and "client" not in skip:
        return "client", (f"The client left transfer slots idle while files were queued in "
                          f"{pct(starved)} of the seconds {at}; the chain moved {gbps(r)}.")
    if is_finite(ev.get("gateway_starved")) and ev["gateway_starved"] >= STARVED and "client" not in skip:
        return "client", (f"Even into tmpfs the client left slots idle {pct(ev['gateway_starved'])} "
                          f"of the time {at}; the chain moved {gbps(r)}.")
    grows, growth_txt = _growth(ev, r)
    if grows and "concurrency" not in skip:
        return "concurrency", (f"The rate still grows with concurrency: {gbps(r)} {at} but "
                          f"{gbps(ev['best_higher_rate'])} at {fmt_num(ev['best_higher_level'])}"
                          f"{growth_txt}, so more transfers in flight would go faster.")
    names = {"network": "iperf3", "gateway": "gateway", "storage-bandwidth": "fio bandwidth",
             "storage-iops": "fio IOPS"}
    missing = [what for what, ok in (
        ("tmpfs-gateway ceiling at this level", is_finite(ev.get("gateway_ceiling")) or ev.get("backend") == "tmpfs"),
        ("fio probe", is_finite(ev.get("fio_bw")) or is_finite(ev.get("fio_iops")) or ev.get("backend") == "tmpfs"),
        ("iperf3 baseline", is_finite(ev.get("network_bytes_per_s")))) if not ok]
    if u:
        ceil = ", ".join(f"{names[k]} {pct(v)}" for k, v in sorted(u.items(), key=lambda x: -x[1]))
        why = f"below every measured ceiling ({ceil}); none within {pct(1 - NEAR)}"
    else:
        why = "not comparable with any ceiling"
    if missing:
        why += "; not measured: " + ", ".join(missing)
    if ev.get("fio_note"):
        why += f"; {ev['fio_note']}"
    if ev.get("iops_not_comparable"):
        why += f"; {ev['iops_not_comparable']}"
    if beaten:
        why += "; the chain beats " + ", ".join(f"{names[k]} ({pct(v)})" for k, v in beaten.items()) \
            + (", so that probe is no ceiling of this path (direct I/O vs the gateway's buffered "
               f"{io}s?)")
    if growth_txt:
        why += (f"; {gbps(ev['best_higher_rate'])} at {fmt_num(ev['best_higher_level'])}"
                f"{growth_txt}, not surely {fmt_num(SCALING)}x: not shown to grow with concurrency")
    if ev.get("gateway_ceiling_note"):
        why += f"; the tmpfs cell is no gateway ceiling here ({ev['gateway_ceiling_note']})"
    tail = f"; {host_txt}" if host_txt else ""
    if ev.get("roles") and _roles.summary(ev["roles"]):
        tail += f"; role CPU/limit in cores: {_roles.summary(ev['roles'])}"
    return "inconclusive", f"The chain moves {gbps(r)} {at}, {why}{tail}."


def _bandwidth(ev: dict[str, Any], r: float, at: str, io: str, ubw: float) -> tuple[str, str]:
    g = (f", while the tmpfs gateway does {gbps(ev['gateway_ceiling'])}"
         if is_finite(ev.get("gateway_ceiling")) else "")
    host = (f"; host CPU {pct(ev['host_busy'])} busy" if is_finite(ev.get("host_busy")) and ev.get("roles")
            and ev["host_busy"] >= NEAR else "")
    return "storage-bandwidth", (f"The chain moves {gbps(r)} {at}, {pct(ubw)} of the fio {io} "
                                 f"ceiling of this layout and pool ({gbps(ev['fio_bw'])}){g}{host}.")


def _growth(ev: dict[str, Any], r: float) -> tuple[bool, str]:
    """(does the rate surely grow >= SCALING x at a higher level?, the words for its bound).

    Surely: the one-sided 95 % lower bound of rate(higher) / rate (figures.stats, from each
    level's own noise) is >= SCALING. A growth that reaches SCALING only within the noise is
    not called, and is a borderline candidate (analysis.verdicts.borderline): another run would call it.
    Without noise figures the plain ratio is used."""
    hi = ev.get("best_higher_rate")
    if not (is_finite(hi) and r > 0):
        return False, ""
    low = ev.get("best_higher_growth_low")
    if not is_finite(low):
        return hi >= SCALING * r, ""
    noise = f" ({ev['rate_noise']})" if ev.get("rate_noise") else ""
    words = (f" (x{fmt_num(hi / r)}; at least x{fmt_num(low)} at {CONFIDENCE * 100:.0f} % given "
             f"the levels' noise{noise})")
    if low > 0:  # the interval of the growth: low = g exp(-z se)
        _bl.passes(ev, "concurrency", "growth", hi / r, SCALING, max(math.log(hi / r / low), 0.0) / _bl.Z)
    if low >= SCALING:
        return True, words
    return False, words if hi >= SCALING * r else ""


def amplification_text(ev: dict[str, Any]) -> str:
    """'the OSDs read 1.52x the bytes read (replicated twin 1.01x)' or '... not measured'."""
    a, rep = ev.get("read_amplification"), ev.get("rep_read_amplification")
    if not is_finite(a):
        return "OSD read amplification not measured (no BlueStore read counters sampled)"
    twin = f" (replicated twin {describe(rep)})" if is_finite(rep) else ""
    return f"the OSDs read {describe(a)} the bytes the campaign read{twin}"
