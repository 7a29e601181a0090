"""Check that aioflow imports TensorFlow's own GraphDef object (not bytes, not aioflow's
class) and runs it to TF's values; and that TF 2.21 ignores an attr its OpDef lacks, as
aioflow does (with a warning). Run where TF and this aioflow import:

    PYTHONPATH=. /work/peers-venv/bin/python tests/data/check_tf_graph_def_import.py
"""

import pathlib
import sys
import warnings

import numpy as np
import tensorflow as tf

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _import_this_checkout():
    """aioflow (its kernels included) from this checkout, whatever aioflow the TensorFlow
    environment has installed."""
    sys.path.insert(0, str(ROOT))
    import aioflow

    assert pathlib.Path(aioflow.__file__).parent == ROOT / "aioflow", aioflow.__file__
    return aioflow


af = _import_this_checkout()

tf1 = tf.compat.v1
tf1.disable_eager_execution()


def main():
    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        w = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        tf.nn.relu(tf.matmul(x, w) - 4.0, name="y")
    graph_def = g.as_graph_def()  # TF's GraphDef class
    assert type(graph_def).__module__.startswith("tensorflow"), type(graph_def)
    y = graph_def.node[-1]
    y.attr["attr_from_a_newer_tf"].i = 1  # TF 2.21 logs it and runs
    feed = np.array([[1, 2, 3], [-1, 0, 1]], np.float32)
    tf_graph = tf1.Graph()
    with tf_graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    with tf1.Session(graph=tf_graph) as sess:
        expected = sess.run("y:0", {"x:0": feed})

    ag = af.Graph()
    with ag.as_default(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        af.import_graph_def(graph_def, name="")
    assert any("attr_from_a_newer_tf" in str(w.message) for w in caught), caught
    with af.SyncSession(graph=ag) as sess:
        got = sess.run("y:0", {"x:0": feed})
    np.testing.assert_allclose(got, expected)
    print("ok: aioflow imported TF's GraphDef object and ran it to TF's values:",
          got.tolist())


if __name__ == "__main__":
    main()
