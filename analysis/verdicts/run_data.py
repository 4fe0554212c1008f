"""One run, loaded once and summarised: cells, steady windows, per-level points, probe ceilings.

Everything the attribution, the report and `xcbench compare` show comes from here, and each
figure carries a *source*: a dict naming the run, the table, the pandas query selecting the
rows and the aggregation that gives the figure (see :func:`source`), so it can be recomputed
from the Parquet files (tests/unit/analysis/test_traceability.py does).

Column meanings: rates are bytes/s; ``rate`` of a point is the mean over repeats of each
repeat's bytes over its steady window (figures.steady.level_steady), with a bootstrap CI over
repeats. A point is (cell, concurrency, direction): write, or read (analysis.verdicts.directions; a mixed
campaign gives one of each). Tables come in today's shape whatever xcbench wrote them
(xcbench.store.upgrade, applied by RunDir.table).
"""

from __future__ import annotations

import json
import math
from collections.abc import Set as AbstractSet
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from xcbench.analysis.verdicts import directions as _dirs
from xcbench.analysis.verdicts import probes as _probes
from xcbench.analysis.verdicts.samples import SampleIndex
from xcbench.analysis.verdicts.sources import source, source_text  # noqa: F401 - source_text: re-exported
from xcbench.cell import Cell
from xcbench.errors import XcbError
from xcbench.figures import steady as _steady
from xcbench.figures.stats import Stats
from xcbench.figures.units import parse_size
from xcbench.store.rundir import RunDir

TRANSFER_COLS = ["cell_id", "campaign_id", "concurrency", "repeat", "file_size", "transferred",
                 "start_time", "finish_time", "tx_duration", "throughput", "file_state", "direction"]
LEVEL_KEYS = ("cell_id", "campaign_id", "concurrency")  # a transfer without them is in no level


def _q(v: Any) -> str:
    return json.dumps(v) if isinstance(v, str) else repr(v)


def _bs(v: Any) -> float:
    try:
        return float(parse_size(v if not isinstance(v, float) else int(v)))
    except (TypeError, ValueError):
        return math.nan


def stored_cells(manifest: dict[str, Any], where: str) -> dict[str, Cell]:
    """{cell_id: Cell} rebuilt by the cell's own code from the settings the manifest stores
    (Cell.from_settings); a cell stored without settings (a run older than them) is left out,
    one whose settings are not a cell's is an XcbError naming ``where``, the cell and the field."""
    out = {}
    for cid, c in (manifest.get("cells") or {}).items():
        s = (c or {}).get("settings") or {}
        if not s.get("backend"):
            continue
        try:
            out[cid] = Cell.from_settings(s, id=cid, label=c.get("label") or cid)
        except ValueError as e:
            raise XcbError(f"{where}: manifest.json: cell {cid}: settings: {e}") from None
    return out


def cell_frame(manifest: dict[str, Any], cells: dict[str, Cell],
               extra_ids: AbstractSet[str] = frozenset()) -> pd.DataFrame:
    """One row per cell of the manifest (plus ids only seen in the tables); what a cell's settings
    say is the cell's own (``cells``: stored_cells), its layout's and pool's names, labels and raw
    ratio too; the manifest gives each its label, status, error and pool as created."""
    rows = []
    stored = dict(manifest.get("cells") or {})
    for cid in sorted(extra_ids - set(stored)):
        stored[cid] = {"label": cid, "status": "unknown"}
    for cid, c in stored.items():
        cell = cells.get(cid)
        lay, pool = (cell.layout, cell.pool) if cell else (None, None)
        fp_pool = ((c.get("fingerprint") or {}).get("pool") or {})
        rows.append({
            "cell_id": cid, "label": c.get("label") or cid, "status": c.get("status", "unknown"),
            "error": c.get("error"), "backend": cell.backend if cell else c.get("backend") or "",
            "mode": cell.mode if cell else "", "origins": cell.origins if cell else 1,
            "stripe_unit": lay.stripe_unit if lay else None,
            "stripe_count": lay.stripe_count if lay else None,
            "object_size": lay.object_size if lay else None, "layout": lay.label if lay else "",
            "pool_kind": pool.kind if pool else None,
            "pool": c.get("pool_name") or fp_pool.get("name") or (pool.name if pool else None),
            "pool_label": pool.label if pool else "",
            "raw_ratio_expected": pool.raw_ratio if pool else math.nan,
            "file_size": cell.file_size if cell else None, "files": cell.files if cell else None,
            "size_dist": cell.size_dist if cell else "",
            "gateway": json.dumps(dict(cell.gateway_settings) if cell else {}, sort_keys=True),
            "levels": cell.concurrency if cell else (),
        })
    cols = ["cell_id", "label", "status", "error", "backend", "mode", "origins", "stripe_unit",
            "stripe_count", "object_size", "layout", "pool_kind", "pool", "pool_label",
            "raw_ratio_expected", "file_size", "files", "size_dist", "gateway", "levels"]
    return pd.DataFrame(rows, columns=cols).set_index("cell_id", drop=False)


POINT_COLS = ["cell_id", "concurrency", "direction", "repeats", "rate", "ci_low", "ci_high",
              "rate_cv_repeats", "window_cv", "window_n", "window_rel_se", "run_rate", "run_cv", "method",
              "steady", "ended_by", "starved_frac",
              "wall_start", "wall_end", "finished", "failed", "source"]


def _rms(x: pd.Series) -> float:
    v = pd.to_numeric(x, errors="coerce").dropna()
    return float((v * v).mean() ** 0.5) if len(v) else math.nan


class RunData:
    """A run's tables and the summaries derived from them (computed lazily, once)."""

    def __init__(self, run: RunDir | str | Path):
        self.run = run if isinstance(run, RunDir) else RunDir.open(run)
        self.run_id = self.run.run_id
        self.manifest = self.run.manifest

    def reread(self, *tables: str) -> None:
        """Read ``tables`` (``verdicts``: the stored ones) and the manifest again at their next
        use: written since this was loaded (the verdicts and their findings, by the attribution
        that concludes a run: xcbench.analysis.conclude)."""
        self.manifest = self.run.manifest
        for t in tables:
            self.__dict__.pop("stored_verdicts" if t == "verdicts" else t, None)

    # --- raw tables ------------------------------------------------------------------------
    @cached_property
    def transfers(self) -> pd.DataFrame:
        df = self.run.table("transfers", columns=TRANSFER_COLS)
        for c in ("file_size", "transferred", "start_time", "finish_time", "tx_duration",
                  "throughput", "concurrency", "repeat"):
            df[c] = pd.to_numeric(df[c], errors="coerce")
        df["direction"] = _dirs.transfer_direction(df)
        return self._levelled(df)

    def _levelled(self, df: pd.DataFrame) -> pd.DataFrame:
        """Transfers with their level keys; a level the campaigns table knows is filled in from
        it, any other gap is an XcbError naming the run, table and column (no level invented)."""
        if df.empty:
            return df
        cp = self.campaigns
        if df["concurrency"].isna().any() and len(cp) and cp["concurrency"].notna().any():
            conc = dict(zip(cp["campaign_id"], pd.to_numeric(cp["concurrency"], errors="coerce"),
                            strict=False))
            df["concurrency"] = df["concurrency"].fillna(df["campaign_id"].map(conc))
        for col in LEVEL_KEYS:
            n = int(df[col].isna().sum())
            if n and self.timeline_derived:  # the levels must come from these rows
                raise XcbError(f"run {self.run_id}: transfers: {n} of {len(df)} rows have no {col}"
                               f"{'' if len(cp) else ' and the run has no campaigns table to give it'}"
                               f": cannot tell which concurrency level they belong to")
        return df

    @cached_property
    def timeline_derived(self) -> bool:
        return not self.run.has_table("timeline")

    @cached_property
    def timeline(self) -> pd.DataFrame:
        if self.timeline_derived:
            return _steady.timeline_from_transfers(self.transfers)
        df = self.run.table("timeline")
        for c in ("concurrency", "repeat", "t", "wall", "bytes", "rate", "active", "done", "failed"):
            df[c] = pd.to_numeric(df[c], errors="coerce")
        return df

    @cached_property
    def campaigns(self) -> pd.DataFrame:
        return self.run.table("campaigns")

    @cached_property
    def directions(self) -> dict[str, str]:
        """{campaign_id: write | read | mixed} (analysis.verdicts.directions)."""
        return _dirs.campaign_directions(self.campaigns, self.cell_objects, self.timeline)

    @cached_property
    def directional_timeline(self) -> pd.DataFrame:
        """The timeline with a ``direction`` column, mixed campaigns split per direction."""
        def rebuild(camp):
            tr = self.transfers
            return _steady.timeline_from_transfers(tr[tr["campaign_id"] == camp])
        return _dirs.directional_timeline(self.timeline, self.directions, rebuild)

    @cached_property
    def probes(self) -> pd.DataFrame:
        df = self.run.table("probes")
        for c in ("iops", "bw", "iodepth", "numjobs", "lat_mean_us", "lat_p99_us", "runtime_s"):
            df[c] = pd.to_numeric(df[c], errors="coerce")
        df["bs_bytes"] = df["bs"].map(_bs) if len(df) else pd.Series(dtype=float)
        return df

    @cached_property
    def samples(self) -> SampleIndex:
        return SampleIndex(self.run.table("samples", columns=["cell_id", "wall", "metric",
                                                              "value", "labels"]))

    @cached_property
    def baseline(self) -> pd.DataFrame:
        return self.run.table("baseline")

    @cached_property
    def findings(self) -> pd.DataFrame:
        return self.run.table("findings")

    @cached_property
    def gaps(self) -> pd.DataFrame:
        return self.run.table("gaps")

    @cached_property
    def stored_verdicts(self) -> pd.DataFrame:
        return self.run.table("verdicts")

    # --- summaries -------------------------------------------------------------------------
    @cached_property
    def cell_objects(self) -> dict[str, Cell]:
        """{cell_id: Cell} of the manifest's cells (stored_cells)."""
        return stored_cells(self.manifest, f"run {self.run_id}")

    @cached_property
    def cells(self) -> pd.DataFrame:
        ids = set(self.timeline["cell_id"].dropna().unique()) | set(self.probes["cell_id"].dropna().unique())
        return cell_frame(self.manifest, self.cell_objects, ids)

    @cached_property
    def cores(self) -> float:
        host = (self.manifest.get("fingerprint") or {}).get("host") or {}
        n = host.get("cpus_usable") or host.get("cpus")
        return float(n) if n else math.nan

    @cached_property
    def steady(self) -> pd.DataFrame:
        files = None
        cp = self.campaigns
        if len(cp):
            files = dict(zip(cp["campaign_id"], pd.to_numeric(cp["files"], errors="coerce"), strict=False))
        elif len(self.transfers):
            files = self.transfers.groupby("campaign_id")["file_size"].size().to_dict()
        return _steady.steady_table(self.directional_timeline, files, self.levels)

    @cached_property
    def levels(self) -> dict[str, dict]:
        """{campaign_id: how its time-based level ended} (CAMPAIGN settings["level"])."""
        cp, out = self.campaigns, {}
        if len(cp):
            for cid, text in zip(cp["campaign_id"], cp["settings"], strict=False):
                try:
                    level = json.loads(text).get("level") if isinstance(text, str) else None
                except ValueError:
                    level = None
                if level:
                    out[cid] = level
        return out

    def _rate_source(self, cell_id: str, conc: Any, windows: pd.DataFrame,
                     direction: str = "write") -> dict[str, Any]:
        """Each repeat's bytes in its steady window (the buckets ending in (t_start, t_end])
        over the window's seconds, then the mean over repeats (figures.steady.level_steady)."""
        parts = " | ".join(f"(repeat == {_q(r.repeat)} & t > {r.t_start!r} & t <= {r.t_end!r})"
                           for r in windows.itertuples())
        q = f"cell_id == {_q(cell_id)} & concurrency == {_q(conc)} & ({parts})"
        seconds = [[r.repeat, float(r.t_end - r.t_start)] for r in windows.sort_values("repeat").itertuples()]
        exact = bool(windows["whole_buckets"].all()) if "whole_buckets" in windows else False
        how = ("bytes of each repeat's steady window / its seconds (per_seconds), then the mean "
               "over repeats; B/s" + ("" if exact else "; a window edge inside a bucket counts "
                                      "that bucket's bytes in part (spread evenly over it)"))
        camps = set(windows["campaign_id"])
        if any(self.directions.get(c) == "mixed" for c in camps):
            col = _dirs.SPLIT[direction]
            return source(self.run_id, "timeline", q, col, "sum", by="repeat", recompute=False,
                          per_seconds=seconds, note=f"mixed campaign, {direction}s only: {how}")
        if self.timeline_derived:
            return source(self.run_id, "transfers", f"cell_id == {_q(cell_id)} & concurrency == {_q(conc)}",
                          "transferred", "sum", note="timeline rebuilt from transfers by "
                          "figures.steady.timeline_from_transfers, then " + how + ": " + parts,
                          recompute=False)
        return source(self.run_id, "timeline", q, "bytes", "sum", by="repeat", per_seconds=seconds,
                      note=how, **({} if exact else {"recompute": False}))

    @cached_property
    def points(self) -> pd.DataFrame:
        """One row per (cell, concurrency): steady rate over repeats, CI, volatility, counts."""
        st = self.steady
        if st.empty:
            return pd.DataFrame(columns=POINT_COLS)
        tr = self.transfers
        counts = (tr.assign(ok=tr["file_state"].eq("FINISHED"))
                  .groupby(["cell_id", "concurrency", "direction"])["ok"].agg(["sum", "size"]))
        rows = []
        for (cid, conc, d), g in st.groupby(["cell_id", "concurrency", "direction"], sort=False):
            s = Stats.of(g["window_mean"], ci=True)
            k = (cid, conc, d)
            ok, n = counts.loc[k] if k in counts.index else (math.nan, math.nan)
            rows.append({
                "cell_id": cid, "concurrency": conc, "direction": d, "repeats": len(g), "rate": s.mean,
                "ci_low": s.ci_low, "ci_high": s.ci_high, "rate_cv_repeats": s.cv,
                "window_cv": float(g["window_cv"].mean()), "window_std": float(g["window_std"].mean()),
                "window_n": float(g["window_n"].mean()),
                # each repeat's rate error (autocorrelation and window choice counted,
                # figures.buckets.window_rel_se), their root mean square
                "window_rel_se": _rms(g["window_rel_se"]) if "window_rel_se" in g else math.nan,
                "window_median": float(g["window_median"].mean()),
                "run_rate": float(g["run_mean"].mean()), "run_cv": float(g["run_cv"].mean()),
                "method": ",".join(sorted(set(g["method"]))),
                # every repeat's window steady (figures.steady.is_steady): False for a level that
                # hit its maximum duration ("not steady") or fell back to the whole run
                "steady": bool(g["steady"].all()) if "steady" in g else
                all(_steady.is_steady(m) for m in g["method"]),
                "ended_by": ",".join(sorted(set(g["ended_by"].dropna()))) if "ended_by" in g else "",
                "steady_at": float(g["steady_at"].mean()) if "steady_at" in g else math.nan,
                "starved_frac": float(g["starved_frac"].mean()),
                "wall_start": float(g["wall_start"].min()), "wall_end": float(g["wall_end"].max()),
                "windows": [(float(a), float(b)) for a, b in zip(g["wall_start"], g["wall_end"], strict=True)],
                "finished": ok, "failed": n - ok if n == n else math.nan,
                "source": self._rate_source(cid, conc, g, d),
            })
        if not rows:  # steady rows without a level (NaN concurrency): nothing to summarise
            return pd.DataFrame(columns=POINT_COLS)
        return pd.DataFrame(rows).sort_values(["cell_id", "concurrency", "direction"],
                                              kind="stable").reset_index(drop=True)

    @cached_property
    def _point_index(self) -> dict[tuple[str, float, str], dict[str, Any]]:
        return {(r["cell_id"], float(r["concurrency"]), r["direction"]): r
                for r in self.points.to_dict("records")}

    def point(self, cell_id: str, concurrency: Any, direction: str = "write") -> dict[str, Any] | None:
        return self._point_index.get((cell_id, float(concurrency), direction))

    def view(self, direction: str) -> _dirs.DirectionView:
        """This run seen in one direction: ``point``/``levels_rate`` default to it."""
        return _dirs.DirectionView(self, direction)

    @cached_property
    def transfer_quantiles(self) -> pd.DataFrame:
        """Per (cell, concurrency, direction): quantiles of per-transfer throughput (FINISHED only)."""
        tr = self.transfers
        ok = tr[tr["file_state"].eq("FINISHED") & tr["throughput"].notna()]
        if ok.empty:
            return pd.DataFrame(columns=["cell_id", "concurrency", "direction", "n", "q05", "q25",
                                         "q50", "q75", "q95", "mean"])
        g = ok.groupby(["cell_id", "concurrency", "direction"])["throughput"]
        q = g.quantile([0.05, 0.25, 0.5, 0.75, 0.95]).unstack()
        q.columns = ["q05", "q25", "q50", "q75", "q95"]
        q["n"] = g.size()
        q["mean"] = g.mean()
        return q.reset_index()

    @cached_property
    def probe_jobs(self) -> pd.DataFrame:
        """One row per (cell, fio job, direction) (analysis.verdicts.probes.probe_jobs)."""
        return _probes.probe_jobs(self.probes)

    @cached_property
    def probe_ceilings(self) -> pd.DataFrame:
        """Per cell: fio write and read bandwidth and IOPS ceilings with their sources
        (analysis.verdicts.probes.probe_ceilings)."""
        return _probes.probe_ceilings(self.probe_jobs, self.run_id)

    @cached_property
    def network(self) -> tuple[float, dict[str, Any] | None]:
        """(bytes/s, source) of the network baseline: the best iperf3 result of the run."""
        return self._network(None)

    def network_for(self, direction: str) -> tuple[float, dict[str, Any] | None]:
        """The baseline of one direction: the best iperf3 result measured that way (read =
        ``-R``, gateway -> client; rows without a direction are writes), else the best of all."""
        return self._network(direction)

    def _network(self, direction: str | None) -> tuple[float, dict[str, Any] | None]:
        b = self.baseline
        if b.empty:
            return (math.nan, None)
        bits_per_s = pd.to_numeric(b["bits_per_second"], errors="coerce")
        q, note = "kind == 'iperf3'", "divided by 8 for B/s"
        if direction is not None:
            d = b["direction"]
            mine = (d.eq("read") if direction == "read" else d.ne("read")) & bits_per_s.notna()
            if mine.any():
                bits_per_s = bits_per_s[mine]
                q += " & direction == 'read'" if direction == "read" else " & direction != 'read'"
            else:
                note += f"; no iperf3 result in the {direction} direction, the best of all used"
        if not bits_per_s.notna().any():
            return (math.nan, None)
        return (float(bits_per_s.max()) / 8.0,
                source(self.run_id, "baseline", q, "bits_per_second", "max", note=note))

    def levels_rate(self, cell_id: str, direction: str = "write") -> list[tuple[float, float]]:
        """[(concurrency, steady rate)] of a cell in one direction."""
        return [(c, r["rate"]) for (cid, c, d), r in self._point_index.items()
                if cid == cell_id and d == direction]
