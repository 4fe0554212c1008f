"""Column names of the tables a run writes (one place, so producers and analysis agree).

Every record also carries ``cell_id``. Times: ``*_time``/``wall`` are Unix epoch seconds (float);
``mono`` is time.monotonic(). Rates are bytes/s unless the name says otherwise.
"""

# One row per transfer attempt, FTS-shaped (FTS's t_file / transfer-completed message names).
TRANSFER = (
    "cell_id", "campaign_id", "concurrency", "repeat", "transfer_id", "file_index", "retry",
    "source", "destination", "mode", "client", "nstreams",
    "file_size", "transferred", "start_time", "finish_time", "tx_duration", "throughput",
    "checksum_type", "checksum_source", "checksum_dest", "file_state",  # FINISHED|FAILED|CANCELED
    "error_code", "error_scope", "error_phase", "reason",
    "direction",  # write (client -> gateway) | read (gateway -> client)
)
# Aggregate timelines of a campaign, 1 s buckets.
# driver_cpu_*: the campaign driver's own CPU (cores over the bucket/campaign) and its limit.
DRIVER_CPU = ("driver_cpu_cores", "driver_cpu_limit_cores", "driver_cpu_limit_source")
# bytes_read/bytes_written: the bucket's bytes per direction (their sum is bytes)
TIMELINE = ("cell_id", "campaign_id", "concurrency", "repeat", "t", "wall", "bytes", "rate",
            "active", "done", "failed") + DRIVER_CPU + ("bytes_read", "bytes_written")
# One row per campaign (a concurrency level of a cell, one repeat).
CAMPAIGN = ("cell_id", "campaign_id", "concurrency", "repeat", "mode", "client", "files",
            "bytes", "start_time", "finish_time", "rate", "finished", "failed", "settings") + DRIVER_CPU \
    + ("direction",) \
    + ("gateway_cpu_s", "gateway_cpu_s_per_gb", "gateway_cpu_origins", "security", "source_cpu_s_per_gb") \
    + ("device_write_iops", "device_write_bytes_per_s")  # the storage device's writes over the level, where counted
# direction: write | read | mixed (reads: settings["access"], settings["directions"]);
# gateway_cpu_*: the gateway's CPU over the level (xcbench.telemetry.gateway_cpu_meter), security: its mode;
# source_cpu_s_per_gb: for TPC levels, the source gateway's (it serves the pull: the TPC push side)
# FTS optimizer emulation decisions.
OPTIMIZER = ("cell_id", "campaign_id", "wall", "previous", "decision", "reason",
             "success_rate", "throughput", "ema")
# fio probe results, one per job (and host, for client/server runs).
# host: "local", or "ip:port" per fio server plus "all" (the aggregate) for client/server runs.
# engine: rados | libaio | psync; direct: O_DIRECT used (False on tmpfs: page-cache figures).
PROBE = ("cell_id", "job", "host", "rw", "bs", "iodepth", "numjobs", "iops", "bw",
         "lat_mean_us", "lat_p50_us", "lat_p99_us", "lat_p999_us", "runtime_s", "errors",
         "ss_reached", "engine", "direct",
         "device_write_iops", "device_write_bytes_per_s",  # the storage device's writes during the job, where counted
         # level probes (xcbench.probe.levels): the level, mount | pool, the steady mean of fio's
         # interval samples with their cv, count and relative standard error, the host's and the
         # OSDs' CPU during the job, and its settle step
         "concurrency", "target", "bw_steady", "bw_cv", "bw_n", "bw_rel_se", "host_busy",
         "host_cores", "osd_cores", "wall_s", "settle_s", "settled", "settle_rate",
         # a pool level probe's new objects a job, and whether its jobs wrote them all (ran out)
         "objects_per_job", "objects_ran_out")
# Telemetry, long format: one value per row.
SAMPLE = ("cell_id", "wall", "mono", "sampler", "metric", "value", "labels")
# Sampler gaps (a sampler failed; the others went on).
GAP = ("cell_id", "wall", "sampler", "error")
# Known-bad configurations found for a cell.
FINDING = ("cell_id", "what", "why", "fix", "severity")
# Network/host baseline (iperf3), one row per point (xcbench.network.baseline): host = the gateway address;
# direction write = client -> gateway, read = gateway -> client (-R); cpu_* in % (iperf3's JSON).
BASELINE = ("kind", "wall", "streams", "seconds", "bits_per_second", "retransmits", "host",
            "client", "gateway", "direction", "cpu_host", "cpu_remote", "error")
# Attributed bottleneck of a cell.
# one row per campaign level and direction (write | read; verdicts stored before reads: write)
VERDICT = ("cell_id", "concurrency", "verdict", "reason", "evidence", "direction")

TABLES = {
    "transfers": TRANSFER, "timeline": TIMELINE, "campaigns": CAMPAIGN,
    "optimizer": OPTIMIZER, "probes": PROBE, "samples": SAMPLE, "gaps": GAP,
    "findings": FINDING, "baseline": BASELINE, "verdicts": VERDICT,
}
