"""The unit tier's cost check (tests/support/tiers.py): what a phase is charged and when the
run fails."""

import time
from types import SimpleNamespace

from tests.support import tiers


def _busy(seconds: float) -> None:
    """Spends about `seconds` of this thread's CPU time."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def _phase(item, when, work, harness=0.0):
    phase = tiers._timed_phase(item, when)
    next(phase)
    _busy(work)
    tiers.charge_to_harness(harness)
    for _ in phase:  # the wrapper ends after its one yield
        pass
    return dict(item.user_properties)[f"{tiers.CPU_PROPERTY}:{when}"]


def test_a_phase_is_charged_its_cpu_time_less_the_harness_share():
    item = SimpleNamespace(user_properties=[])
    charged = _phase(item, "call", 0.3)
    assert 0.3 <= charged < 0.5
    item = SimpleNamespace(user_properties=[])
    assert _phase(item, "setup", 0.3, harness=0.25) < 0.2


def test_only_unit_phases_over_the_cpu_budget_fail_the_run():
    over = tiers.UNIT_CPU_SECONDS + 1

    def report(nodeid, when, cpu, keywords=("unit",), wall=30.0):
        props = [(f"{tiers.CPU_PROPERTY}:{when}", cpu)]
        return SimpleNamespace(
            nodeid=nodeid,
            when=when,
            keywords=dict.fromkeys(keywords),
            user_properties=props,
            duration=wall,
        )

    check = tiers.UnitDurations()
    check.pytest_runtest_logreport(report("t::slow_wall_cheap_cpu", "call", 1.0))
    check.pytest_runtest_logreport(report("t::integration", "call", over, ("integration",)))
    check.pytest_runtest_logreport(report("t::teardown", "teardown", over))
    assert check.verdict() == []
    check.pytest_runtest_logreport(report("t::costly", "setup", over, wall=4.0))
    (line,) = check.verdict()
    assert line.startswith("t::costly (setup: 9.0 CPU s > 8; 4.0 s wall)")
