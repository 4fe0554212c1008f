"""Telemetry on the run's timeline: samplers (cluster, gateway, host) and the runner.

    with ReportListener() as listener:                       # pass listener.addr as report_addr
        gw = start_gateway(target, workdir=..., report_addr=listener.addr)
        samplers = [HostSampler(), GatewaySampler(listener, gw), CephSampler(cluster, pools)]
        with TelemetryRunner(samplers, interval=1.0, sink=run.append, cell_id=cell.id):
            run_campaign(...)

Or by device name, as `xcbench run --telemetry host:0.5,ceph:2` does (``devices.py``)::

    runner = build("host:0.5,ceph:2", cell=cell, target=target, gateway=gw, listener=listener,
                   cluster=cluster, sink=run.append)

Rows go to the SAMPLE table, failures of a sampler to the GAP table (xcbench.store.tables).
"""

from xcbench.telemetry.base import Rates, SampleGap, Sampler, TelemetryRunner
from xcbench.telemetry.ceph import CephSampler
from xcbench.telemetry.devices import DEVICES, Device, build, parse_selection, wants
from xcbench.telemetry.gateway import GatewaySampler
from xcbench.telemetry.host import HostSampler
from xcbench.telemetry.link_sampler import LinksSampler
from xcbench.telemetry.xrdreport import Report, ReportListener, parse_report

__all__ = ["DEVICES", "CephSampler", "Device", "GatewaySampler", "HostSampler", "LinksSampler", "Rates", "Report",
           "ReportListener", "SampleGap", "Sampler", "TelemetryRunner", "build", "parse_report",
           "parse_selection", "wants"]
