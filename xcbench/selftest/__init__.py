"""`xcbench selftest`: known-answer scenarios that prove the attribution rules on real mechanisms.

``scenarios``: what each scenario makes and expects; ``runner``: the uncapped and capped runs and
the checks; ``output``: expected vs attributed, with the evidence (text or JSON).
"""

from xcbench.selftest.scenarios import SCENARIOS, Check, Scenario

__all__ = ["SCENARIOS", "Check", "Scenario"]
