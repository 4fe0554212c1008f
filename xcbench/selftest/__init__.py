"""`xcbench selftest`: known-answer scenarios that prove the attribution rules on real mechanisms.

``registry``: the Scenario and CellDef types and the registry of both; ``scenarios``: the
built-in scenarios and their cells, the levels (time-based, sized from the host's cores) and
the matrix of a run; ``storage_io``: storage-bandwidth, storage-iops and ec-overhead from a
blkio write throttle on the OSDs' device; ``network``: a shaped link between emulated hosts;
``run_scenarios``: the self-test's order of runs; ``capping``: a role under a CPU quota or
the OSDs' device under a write throttle while a cell runs; ``experiments``: the capped,
half-host and EC-twin runs; ``judging``: each level's verdict against its answer; ``cause``: each capped level against
the same level uncapped (slower beyond the noise, the role at its limit); ``output``:
expected vs attributed, with the evidence (text or JSON); ``confirm``: ``xcbench confirm``;
``confirm_cases``: for every experiment kind, the right name confirmed and wrong ones not
(``confirming`` runs a case, ``confirm_setups`` keeps its cause made through the replays).

Adding a scenario (e.g. the network one of the multi-host issue) in a module of its own:

1. write ``xcbench/selftest/<name>.py``; at import it calls
   ``registry.register_cell(CellDef(...))`` for any cell it needs that is not registered yet
   (``registry.CELLS``), then ``registry.register(Scenario(name, what, expected, cells, ...))``,
   with ``replace=True`` to take the place of a "not yet" placeholder of the same name;
2. add the module's name to ``SCENARIO_MODULES`` below;
3. a scenario judged on the uncapped run needs nothing else; one that caps a role's CPU sets
   ``cap`` to that role ("gateway+client": both in one group), ``decoy=True`` for a quota
   that must not bind, ``io="bandwidth"|"iops"`` for a device write throttle on the OSDs; a new
   mechanism is made by capping's CapHooks._apply, which then needs a branch for it
   (a scenario with runs of its own, like network, needs none: ``own_run``). A scenario that
   cannot run here sets ``needs`` (or the runner finds why): it is "not run" and fails the
   self-test unless ``--allow-missing`` names it;
4. unit-test its expectation on constructed evidence (tests/unit/selftest/) and it is part of
   ``xcbench selftest`` and of the integration test that checks every scenario.
"""

from importlib import import_module

from xcbench.selftest.registry import CELLS, SCENARIOS, CellDef, Scenario, register, register_cell

# every module that registers scenarios, in the order they run and print
SCENARIO_MODULES = ("xcbench.selftest.scenarios", "xcbench.selftest.storage_io",
                    "xcbench.selftest.network", "xcbench.selftest.storagenet",
                    "xcbench.selftest.confirm_cases")
for _name in SCENARIO_MODULES:
    import_module(_name)

from xcbench.selftest.scenarios import Check  # noqa: E402  (after the registrations above)

__all__ = ["CELLS", "SCENARIOS", "CellDef", "Check", "Scenario", "register", "register_cell"]
