"""af.saved_model.Builder: a v1 SavedModel written here loads in aioflow's loader and, with
AIOFLOW_TF_PYTHON set (a Python with TensorFlow), in TF 2.21's
(tests/data/check_saved_model_in_tf.py); TF's assertions for misuse."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

import aioflow as af

DATA = os.path.join(os.path.dirname(__file__), "data")
X = [[1.0, 1.0], [2.0, -0.5]]
Y = [[4.5, -3.5], [1.0, 4.5]]  # X @ [[1, 2], [3, -4]] + [0.5, -1.5]


def _model():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 2], name="x")
        w = af.get_variable("w", initializer=af.constant([[1.0, 2.0], [3.0, -4.0]]))
        b = af.Variable([0.5, -1.5], name="b")
        y = af.add(af.matmul(x, w), b, name="y")
        counter = af.Variable(0, name="counter", trainable=False,
                              collections=[af.GraphKeys.LOCAL_VARIABLES])
        main_op = af.group(af.assign(counter, 7), name="main_op")  # initializes it too
        init = af.global_variables_initializer()
        sig = af.saved_model.signature_def_utils.predict_signature_def({"x": x}, {"y": y})
    return g, init, main_op, sig


async def _build(export_dir) -> None:
    g, init, main_op, sig = _model()
    async with af.Session(graph=g) as sess:
        await sess.run(init)
        builder = af.saved_model.Builder(export_dir)
        await builder.add_meta_graph_and_variables(
            sess, [af.saved_model.tag_constants.SERVING], {"serving_default": sig},
            main_op=main_op)
        await builder.save()


async def test_a_built_saved_model_loads_and_runs_here(tmp_path):
    export_dir = tmp_path / "model"
    await _build(export_dir)
    assert sorted(os.listdir(export_dir)) == ["saved_model.pb", "variables"]
    async with af.Session(graph=af.Graph()) as sess:
        meta = await af.saved_model.loader.load(sess, ["serve"], str(export_dir))
        sig = meta.signature_def["serving_default"]
        assert sig.method_name == "tensorflow/serving/predict"
        y = await sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: X})
        np.testing.assert_array_equal(y, np.asarray(Y, np.float32))
        assert await sess.run("counter:0") == 7  # the main op ran after the restore


async def test_tensorflow_loads_what_the_builder_wrote(tmp_path):
    tf_python = os.environ.get("AIOFLOW_TF_PYTHON")
    if not tf_python:
        pytest.skip("AIOFLOW_TF_PYTHON (a Python with TensorFlow) not set")
    export_dir = tmp_path / "model"
    await _build(export_dir)
    proc = subprocess.run(
        [tf_python, os.path.join(DATA, "check_saved_model_in_tf.py"), str(export_dir),
         json.dumps(X)], capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == {"y": Y, "local": 7}


async def test_builder_misuse_is_tfs_assertion(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("x")
    with pytest.raises(AssertionError, match="Export directory already exists, and isn't "
                                             "empty"):
        af.saved_model.Builder(tmp_path / "full")
    builder = af.saved_model.Builder(tmp_path / "new")
    with pytest.raises(AssertionError, match="has not been saved yet"):
        builder.add_meta_graph(["serve"])
