"""af.saved_model.loader against v1 SavedModels TensorFlow 2.21 wrote
(tests/data/make_saved_model_fixtures.py -> tests/data/saved_model_v1/)."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

import aioflow as af
from aioflow.saved_model import constants, loader

DATA = os.path.join(os.path.dirname(__file__), "data", "saved_model_v1")
MAIN_OP = os.path.join(DATA, "main_op")
LEGACY = os.path.join(DATA, "legacy")


@pytest.fixture(scope="module")
def expected():
    with open(os.path.join(DATA, "expected.json")) as f:
        return json.load(f)


def _tf_path(text: str) -> str:
    return text.replace("<OUT>", DATA)


async def _load(export_dir, tags, **kwargs):
    """A session over a fresh graph with the SavedModel loaded; (sess, meta)."""
    sess = af.Session(graph=af.Graph())
    meta = await af.saved_model.loader.load(sess, tags, export_dir, **kwargs)
    return sess, meta


async def _run_signature(sess, meta, x, prefix=""):
    sig = meta.signature_def["serving_default"]
    return await sess.run(prefix + sig.outputs["y"].name, {prefix + sig.inputs["x"].name: x})


@pytest.mark.parametrize("export_dir,tags,key", [
    (MAIN_OP, [af.saved_model.tag_constants.SERVING], "main_op"),
    (LEGACY, ["gpu", "serve"], "legacy"),
])
async def test_load_runs_signature_and_init_op(expected, export_dir, tags, key):
    sess, meta = await _load(export_dir, tags)
    async with sess:
        assert set(meta.meta_info_def.tags) == set(tags)
        y = await _run_signature(sess, meta, np.array(expected["X"], np.float32))
        np.testing.assert_allclose(y, expected["y"])
        counter, path = await sess.run(["counter:0", "asset_copy:0"])
        assert int(counter) == expected[key]["counter"]
        assert path.decode() == _tf_path(expected[key]["asset_copy"])
        assert os.path.exists(path)


async def test_strip_default_attrs_graph_restores_variables(expected):
    sess, meta = await _load(LEGACY, ["serve", "gpu"])
    async with sess:
        assert meta.meta_info_def.stripped_default_attrs
        w = await sess.run("w:0")
        np.testing.assert_allclose(w, expected["W"])
        values = {v.op.name: v for v in sess.graph.get_collection("variables")}
        np.testing.assert_allclose(await sess.run(values["b"].value()), expected["B"])


async def test_second_meta_graph_by_tags():
    sess, meta = await _load(LEGACY, ["train"])
    async with sess:
        assert list(meta.meta_info_def.tags) == ["train"]
        assert not meta.signature_def


async def test_import_scope(expected):
    sess, meta = await _load(MAIN_OP, ["serve"], import_scope="m")
    async with sess:
        y = await _run_signature(sess, meta, np.array(expected["X"], np.float32), "m/")
        np.testing.assert_allclose(y, expected["y"])
        path = await sess.run("m/asset_copy:0")
        assert path.decode() == _tf_path(expected["main_op"]["asset_copy"])


async def test_wrong_tags_is_tf_runtime_error(expected):
    err = expected["errors"]["wrong_tags"]
    with pytest.raises(RuntimeError) as info:
        await _load(MAIN_OP, ["nope"])
    assert type(info.value).__name__ == err["type"]
    assert str(info.value) == err["message"]


async def test_missing_dir_is_tf_os_error(expected):
    err = expected["errors"]["missing_dir"]
    with pytest.raises(OSError) as info:
        await _load(os.path.join(MAIN_OP, "absent"), ["serve"])
    assert str(info.value) == _tf_path(err["message"])


async def test_pbtxt_is_read_first(tmp_path, expected):
    export_dir = tmp_path / "m"
    shutil.copytree(MAIN_OP, export_dir)
    saved_model = loader.parse_saved_model(export_dir)
    from google.protobuf import text_format

    (export_dir / constants.SAVED_MODEL_FILENAME_PBTXT).write_text(
        text_format.MessageToString(saved_model))
    (export_dir / constants.SAVED_MODEL_FILENAME_PB).write_bytes(b"not a proto")
    sess, meta = await _load(export_dir, ["serve"])
    async with sess:
        y = await _run_signature(sess, meta, np.array(expected["X"], np.float32))
        np.testing.assert_allclose(y, expected["y"])


def test_corrupt_saved_model_is_os_error(tmp_path):
    (tmp_path / constants.SAVED_MODEL_FILENAME_PB).write_bytes(b"\xff\xff\xff")
    with pytest.raises(OSError, match="Cannot parse file"):
        loader.parse_saved_model(tmp_path)


def test_maybe_saved_model_directory(tmp_path):
    assert af.saved_model.loader.maybe_saved_model_directory(MAIN_OP)
    assert not af.saved_model.loader.maybe_saved_model_directory(tmp_path)
    assert not af.saved_model.loader.maybe_saved_model_directory(tmp_path / "absent")


def test_constants():
    assert af.saved_model.tag_constants.SERVING == "serve"
    sc = af.saved_model.signature_constants
    assert sc.DEFAULT_SERVING_SIGNATURE_DEF_KEY == "serving_default"
    assert af.saved_model.MAIN_OP_KEY == "saved_model_main_op"
    assert af.saved_model.LEGACY_INIT_OP_KEY == "legacy_init_op"
    assert constants.ASSETS_KEY == "saved_model_assets"


async def test_signature_tensors_from_loaded_graph(expected):
    sess, meta = await _load(MAIN_OP, ["serve"])
    async with sess:
        sig = meta.signature_def[af.saved_model.signature_constants.
                                 DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        utils = af.saved_model.utils
        x = utils.get_tensor_from_tensor_info(sig.inputs["x"], sess.graph)
        y = utils.get_tensor_from_tensor_info(sig.outputs["y"], sess.graph)
        assert (x.name, y.name) == ("x:0", "y:0")
        out = await sess.run(y, {x: np.array(expected["X"], np.float32)})
        np.testing.assert_allclose(out, expected["y"])
        names = af.saved_model.signature_def_utils.signature_tensor_names(sig)
        assert names == ({"x": "x:0"}, {"y": "y:0"})


def test_predict_signature_def_matches_tf_fixture():
    meta = loader.get_meta_graph_def_from_tags(loader.parse_saved_model(MAIN_OP), ["serve"])
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 2], name="x")
        y = af.identity(x, name="y")
        sig = af.saved_model.signature_def_utils.predict_signature_def({"x": x}, {"y": y})
    assert sig == meta.signature_def["serving_default"]
    with pytest.raises(ValueError, match="Prediction inputs cannot be None or empty."):
        af.saved_model.signature_def_utils.predict_signature_def({}, {"y": y})


def _ops_line_set(line: str) -> set:
    import ast

    return ast.literal_eval(line.split(" contains the following ops: ", 1)[1])


@pytest.mark.parametrize("key", ["main_op", "legacy"])
def test_cli_inspect_matches_saved_model_cli(expected, key, capsys):
    from aioflow import cli

    assert cli.main(["inspect", os.path.join(DATA, key)]) == 0
    ours = capsys.readouterr().out.splitlines()
    theirs = expected["show_all"][key].splitlines()
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        if "contains the following ops" in b:
            assert a.split(": {")[0] == b.split(": {")[0]
            assert _ops_line_set(a) == _ops_line_set(b)
        else:
            assert a == b


def test_cli_inspect_missing_dir(tmp_path, capsys):
    from aioflow import cli

    assert cli.main(["inspect", str(tmp_path)]) == 1
    assert "SavedModel file does not exist at:" in capsys.readouterr().err


async def test_tf2_saved_model_loads_as_tf_v1_loader_does():
    # TF's v1 loader loads a tf.saved_model.save export: the graph calls its functions and
    # the SaverDef's restore op calls the traced restore function (y = x * v, v = [1, 2]).
    sess, meta = await _load(os.path.join(DATA, "tf2"), ["serve"])
    async with sess:
        sig = meta.signature_def["serving_default"]
        y = await sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: [3.0, -1.0]})
    np.testing.assert_array_equal(y, np.array([3.0, -2.0], np.float32))


async def test_assets_collection_is_imported_as_tf_does(caplog):
    sess, _ = await _load(MAIN_OP, ["serve"])
    async with sess:
        (asset,) = sess.graph.get_collection(constants.ASSETS_KEY)  # the Any proto, as TF
        assert asset.type_url == "type.googleapis.com/tensorflow.AssetFileDef"
        exported = af.train.export_meta_graph(graph=sess.graph)
        assert exported.collection_def[constants.ASSETS_KEY].any_list.value[0] == asset
    assert "Cannot identify data type" not in caplog.text


async def test_a_corrupt_checkpoint_leaves_nothing_in_use(tmp_path, expected):
    # A flipped byte in the variables: the load is DataLossError, and a session that goes on
    # using the graph anyway gets TF's uninitialized-value error, not half-restored values.
    export_dir = tmp_path / "model"
    shutil.copytree(MAIN_OP, export_dir)
    data = export_dir / "variables" / "variables.data-00000-of-00001"
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0x10
    data.write_bytes(bytes(raw))
    sess = af.Session(graph=af.Graph())
    async with sess:
        with pytest.raises(af.errors.DataLossError):
            await af.saved_model.loader.load(sess, ["serve"], str(export_dir))
        # the graph was imported; its variables were not set
        with pytest.raises(af.errors.FailedPreconditionError, match="uninitialized"):
            await sess.run("y:0", {"x:0": np.array(expected["X"], np.float32)})
