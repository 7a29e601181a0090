"""Training errors as TF 2.21 raises them (tests/data/training_errors.json, made by
tests/data/make_training_errors_tf.py): an optimizer's uninitialized slot or accumulator
is FailedPreconditionError, a label/logit batch mismatch or an out-of-range label is
InvalidArgumentError; TF's words, naming TF's node."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import aioflow.compat.v1 as tf
from aioflow.framework import errors

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_training_errors_tf as programs  # noqa: E402

WANT = json.loads((DATA / "training_errors.json").read_text())


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_error_as_tf(name):
    want = WANT[name]
    g = tf.Graph()
    with g.as_default():
        target, feeds, first = programs.PROGRAMS[name](tf)
        with tf.Session(graph=g) as sess:
            sess.run(first)
            with pytest.raises(errors.OpError) as info:
                sess.run(target, {g.get_tensor_by_name(k): v for k, v in feeds.items()})
    assert type(info.value).__name__ == want["error"]
    assert info.value.message.split("\n\t [[")[0] == want["message"]
    assert want["node"] in str(info.value)
