"""tf.metrics against TF 2.21 (tests/data/metrics.json and metrics_graphs.npz, made by
tests/data/make_metrics_fixtures_tf.py): each metric built alone is TF's GraphDef node for
node; the same metrics updated over the same batches give TF's update values and final
values, with TF's local variables (names, collections) reset by
local_variables_initializer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from graph_compare import assert_same_graph

import aioflow.compat.v1 as tf
from aioflow.proto import graph_pb2

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_metrics_fixtures_tf as programs  # noqa: E402

WANT = json.loads((DATA / "metrics.json").read_text())
GRAPHS = np.load(DATA / "metrics_graphs.npz")


@pytest.mark.parametrize("key", programs.METRICS)
def test_metric_graph_equals_tf(key):
    g = tf.Graph()
    with g.as_default():
        programs.one_metric(tf, key)
    assert_same_graph(g.as_graph_def(), graph_pb2.GraphDef.FromString(GRAPHS[key].tobytes()))


def test_metrics_equal_tf():
    g = tf.Graph()
    with g.as_default():
        m, feeds = programs.program(tf)
        assert [v.op.name for v in tf.local_variables()] == WANT["local_variables"]
        assert not tf.trainable_variables()
        assert len(tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)) == \
            len(WANT["local_variables"])
        with tf.Session(graph=g) as sess:
            got = programs.run(tf, sess, g, m, feeds)
            again = programs.run(tf, sess, g, m, feeds)  # reset by the local initializer
    assert sorted(got) == sorted(WANT["values"])
    for key, value in got.items():
        np.testing.assert_allclose(value, WANT["values"][key], rtol=1e-5, atol=1e-6,
                                   err_msg=key)
        np.testing.assert_array_equal(again[key], value)
