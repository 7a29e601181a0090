"""Graph-mode assertions (aioflow/ops/check_ops.py) fail as TF 2.21's do: at build time
when the static shapes, types or constants decide (TypeError, ValueError,
InvalidArgumentError with TF's words), else at run time (InvalidArgumentError naming the
Assert node). The messages below are the ones TF 2.21 gives for the same programs; the
graphs these builders make are compared node for node through the metrics
(tests/test_metrics.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import aioflow.compat.v1 as tf


@pytest.fixture
def x():
    with tf.Graph().as_default():
        yield tf.placeholder(tf.float32, [2, 3], name="x")


def test_static_failures_are_tfs(x):
    with pytest.raises(TypeError, match=re.escape("x:0 must be of type tf.int32; got "
                                                  "tf.float32")):
        tf.assert_type(x, tf.int32)
    with pytest.raises(ValueError, match=re.escape("Tensor x:0 must have rank in (1, 3).  "
                                                   "Received rank 2, shape (2, 3)")):
        tf.assert_rank_in(x, (1, 3))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=re.escape("Condition x < y did not hold element-wise:\nx "
                                       "(Const:0) = \n[3]\ny (Const_1:0) = \n[2]")):
        tf.assert_less(tf.constant([3]), tf.constant([2]))


def test_static_successes_are_no_ops(x):
    assert tf.assert_type(x, tf.float32).type == "NoOp"
    assert tf.assert_rank_in(x, (1, 2)).name == "assert_rank_in/static_checks_determined_all_ok"


def test_dynamic_failure_names_the_assert(x):
    check = tf.assert_less(x, 2.0)
    ok = tf.assert_non_negative(x)
    with tf.Session() as sess:
        sess.run(ok, {x: np.ones((2, 3), np.float32)})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=re.escape("assertion failed: [Condition x < y did not hold "
                                           "element-wise:] [x (x:0) = ] [[1 2 3]...]")) as e:
            sess.run(check, {x: [[1, 2, 3], [4, 5, 6]]})
    assert "assert_less/Assert/AssertGuard/Assert" in str(e.value)
