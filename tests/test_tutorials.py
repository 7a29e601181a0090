"""TF 1.x tutorial-style training programs (tests/data/tutorials/*.py, written for
TensorFlow) run with their import line changed to `import aioflow.compat.v1 as tf` and
nothing else, and compute what TF 2.21 computed (tests/data/tutorials.json, made by
tests/data/make_tutorial_fixtures_tf.py): losses step by step, weights, slots, schedules,
checkpoints kept, hooks' results (rtol 1e-4)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import aioflow.compat.v1 as tf

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_tutorial_fixtures_tf as fixtures  # noqa: E402

WANT = json.loads((DATA / "tutorials.json").read_text())
TF_IMPORT = "import tensorflow.compat.v1 as tf"
AF_IMPORT = "import aioflow.compat.v1 as tf"


def test_at_least_twenty_programs():
    assert len(WANT) >= 20
    assert sorted(WANT) == sorted(p.name for p in fixtures.TUTORIALS.glob("t*.py"))


def _close(got, want, where: str) -> None:
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), where
        for key in want:
            _close(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list) and want and isinstance(want[0], str):
        assert got == want, where
    elif isinstance(want, (bool, str)) or want is None:
        assert got == want, where
    else:
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                                   np.asarray(want, dtype=np.float64), rtol=1e-4,
                                   atol=1e-6, err_msg=where)


@pytest.mark.parametrize("name", sorted(WANT))
def test_tutorial_runs_to_tf_values(name, tmp_path, monkeypatch):
    source = (fixtures.TUTORIALS / name).read_text()
    assert source.count(TF_IMPORT) == 1
    ported = tmp_path / name
    ported.write_text(source.replace(TF_IMPORT, AF_IMPORT))
    monkeypatch.chdir(tmp_path)
    got = fixtures.run(ported, tf.Graph)
    _close(got, WANT[name], name)
