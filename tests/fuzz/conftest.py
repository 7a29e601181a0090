"""Fixtures of the fuzz tests: one CaseRunner per module under an address-space cap, the
short profile's hypothesis settings, and a summary of its outcomes at the end of the run."""

from __future__ import annotations

import collections
import os

import pytest
from fuzz_runner import CaseRunner, Limits, Outcome, address_space_limit
from hypothesis import HealthCheck, settings
from known_findings import known

LONG = os.environ.get("AIOFLOW_FUZZ") == "long"
# Headroom over the process's current address space while fuzz cases run in-process: a
# memory bomb aioflow does not refuse ends in MemoryError instead of exhausting the machine.
HEADROOM_BYTES = int(os.environ.get("AIOFLOW_FUZZ_MEM_MB", 3072)) << 20


def short_profile(max_examples: int) -> settings:
    """Deterministic (derandomized, no example database) and without hypothesis's
    per-example deadline: the runner's own timeouts apply."""
    return settings(max_examples=max_examples, derandomize=True, database=None, deadline=None,
                    print_blob=True, suppress_health_check=[
                        HealthCheck.too_slow, HealthCheck.data_too_large,
                        HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])


_counts: collections.Counter = collections.Counter()
_tolerated: collections.Counter = collections.Counter()


@pytest.fixture(scope="module")
def fuzz_runner():
    runner = CaseRunner(Limits(run_timeout_ms=2000, case_timeout_s=10.0, guard_s=5.0))
    with address_space_limit(HEADROOM_BYTES):
        yield runner
    runner.close()


def check_outcome(outcome: Outcome, case) -> None:
    """Assert a case ended in a result or a TF error class; a failure is tolerated only
    when its fingerprint is a known-open finding (known_findings.py, FINDINGS.md)."""
    _counts[outcome.cls] += 1
    if outcome.acceptable:
        return
    finding = known(outcome)
    if finding is not None:
        _tolerated[finding.id] += 1
        return
    pytest.fail(f"{case.kind}: {outcome.report()}", pytrace=False)


def pytest_terminal_summary(terminalreporter):
    if _counts:
        terminalreporter.write_line(
            f"fuzz short profile: {sum(_counts.values())} cases, outcomes {dict(_counts)}; "
            f"known-open findings hit: {dict(_tolerated) or 'none'}")
