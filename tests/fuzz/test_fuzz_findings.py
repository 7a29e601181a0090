"""Known-open fuzz findings (FINDINGS.md), one xfail test each, named after the finding:
the reproducer must end in a result or a TF error class. A fix makes its test XPASS;
then delete the entry from known_findings.py and FINDINGS.md."""

from __future__ import annotations

import pytest
from conftest import check_outcome
from known_findings import FINDINGS


@pytest.mark.parametrize("finding", [
    pytest.param(f, id=f.id, marks=pytest.mark.xfail(strict=False, reason=f"known open: {f.id}"))
    for f in FINDINGS
])
def test_known_open_finding(finding, fuzz_runner):
    case = finding.repro()
    outcome = fuzz_runner.run(case)
    assert outcome.acceptable, f"{finding.id}: {outcome.report()}"
    check_outcome(outcome, case)
