"""Every package's part of a matrix, registered: import this before loading a matrix.

The matrix loader (xcbench.matrix) sits just above the cell so that it imports none of the
packages that consume a cell; they check their parts of a matrix through the registry in
xcbench.matrix.sections, and do so when their ``matrix_section`` module is imported. This
module imports all of them, from a floor above them all (the run's: the runner is what hands
the cells to them). Entry points import it rather than rely on what else they happen to
import: the command line (xcbench.cli), the pytest plugin (so every test session, tests/support
and benchmarks run under pytest), and the runner. A program that forgets it gets
SectionNotRegistered from load_matrix, never a matrix checked in part.
"""

from xcbench.campaign import matrix_section as campaign_section
from xcbench.gateway import matrix_section as gateway_section
from xcbench.hosts import matrix_section as hosts_section
from xcbench.probe import matrix_section as probe_section
from xcbench.scaleout import matrix_section as scaleout_section
from xcbench.telemetry import matrix_section as telemetry_section

REGISTERED = (campaign_section, scaleout_section, gateway_section, probe_section, hosts_section,
              telemetry_section)
