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


def _asset_model(vocab_paths):
    """A graph whose main op reads each asset file (ReadFile of a constant path, which the
    loader feeds with the asset's path in the SavedModel, as TF's) into a local variable
    that the signature returns."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None], name="x")
        paths = [af.constant(os.fspath(p), name=f"asset_path_{i}")
                 for i, p in enumerate(vocab_paths)]
        for p in paths:
            af.add_to_collection("asset_filepaths", p)
        held = af.Variable(b"", name="held_texts", trainable=False,
                           collections=[af.GraphKeys.LOCAL_VARIABLES])
        read = af.strings.join([af.read_file(p) for p in paths], separator="|")
        main_op = af.group(af.assign(held, read), name="main_op")
        texts = af.identity(held, name="texts")
        y = af.identity(x * 2.0, name="y")
        sig = af.saved_model.signature_def_utils.predict_signature_def(
            {"x": x}, {"y": y, "texts": texts})
    return g, paths, sig, main_op


async def test_assets_are_copied_and_fed_with_their_new_path(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, same_name, duplicate = (tmp_path / "a" / "vocab.txt", tmp_path / "b" / "vocab.txt",
                                   tmp_path / "a" / "vocab.txt")
    first.write_text("alpha\nbeta\n")
    same_name.write_text("gamma\n")  # same base name, other contents: vocab.txt_1
    g, paths, sig, main_op = _asset_model([first, same_name, duplicate])
    export_dir = tmp_path / "model"
    async with af.Session(graph=g) as sess:
        builder = af.saved_model.Builder(export_dir)
        await builder.add_meta_graph_and_variables(
            sess, ["serve"], {"serving_default": sig}, assets_collection=paths,
            main_op=main_op)
        await builder.save()
    assert sorted(os.listdir(export_dir / "assets")) == ["vocab.txt", "vocab.txt_1"]
    assert (export_dir / "assets" / "vocab.txt_1").read_text() == "gamma\n"
    first.write_text("changed after export\n")  # the SavedModel reads its own copy
    async with af.Session(graph=af.Graph()) as sess:
        meta = await af.saved_model.loader.load(sess, ["serve"], str(export_dir))
        assets = af.saved_model.loader.get_asset_tensors(str(export_dir), meta)
        assert sorted(os.path.basename(p) for p in assets.values()) == [
            b"vocab.txt", b"vocab.txt", b"vocab.txt_1"]
        sig = meta.signature_def["serving_default"]
        texts = await sess.run(sig.outputs["texts"].name, {sig.inputs["x"].name: [1.0]})
    assert texts == b"alpha\nbeta\n|gamma\n|alpha\nbeta\n"


async def test_tensorflow_loads_the_builders_assets(tmp_path):
    tf_python = os.environ.get("AIOFLOW_TF_PYTHON")
    if not tf_python:
        pytest.skip("AIOFLOW_TF_PYTHON (a Python with TensorFlow) not set")
    (tmp_path / "vocab.txt").write_text("alpha\n")
    g, paths, sig, main_op = _asset_model([tmp_path / "vocab.txt"])
    export_dir = tmp_path / "model"
    async with af.Session(graph=g) as sess:
        builder = af.saved_model.Builder(export_dir)
        await builder.add_meta_graph_and_variables(
            sess, ["serve"], {"serving_default": sig}, assets_collection=paths,
            main_op=main_op)
        await builder.save()
    (tmp_path / "vocab.txt").write_text("changed after export\n")
    proc = subprocess.run(
        [tf_python, os.path.join(DATA, "check_saved_model_in_tf.py"), str(export_dir),
         json.dumps([1.0]), "--assets"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["texts"] == "alpha\n"
    assert [os.path.basename(p) for p in report["assets"]] == ["vocab.txt"]


async def test_asset_tensors_are_checked_as_tf_checks_them(tmp_path):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.string, [], name="x")
        number = af.constant(3.0)
        both = af.constant(["a", "b"])
    async with af.Session(graph=g) as sess:
        builder = af.saved_model.Builder(tmp_path / "model")
        for bad, message in ((x, "must be of type constant.Has type Placeholder"),
                             (number, "must be of dtype string.Has type"),
                             (both, "must be a scalar"), ("path", "must be a Tensor")):
            with pytest.raises(TypeError, match=message):
                await builder.add_meta_graph_and_variables(sess, ["serve"],
                                                           assets_collection=[bad])
