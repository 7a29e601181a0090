"""The layers of docs/architecture.md hold: import-linter's contracts (pyproject.toml,
[tool.importlinter]) are all kept. A broken one names the import that breaks it."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_import_linter_contracts_are_kept():
    pytest.importorskip("importlinter", reason="the test extra installs import-linter")
    cli = ("import sys; from importlinter.cli import lint_imports; "
           "sys.exit(lint_imports(no_cache=True))")
    proc = subprocess.run([sys.executable, "-c", cli], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report[report.find("Broken contracts"):] or report
    assert "0 broken" in report
