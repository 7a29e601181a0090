"""Fuzz findings (FINDINGS.md), one test each, named after the finding: the reproducer
must end in a result or a TF error class. Fixed findings are regression tests; open ones
are xfail (a fix makes the test XPASS: then mark the finding fixed)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
from conftest import check_outcome
from known_findings import FINDINGS

RUNNER = pathlib.Path(__file__).resolve().parent / "fuzz_runner.py"


@pytest.mark.parametrize("finding", [
    pytest.param(f, id=f.id, marks=() if f.fixed else pytest.mark.xfail(
        strict=False, reason=f"known open: {f.id}"))
    for f in FINDINGS
])
def test_finding(finding, fuzz_runner, tmp_path):
    case = finding.repro()
    if finding.isolate is not None:  # it holds the loop: not in this process
        timeout, guard = finding.isolate
        case.save(tmp_path / "case")
        proc = subprocess.run([sys.executable, str(RUNNER), "--timeout", str(timeout),
                               "--guard", str(guard), str(tmp_path / "case")],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{finding.id}: {proc.stdout[-3000:]}{proc.stderr[-2000:]}"
        return
    outcome = fuzz_runner.run(case)
    assert outcome.acceptable, f"{finding.id}: {outcome.report()}"
    check_outcome(outcome, case)
