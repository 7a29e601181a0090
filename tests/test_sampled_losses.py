"""Candidate samplers and sampled losses against TF 2.21 (tests/data/sampled_losses.*,
made by tests/data/make_sampled_losses_fixtures_tf.py): the OpDefs equal TF's; the
samplers draw TF's classes with TF's expected counts run after run for the same seeds;
tf.nn.nce_loss and tf.nn.sampled_softmax_loss build TF's graphs node for node and train
to TF's losses and weights."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from graph_compare import assert_same_graph
from op_def_compare import assert_equal_to_tf

import aioflow.compat.v1 as tf
from aioflow.framework import errors
from aioflow.proto import graph_pb2, op_def_pb2

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_sampled_losses_fixtures_tf as programs  # noqa: E402

ARRAYS = np.load(DATA / "sampled_losses.npz")


def test_op_defs_equal_tf():
    tf_ops = op_def_pb2.OpList.FromString((DATA / "sampled_losses_op_defs.pb").read_bytes())
    assert len(tf_ops.op) == 4
    assert_equal_to_tf(tf_ops)


def _run(name):
    g = tf.Graph()
    with g.as_default():
        fetches, train = programs.PROGRAMS[name](tf)
        graph_def = g.as_graph_def()
        got = []
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(programs.RUNS):
                values = sess.run(fetches if train is None else (fetches, train))
                got.append(values if train is None else values[0])
    return graph_def, got


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_values_equal_tf(name):
    _, got = _run(name)
    for run, values in enumerate(got):
        for key, value in values.items():
            want = ARRAYS[f"{name}/{run}/{key}"]
            assert value.dtype == want.dtype, (run, key)
            if value.dtype.kind in "iu":
                np.testing.assert_array_equal(value, want, err_msg=f"{run}/{key}")
            else:
                np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6,
                                           err_msg=f"{run}/{key}")


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_graph_equals_tf(name):
    graph_def, _ = _run(name)
    want = graph_pb2.GraphDef.FromString(ARRAYS[f"{name}/graph_def"].tobytes())
    assert_same_graph(graph_def, want)


def test_sampler_errors_as_tf():
    g = tf.Graph()
    with g.as_default():
        t = tf.constant([[1], [25]], tf.int64)
        s = tf.random.uniform_candidate_sampler(t, 1, 3, True, 20, seed=1)
        small = tf.random.uniform_candidate_sampler(t[:1], 1, 30, True, 20, seed=1)
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError,
                               match=r"`true_candidate` out of range \[0, 20\), received 25"):
                sess.run(s)
            with pytest.raises(errors.InvalidArgumentError,
                               match="Sampler's range is too small"):
                sess.run(small)
