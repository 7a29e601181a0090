"""docs/porting.md's programs run: each TF 1.x block with only its import line changed to
`import aioflow.compat.v1 as tf`, and the aioflow block beside it, print what TensorFlow
2.21 printed for the TF block (tests/data/porting_tf_outputs.json, recorded by
tests/data/capture_porting_tf_outputs.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
DOC = ROOT / "docs" / "porting.md"
TF_IMPORT = "import tensorflow.compat.v1 as tf"
AF_IMPORT = "import aioflow.compat.v1 as tf"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def _pairs() -> list[tuple[str, str]]:
    """(TF 1.x block, aioflow block) in the page's order."""
    blocks = _blocks()
    pairs = []
    for i, block in enumerate(blocks):
        if TF_IMPORT in block:
            following = blocks[i + 1]
            assert "import aioflow as af" in following, "a TF block is followed by aioflow's"
            pairs.append((block, following))
    return pairs


TF_OUTPUTS = json.loads((DATA / "porting_tf_outputs.json").read_text())["outputs"]
PAIRS = _pairs()


def _run(code: str, tmp_path: Path) -> str:
    shutil.copy(DATA / "frozen_mlp.pb", tmp_path)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr  # no warnings either
    return proc.stdout


def _assert_same_output(got: str, expected: str) -> None:
    """The same text, and the same numbers to the digits the programs print."""
    assert NUMBER.sub("#", got) == NUMBER.sub("#", expected), (got, expected)
    np.testing.assert_allclose([float(n) for n in NUMBER.findall(got)],
                               [float(n) for n in NUMBER.findall(expected)], atol=2e-4)


def test_every_tf_block_was_recorded():
    assert len(PAIRS) == len(TF_OUTPUTS) == 5


@pytest.mark.parametrize("index", range(len(PAIRS)))
def test_tf_block_runs_unchanged_with_compat_v1(index, tmp_path):
    tf_block, _ = PAIRS[index]
    code = tf_block.replace(TF_IMPORT, AF_IMPORT)
    assert code.count("\n") == tf_block.count("\n")  # only the import line changed
    _assert_same_output(_run(code, tmp_path), TF_OUTPUTS[index])


@pytest.mark.parametrize("index", range(len(PAIRS)))
def test_aioflow_block_prints_what_tf_printed(index, tmp_path):
    _, af_block = PAIRS[index]
    _assert_same_output(_run(af_block, tmp_path), TF_OUTPUTS[index])


def test_readme_first_program_runs(tmp_path):
    readme = (ROOT / "README.md").read_text()
    first = re.findall(r"```python\n(.*?)```", readme, re.S)[0]
    out = _run(first, tmp_path)
    np.testing.assert_allclose([float(n) for n in NUMBER.findall(out)], [5.0, 5.0])


def test_readme_states_prerequisites_and_scope():
    readme = (ROOT / "README.md").read_text()
    assert "Python 3.11 or newer" in readme and "virtual environment" in readme
    assert "## What runs" in readme and "docs/scope.md" in readme
    assert (ROOT / "docs" / "scope.md").read_text().startswith("# What aioflow does not do")
