"""tf.train.init_from_checkpoint against TF 2.21 (tests/data/init_from_ckpt/, made by
tests/data/make_init_from_checkpoint_tf.py): mapping TF's checkpoint onto new variables
(scope to scope, name to name, a variable object, the root into a scope; ref and
resource) builds TF's graph node for node (checkpoint_initializer RestoreV2s on CPU) and
global_variables_initializer loads TF's values; bad maps fail as TF's."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from graph_compare import assert_same_graph

import aioflow.compat.v1 as tf
from aioflow.proto import graph_pb2

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_init_from_checkpoint_tf as programs  # noqa: E402

CKPT = str(DATA / "init_from_ckpt" / "model")
ARRAYS = np.load(DATA / "init_from_ckpt" / "fixtures.npz")


def _without_paths(graph_def: graph_pb2.GraphDef) -> graph_pb2.GraphDef:
    """The checkpoint prefix Consts emptied (they hold the path of the machine)."""
    out = graph_pb2.GraphDef()
    out.CopyFrom(graph_def)
    for node in out.node:
        if node.op == "Const" and node.name.endswith("/prefix"):
            del node.attr["value"].tensor.string_val[:]
    return out


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_values_and_graph_equal_tf(name):
    g = tf.Graph()
    with g.as_default():
        out = programs.PROGRAMS[name](tf, CKPT)
        init = tf.global_variables_initializer()
        graph_def = g.as_graph_def()
        with tf.Session(graph=g) as sess:
            sess.run(init)
            got = sess.run(out)
    for key, value in got.items():
        np.testing.assert_array_equal(value, ARRAYS[f"{name}/{key}"], err_msg=key)
    want = graph_pb2.GraphDef.FromString(ARRAYS[f"{name}/graph_def"].tobytes())
    assert_same_graph(_without_paths(graph_def), _without_paths(want))


def test_bad_maps_fail_as_tf():
    with tf.Graph().as_default():
        tf.get_variable("w", [5, 3])
        with pytest.raises(ValueError, match="Shape of variable w:0"):
            tf.train.init_from_checkpoint(CKPT, {"old/dense/kernel": "w"})
        with pytest.raises(ValueError, match="Tensor missing is not found in"):
            tf.train.init_from_checkpoint(CKPT, {"missing": "w"})
        with pytest.raises(ValueError, match="should map to scope only"):
            tf.train.init_from_checkpoint(CKPT, {"old": "scope/"})
