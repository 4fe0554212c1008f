"""Target-rate presets: the rates sites are asked to plan for, and custom targets.

The rate is the sustained external rate through the site's gateways (both directions summed).
Read/write mixes and file sizes of the presets are planning assumptions, not published numbers:
the report prints them and ``--write-fraction`` / ``--file-size`` change them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xcbench.errors import XcbError
from xcbench.figures.units import SECONDS_PER_YEAR, from_gbps, parse_capacity, parse_rate, parse_size


@dataclass(frozen=True)
class RateTarget:
    name: str
    rate: float  # bytes/s, external, through the gateways
    write_fraction: float  # share of `rate` that is written into the site (ingest)
    file_size: int  # bytes (powers of 1024, as xcbench.figures.units)
    description: str = ""
    volume_per_year: float | None = None  # bytes stored per year, if the target states one
    source: str = ""  # where the rate (and volume) were published; "" for a custom target

    @property
    def average_rate(self) -> float | None:
        """The mean ingest rate that the annual volume implies (bytes/s)."""
        return self.volume_per_year / SECONDS_PER_YEAR if self.volume_per_year else None


RAL_CHEP2024 = ("J. Walder, J. Thomas, T. Byrne (STFC RAL), 'Achieving 100Gb/s data rates with XRootD - "
                "Preparing for HL-LHC and SKA', CHEP 2024, 21 Oct 2024, "
                "https://indico.cern.ch/event/1338689/contributions/6010880/")
SKA_SOURCE = ("SKAO figures for AA4 as quoted in " + RAL_CHEP2024 + " (as transcribed by xcbench; "
              "the slide itself was not re-read by xcbench)")
HLLHC_SOURCE = ("HL-LHC Tier-1 network scenarios for RAL (minimal / flexible) as transcribed by xcbench "
                "from " + RAL_CHEP2024 + "; not re-read by xcbench")
USCMS_SOURCE = ("US-CMS Tier-2 HL-LHC requirement of 400 Gb/s to storage: A. Arora et al., '400Gbps "
                "benchmark of XRootD HTTP-TPC', CHEP 2023, EPJ Web Conf. 295, 01001 (2024), "
                "doi:10.1051/epjconf/202429501001")

PRESETS: dict[str, RateTarget] = {
    "ska-aa4-low": RateTarget(
        "ska-aa4-low", from_gbps(55), 0.8, parse_size("6.5G"),
        "SKA at AA4, low estimate: 216 PB/year, i.e. 55 Gb/s sustained. Mostly ingest (write "
        "fraction 0.8 assumed).", volume_per_year=216e15, source=SKA_SOURCE),
    "ska-aa4-mid": RateTarget(
        "ska-aa4-mid", from_gbps(100), 0.8, parse_size("6.5G"),
        "SKA at AA4, mid estimate: 400 PB/year, i.e. 100 Gb/s sustained. Mostly ingest (write "
        "fraction 0.8 assumed).", volume_per_year=400e15, source=SKA_SOURCE),
    "ska-aa4": RateTarget(
        "ska-aa4", from_gbps(200), 0.8, parse_size("6.5G"),
        "SKA at AA4, full operations: 100 Gb/s per telescope for each of two telescopes (SKA-Low, "
        "SKA-Mid) = 200 Gb/s peak; volume: the mid estimate, 400 PB/year. Mostly ingest (write "
        "fraction 0.8 assumed).", volume_per_year=400e15, source=SKA_SOURCE),
    "hl-lhc-t1": RateTarget(
        "hl-lhc-t1", from_gbps(610), 0.5, parse_size("4G"),
        "HL-LHC Tier-1 (RAL), minimal scenario: 610 Gb/s. Tier-1s both take in RAW/derived data "
        "and serve it out (write fraction 0.5 assumed).", source=HLLHC_SOURCE),
    "hl-lhc-t1-flex": RateTarget(
        "hl-lhc-t1-flex", from_gbps(1220), 0.5, parse_size("4G"),
        "HL-LHC Tier-1 (RAL), flexible scenario: 1.22 Tb/s (twice the minimal). Write fraction 0.5 "
        "assumed.", source=HLLHC_SOURCE),
    "uscms-t2": RateTarget(
        "uscms-t2", from_gbps(400), 0.3, parse_size("3G"),
        "US-CMS Tier-2: 400 Gb/s. Tier-2s mostly serve analysis reads (write fraction 0.3 "
        "assumed).", source=USCMS_SOURCE),
}

# a custom --rate target: all of it written, 4 GiB files
CUSTOM_WRITE_FRACTION = 1.0
CUSTOM_FILE_SIZE = parse_size("4G")


def resolve_target(preset: str | None = None, rate: str | None = None,
                   write_fraction: float | None = None, file_size: str | None = None,
                   volume_per_year: str | None = None) -> RateTarget:
    """A preset, a custom rate, or a preset with some fields changed. XcbError names the flag."""
    if preset and rate:
        raise XcbError("--target and --rate: give one (a preset, or a custom rate)")
    if preset:
        if preset not in PRESETS:
            raise XcbError(f"--target: unknown preset {preset!r} (known: {', '.join(PRESETS)})")
        t = PRESETS[preset]
    elif rate:
        try:
            r = parse_rate(rate)
        except ValueError as e:
            raise XcbError(f"--rate: {e}") from None
        t = RateTarget("custom", r, CUSTOM_WRITE_FRACTION, CUSTOM_FILE_SIZE,
                   f"custom target {rate}")
    else:
        raise XcbError("plan: give --target PRESET or --rate RATE (e.g. --rate 100Gb/s)")
    if t.rate <= 0:
        raise XcbError(f"--rate: must be > 0 (got {rate})")
    if write_fraction is not None:
        if not 0.0 <= write_fraction <= 1.0:
            raise XcbError(f"--write-fraction: must be between 0 and 1 (got {write_fraction})")
        t = replace(t, write_fraction=float(write_fraction))
    if file_size is not None:
        try:
            fs = parse_size(file_size)
        except ValueError as e:
            raise XcbError(f"--file-size: {e}") from None
        if fs <= 0:
            raise XcbError("--file-size: must be > 0")
        t = replace(t, file_size=fs)
    if volume_per_year is not None:
        try:
            t = replace(t, volume_per_year=parse_capacity(volume_per_year) or None)
        except ValueError as e:
            raise XcbError(f"--volume-per-year: {e}") from None
    return t
