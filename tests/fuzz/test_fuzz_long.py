"""Long fuzz profile (`AIOFLOW_FUZZ=long`, skipped otherwise): subprocess workers fuzz for
AIOFLOW_FUZZ_SECONDS (600 by default) and the report's counts per outcome class are
printed and written to AIOFLOW_FUZZ_OUT/report.json; any failure that is not a
known-open finding fails the test."""

from __future__ import annotations

import json
import os
import time

import pytest
from fuzz_long import drive
from known_findings import known

pytestmark = pytest.mark.skipif(os.environ.get("AIOFLOW_FUZZ") != "long",
                                reason="long fuzz profile: set AIOFLOW_FUZZ=long")


def test_long_fuzz_profile(tmp_path):
    out = os.environ.get("AIOFLOW_FUZZ_OUT") or str(tmp_path / "fuzz-out")
    report = drive(seconds=float(os.environ.get("AIOFLOW_FUZZ_SECONDS", 600)), out=out,
                   workers=int(os.environ.get("AIOFLOW_FUZZ_WORKERS", 1)),
                   mem_mb=int(os.environ.get("AIOFLOW_FUZZ_MEM_MB", 2048)),
                   seed=int(os.environ.get("AIOFLOW_FUZZ_SEED", int(time.time()) % 100_000)))
    print(json.dumps({k: report[k] for k in ("seed", "total", "counts", "wrapped")}, indent=1))
    print(f"report: {out}/report.json")
    new = {fp: entry for fp, entry in report["failures"].items() if known(fp) is None}
    assert not new, json.dumps(new, indent=1)
