"""Capacity planning and gateway sizing: ``xcbench plan``.

The question: how many XRootD gateways and how many Ceph hosts/OSDs does a target rate need
(SKA AA4, HL-LHC Tier-1, US-CMS Tier-2, or a custom rate, read/write mix and file size)?

The model, in one page (details and formulas in the module docstrings):

- **RateTarget** (presets.py): an external rate through the gateways, a write fraction W, a mean
  file size, optionally a volume per year. Rates in Gb/s = 1e9 bit/s (units.py).
- **Gateway** (gateway.py): store-and-forward, so every external byte crosses a gateway NIC in
  and out; a checksum computed after the write reads the file back from Ceph (one more byte in);
  the NIC budget counts every byte per direction (external in/out, to/from Ceph, read-back).
  Per-gateway rate = min(NIC ceilings x NIC saturation, CPU x utilisation, origins);
  gateways = ceil(target x headroom / per-gateway rate) + spares.
- **Storage** (storage.py): the gateways write W and read R (reads + read-backs) per external
  byte into Ceph; replication or EC sets raw bytes, drive ops and the primary OSD's fan-out to
  other hosts; ceilings for host NICs (public/cluster network), drive bandwidth and drive IOPS
  (for HDDs their drive time adds up); the smallest binds; hosts needed scale linearly.
- **Calibration** (calibrate.py): a run's steady per-gateway rate vs concurrency, per-OSD IOPS and
  bandwidth from fio probes, and the pool's measured raw/stored ratio replace datasheet numbers;
  with the measured cluster's spec, the efficiency achieved / theoretical is carried over to the
  planned spec instead. Both columns are shown side by side (planner.py).
- **Output** (report.py): text, JSON, HTML/Markdown (analysis/templates/plan.*.j2); every figure
  with its formula and inputs, a plot of gateways and OSDs needed vs target rate, and every
  assumption (spec.Assumptions) with the flag that changes it.

Specs are YAML (examples/*.yaml; spec.py documents the fields); a bad spec is one XcbError line
naming the file (or --set) and the field.
"""
