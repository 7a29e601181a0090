"""The set-op kernels (DenseToDenseSetOperation, DenseToSparseSetOperation,
SparseToSparseSetOperation, SetSize) and DiagPart against TF 2.21's answers
(tests/data/set_diag.json, made by tests/data/make_set_diag_tf.py): the same values, or
the same error class and message."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import aioflow.compat.v1 as tf
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import sets

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_set_diag_tf as programs  # noqa: E402

WANT = json.loads((DATA / "set_diag.json").read_text())


def _build(op, args):
    c = tf.constant
    if op == "DiagPart":
        return [apply_op(op, input=c(args["input"]))]
    if op == "SetSize":
        return [apply_op(op, set_indices=c(args["indices"], tf.int64),
                         set_values=c(args["values"], tf.int64),
                         set_shape=c(args["shape"], tf.int64))]
    if op == "SparseToSparseSetOperation":
        other = args["other"]
        return apply_op(op, set1_indices=c(args["indices"], tf.int64),
                        set1_values=c(args["values"], tf.int64),
                        set1_shape=c(args["shape"], tf.int64),
                        set2_indices=c(other["indices"], tf.int64),
                        set2_values=c(other["values"], tf.int64),
                        set2_shape=c([2, 2, 3], tf.int64),
                        set_operation=args["set_operation"])
    set1 = c(args["set1"], tf.int64)
    if op == "DenseToDenseSetOperation":
        return apply_op(op, set1=set1, set2=c(args["set2"], tf.int64),
                        set_operation=args["set_operation"])
    return apply_op(op, set1=set1, set2_indices=c(args["indices"], tf.int64),
                    set2_values=c(args["values"], tf.int64),
                    set2_shape=c(args["shape"], tf.int64),
                    set_operation=args["set_operation"])


@pytest.mark.parametrize("name", sorted(programs.CASES))
def test_kernel_answers_as_tf(name):
    op, args = programs.CASES[name]
    want = WANT[name]
    with tf.Graph().as_default(), tf.Session() as sess:
        outputs = _build(op, args)
        if "error" in want:
            with pytest.raises(getattr(tf.errors, want["error"]),
                               match=re.escape(want["message"])):
                sess.run(outputs)
            return
        got = sess.run(list(outputs))
    assert len(got) == len(want["values"])
    for value, expected in zip(got, want["values"], strict=True):
        np.testing.assert_array_equal(value, np.asarray(expected, dtype=value.dtype))
        assert value.shape == np.asarray(expected).shape


def test_sets_api_flips_a_sparse_first_argument():
    with tf.Graph().as_default(), tf.Session() as sess:
        sparse = tf.SparseTensor([[0, 0], [1, 0]], tf.constant([3, 1], tf.int64), [2, 2])
        dense = tf.constant([[3, 4], [5, 6]], tf.int64)
        diff = sets.set_difference(sparse, dense)  # sparse - dense: b-a after the flip
        assert diff.op.get_attr("set_operation") in (b"b-a", "b-a")
        value = sess.run(diff)
    np.testing.assert_array_equal(value.values, [1])
    np.testing.assert_array_equal(value.indices, [[1, 0]])
