"""What tests share: session fixtures' helpers (the demo-shaped run, gateways, faults, an FTS3
double, a synthetic run, a Prometheus double, browsers). Test modules import from here, never
from each other."""
