"""Traps a new user meets in the first minutes, each turned into a clear message."""

import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_a_script_beside_a_checkout_named_aioflow_is_told_what_happened(tmp_path):
    """Run from the folder holding a checkout named `aioflow`, `import aioflow` would find
    the checkout folder as an empty namespace package; its __init__.py says so instead."""
    checkout = tmp_path / "aioflow"
    checkout.mkdir()
    shutil.copy(ROOT / "__init__.py", checkout / "__init__.py")
    (tmp_path / "script.py").write_text("import aioflow as af\nprint(af.Graph)\n")
    proc = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1
    assert f"found the checkout folder {checkout} itself" in proc.stderr
    assert "Run the script from another folder" in proc.stderr


def test_the_checkout_root_is_inert_under_another_name():
    spec = {"__name__": "checkout_root", "__file__": str(ROOT / "__init__.py")}
    exec(compile((ROOT / "__init__.py").read_text(), "__init__.py", "exec"), spec)
