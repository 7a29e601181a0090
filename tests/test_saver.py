"""af.train.Saver and meta graphs against TensorFlow 2.21 (tests/data/make_saver_fixtures.py):
the save/restore subgraph node for node, checkpoints and meta graphs TF wrote restored
here, TF's restore errors, round trips, max_to_keep, and (with AIOFLOW_TF_PYTHON) TF
restoring what aioflow wrote (tests/data/check_saver_in_tf.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.proto import meta_graph_pb2

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
sys.path.insert(0, DATA)

from make_saver_fixtures import VALUES, build_graph, saver_nodes  # noqa: E402

with open(os.path.join(DATA, "saver_fixtures.json")) as _f:
    FIXTURES = json.load(_f)
TF_PREFIX = os.path.join(DATA, "saver_tf", "model.ckpt-7")
DICT_PREFIX = os.path.join(DATA, "saver_dict", "model")
ORDER = ("a", "sc/b", "step", "s")

#: Other values, written by aioflow (so a restore that reads them proves the file).
OTHER = {"a": [[-1.0, 0.5, 2.0], [4.0, -8.0, 16.0]], "sc/b": [0.25, -0.5, 1.0],
         "step": -9876543210, "s": ["aioflow", "\u00e9t\u00e9"]}


def run(coro):
    return asyncio.run(coro)


def _graph_with_savers():
    g = af.Graph()
    with g.as_default():
        vs, assign = build_graph(af)
        saver = af.train.Saver()
        dict_saver = af.train.Saver({"other/a": vs["a"], "renamed_b": vs["sc/b"]},
                                    name="dict_saver")
    return g, vs, assign, saver, dict_saver


def _check_values(got: list, want: dict, names=ORDER) -> None:
    for name, value in zip(names, got, strict=True):
        if isinstance(want[name], list) and isinstance(want[name][0], str):
            assert [x.decode() for x in value] == want[name]
        else:
            np.testing.assert_array_equal(value, want[name])


# -- the graph TF's Saver builds ------------------------------------------------------------

def test_saver_graph_is_tfs():
    g, _, _, saver, dict_saver = _graph_with_savers()
    gd = g.as_graph_def()
    assert saver_nodes(gd, "save") == FIXTURES["saver_nodes"]
    assert saver_nodes(gd, "dict_saver") == FIXTURES["dict_saver_nodes"]
    assert str(saver.as_saver_def()) == FIXTURES["saver_def"]
    assert str(dict_saver.as_saver_def()) == FIXTURES["dict_saver_def"]


def test_sharded_saver_graph_is_tfs():
    g = af.Graph()
    with g.as_default():
        build_graph(af)
        saver = af.train.Saver(sharded=True)
    assert saver_nodes(g.as_graph_def(), "save") == FIXTURES["sharded_saver_nodes"]
    assert str(saver.as_saver_def()) == FIXTURES["sharded_saver_def"]


def test_sharded_round_trip(tmp_path):
    g = af.Graph()
    with g.as_default():
        vs, assign = build_graph(af)
        saver = af.train.Saver(sharded=True)
        other = _assign_other(vs)
        init = af.global_variables_initializer()

    async def main():
        async with af.Session(graph=g) as sess:
            await sess.run(init)
            await sess.run(assign)
            prefix = await saver.save(sess, str(tmp_path / "model"), write_meta_graph=False)
            await sess.run(other)
            await saver.restore(sess, prefix)
            return prefix, await sess.run([vs[k] for k in ORDER])

    prefix, values = run(main())
    assert prefix == str(tmp_path / "model")
    _check_values(values, VALUES)
    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint", "model.data-00000-of-00001", "model.index"]


def test_saver_refusals():
    g = af.Graph()
    with g.as_default():
        with pytest.raises(ValueError, match="No variables to save"):
            af.train.Saver()
        assert af.train.Saver(allow_empty=True).last_checkpoints == []
        v = af.Variable([1.0], name="v")
        with pytest.raises(ValueError, match="At least two variables have the same name: v"):
            af.train.Saver([v, v])
        with pytest.raises(NotImplementedError, match="V2"):
            af.train.Saver(write_version=af.train.SaverDef.V1)


# -- TF's checkpoints restore here -----------------------------------------------------------

def test_restores_checkpoint_tf_wrote():
    g, vs, _, saver, _ = _graph_with_savers()

    async def main():
        async with af.Session(graph=g) as sess:
            await saver.restore(sess, TF_PREFIX)
            return await sess.run([vs[k] for k in ORDER])

    _check_values(run(main()), VALUES)
    assert af.train.latest_checkpoint(os.path.join(DATA, "saver_tf")) == TF_PREFIX


def test_restores_dict_checkpoint_tf_wrote():
    g = af.Graph()
    with g.as_default():
        a = af.Variable(af.zeros([2, 3]), name="x")
        b = af.get_variable("y", [3], initializer=af.zeros_initializer(), use_resource=True)
        saver = af.train.Saver({"other/a": a, "renamed_b": b})

    async def main():
        async with af.Session(graph=g) as sess:
            await saver.restore(sess, DICT_PREFIX)
            return await sess.run([a, b])

    _check_values(run(main()), VALUES, ("a", "sc/b"))


def _restore_error(build) -> Exception:
    g = af.Graph()
    with g.as_default():
        build()
        saver = af.train.Saver()

    async def main():
        async with af.Session(graph=g) as sess:
            await saver.restore(sess, TF_PREFIX)

    with pytest.raises(Exception) as info:
        run(main())
    return info.value


@pytest.mark.parametrize("case,build", [
    ("missing_key", lambda: (af.Variable(af.zeros([2, 3]), name="a"),
                             af.Variable(af.zeros([2]), name="missing"))),
    ("shape_mismatch", lambda: af.Variable(af.zeros([4]), name="a")),
    ("dtype_mismatch", lambda: af.Variable(af.zeros([2, 3], dtype=af.float64), name="a")),
])
def test_restore_errors_are_tfs(case, build):
    want = FIXTURES["errors"][case]
    err = _restore_error(build)
    assert type(err).__name__ == want["class"]
    assert err.message.startswith(want["wrapped"])
    original = want["original"].split("\n\t [[")[0]
    assert original in err.message[len(want["wrapped"]):]
    assert want["node"] in err.message


def test_restore_from_no_checkpoint():
    g, _, _, saver, _ = _graph_with_savers()
    missing = os.path.join(DATA, "saver_tf", "nothing")

    async def main():
        async with af.Session(graph=g) as sess:
            await saver.restore(sess, missing)

    with pytest.raises(ValueError) as info:
        run(main())
    want = FIXTURES["errors"]["no_checkpoint"]["message"].replace("<data>", DATA)
    assert str(info.value) == want
    with pytest.raises(ValueError, match="Can't load save_path when it is None."):
        run(saver.restore(None, None))


# -- round trips and the state file ----------------------------------------------------------

def _assign_other(vs):
    return af.group(vs["a"].assign(OTHER["a"]), vs["sc/b"].assign(OTHER["sc/b"]),
                    vs["step"].assign(np.int64(OTHER["step"])), vs["s"].assign(OTHER["s"]))


def test_round_trip(tmp_path):
    g, vs, assign, saver, _ = _graph_with_savers()
    with g.as_default():
        other = _assign_other(vs)
        init = af.global_variables_initializer()
        step = af.constant(np.int64(42))

    async def main():
        async with af.Session(graph=g) as sess:
            await sess.run(init)
            await sess.run(other)
            prefix = await saver.save(sess, str(tmp_path / "model"), global_step=step)
            await sess.run(assign)
            await saver.restore(sess, prefix)
            return prefix, await sess.run([vs[k] for k in ORDER])

    prefix, values = run(main())
    assert prefix == str(tmp_path / "model-42")
    _check_values(values, OTHER)
    assert af.train.latest_checkpoint(str(tmp_path)) == prefix
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model-42.data-00000-of-00001",
                                           "model-42.index", "model-42.meta"]
    assert dict(af.train.list_variables(str(tmp_path))) == {
        "a": [2, 3], "s": [2], "sc/b": [3], "step": []}


def test_save_errors(tmp_path):
    g, _, _, saver, _ = _graph_with_savers()
    with g.as_default():
        init = af.global_variables_initializer()

    async def main(path, **kw):
        async with af.Session(graph=g) as sess:
            await sess.run(init)
            return await saver.save(sess, path, **kw)

    with pytest.raises(ValueError, match="'latest_filename' must not contain path"):
        run(main(str(tmp_path / "m"), latest_filename="a/b"))
    with pytest.raises(ValueError, match="Parent directory of .* doesn't exist, can't save."):
        run(main(str(tmp_path / "no" / "such" / "m")))


def test_max_to_keep(tmp_path):
    g = af.Graph()
    with g.as_default():
        v = af.Variable(0, name="v", dtype=af.int64)
        bump = v.assign_add(np.int64(1))
        saver = af.train.Saver(max_to_keep=2)
        keep_all = af.train.Saver(max_to_keep=0)
        init = af.global_variables_initializer()

    async def main():
        async with af.Session(graph=g) as sess:
            await sess.run(init)
            for i in range(5):
                await sess.run(bump)
                await saver.save(sess, str(tmp_path / "m"), global_step=i,
                                 write_meta_graph=False)
                await keep_all.save(sess, str(tmp_path / "all" / "m"), global_step=i,
                                    write_meta_graph=False)

    os.mkdir(tmp_path / "all")
    run(main())
    kept = [str(tmp_path / f"m-{i}") for i in (3, 4)]
    assert saver.last_checkpoints == kept
    assert sorted(p for p in os.listdir(tmp_path) if p.endswith(".index")) == [
        "m-3.index", "m-4.index"]
    state = af.train.get_checkpoint_state(str(tmp_path))
    assert list(state.all_model_checkpoint_paths) == kept
    assert af.train.load_variable(kept[-1], "v") == 5
    assert keep_all.last_checkpoints == []
    assert len([p for p in os.listdir(tmp_path / "all") if p.endswith(".index")]) == 5


# -- meta graphs ------------------------------------------------------------------------------

def _tf_meta() -> meta_graph_pb2.MetaGraphDef:
    meta = meta_graph_pb2.MetaGraphDef()
    with open(TF_PREFIX + ".meta", "rb") as f:
        meta.ParseFromString(f.read())
    return meta


def test_import_meta_graph_tf_wrote():
    g = af.Graph()
    with g.as_default():
        saver = af.train.import_meta_graph(TF_PREFIX + ".meta")
        variables = af.global_variables()
        assert [v.name for v in variables] == ["a:0", "sc/b:0", "step:0", "s:0"]
        assert [v._is_resource for v in variables] == [False, True, False, False]
        assert af.trainable_variables() == variables
    assert str(saver.as_saver_def()) == FIXTURES["saver_def"]

    async def main():
        async with af.Session(graph=g) as sess:
            await saver.restore(sess, TF_PREFIX)
            return await sess.run(variables)

    _check_values(run(main()), VALUES)


def test_export_meta_graph_is_tfs():
    g, _, _, saver, _ = _graph_with_savers()
    with g.as_default():
        af.global_variables_initializer()
    meta = saver.export_meta_graph()
    tf_meta = _tf_meta()
    assert meta.saver_def == tf_meta.saver_def
    assert dict(meta.collection_def) == dict(tf_meta.collection_def)
    # Node for node, attrs (_output_shapes, _class, ...) included. One known difference,
    # not the Saver's: TF 2.21's ResourceVariable.assign writes validate_shape=true on its
    # AssignVariableOp, aioflow's false.
    for graph_def in (meta.graph_def, tf_meta.graph_def):
        names = [n.name for n in graph_def.node]
        del graph_def.node[names.index("AssignVariableOp")].attr["validate_shape"]
    assert list(meta.graph_def.node) == list(tf_meta.graph_def.node)
    ops = [o.name for o in meta.meta_info_def.stripped_op_list.op]
    assert ops == [o.name for o in tf_meta.meta_info_def.stripped_op_list.op]


def test_export_import_round_trip(tmp_path):
    g = af.Graph()
    with g.as_default():
        v = af.Variable([1.0, 2.0], name="v")
        af.add_to_collection("extra", v.value())
        af.add_to_collection("ints", 7)
        af.add_to_collection("names", "hello")
        path = str(tmp_path / "g.meta")
        af.train.export_meta_graph(path, as_text=True)
    g2 = af.Graph()
    with g2.as_default():
        saver = af.train.import_meta_graph(path)
        assert isinstance(saver, af.train.Saver)
        assert g2.get_collection("extra")[0].name == "v/read:0"
        assert g2.get_collection("ints") == [7]
        assert g2.get_collection("names") == [b"hello"]
    with pytest.raises(OSError, match="does not exist"):
        af.train.import_meta_graph(str(tmp_path / "none.meta"))
    g3 = af.Graph()
    with g3.as_default():
        af.constant(1.0)
        af.train.export_meta_graph(path)
    with af.Graph().as_default():
        assert af.train.import_meta_graph(path) is None


# -- TF restores what aioflow wrote -----------------------------------------------------------

def write_for_tf(tmp_path) -> dict:
    """Checkpoints and a meta graph aioflow wrote, and the manifest check_saver_in_tf.py
    checks them against."""
    g, vs, _, saver, dict_saver = _graph_with_savers()
    with g.as_default():
        other = _assign_other(vs)
        sharded = af.train.Saver(sharded=True, name="sharded")
        init = af.global_variables_initializer()
    for d in ("all", "dict", "sharded"):
        os.mkdir(tmp_path / d)

    async def main():
        async with af.Session(graph=g) as sess:
            await sess.run(init)
            await sess.run(other)
            prefix = await saver.save(sess, str(tmp_path / "all" / "model"), global_step=3)
            dict_prefix = await dict_saver.save(sess, str(tmp_path / "dict" / "model"))
            sharded_prefix = await sharded.save(sess, str(tmp_path / "sharded" / "model"))
            return prefix, dict_prefix, sharded_prefix

    prefix, dict_prefix, sharded_prefix = run(main())
    return {"checks": [
        {"prefix": prefix, "meta": prefix + ".meta", "expected": OTHER},
        {"prefix": prefix, "meta": None, "var_list": None, "expected": OTHER},
        {"prefix": dict_prefix, "meta": None,
         "var_list": {"other/a": "a", "renamed_b": "sc/b"},
         "expected": {"a": OTHER["a"], "sc/b": OTHER["sc/b"]}},
        {"prefix": sharded_prefix, "meta": sharded_prefix + ".meta", "expected": OTHER},
    ], "latest": {str(tmp_path / "all"): prefix, str(tmp_path / "dict"): dict_prefix,
                  str(tmp_path / "sharded"): sharded_prefix}}


def test_tensorflow_restores_aioflow_checkpoints(tmp_path):
    tf_python = os.environ.get("AIOFLOW_TF_PYTHON")
    if not tf_python:
        pytest.skip("AIOFLOW_TF_PYTHON (a Python with TensorFlow) not set")
    manifest = write_for_tf(tmp_path)
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    proc = subprocess.run([tf_python, os.path.join(DATA, "check_saver_in_tf.py"), str(path)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0 and report["ok"], report
    assert report["values_checked"] == 14


def test_restore_error_class():
    err = _restore_error(lambda: af.Variable(af.zeros([2]), name="missing"))
    assert isinstance(err, errors.NotFoundError)


def test_import_meta_graph_with_scope_and_stripped_attrs(tmp_path):
    g = af.Graph()
    with g.as_default():
        saver = af.train.import_meta_graph(TF_PREFIX + ".meta", import_scope="imported")
        variables = af.global_variables()
        assert [v.name for v in variables] == [
            "imported/a:0", "imported/sc/b:0", "imported/step:0", "imported/s:0"]
        assert saver.as_saver_def().restore_op_name == "imported/save/restore_all"
        path = str(tmp_path / "stripped.meta")
        meta = af.train.export_meta_graph(path, strip_default_attrs=True)
    assert meta.meta_info_def.stripped_default_attrs
    nodes = {n.name: n for n in meta.graph_def.node}
    assert "use_locking" not in nodes["imported/save/Assign"].attr  # default true
    assert "validate_shape" not in nodes["imported/save/Assign"].attr

    async def main(graph, saver, variables):
        async with af.Session(graph=graph) as sess:
            await saver.restore(sess, TF_PREFIX)
            return await sess.run(variables)

    _check_values(run(main(g, saver, variables)), VALUES)
    g2 = af.Graph()
    with g2.as_default():
        af.train.import_meta_graph(path)
        saver2 = af.train.Saver(
            {v.op.name[len("imported/"):]: v for v in af.global_variables()})
        variables2 = af.global_variables()
    _check_values(run(main(g2, saver2, variables2)), VALUES)


def test_relative_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir("run")
    g = af.Graph()
    with g.as_default():
        v = af.Variable(1.5, name="v")
        saver = af.train.Saver(save_relative_paths=True)
        init = af.global_variables_initializer()

    async def main():
        async with af.Session(graph=g) as sess:
            await sess.run(init)
            return await saver.save(sess, os.path.join("run", "m"), global_step=1)

    assert run(main()) == os.path.join("run", "m-1")
    with open(os.path.join("run", "checkpoint")) as f:
        assert f.read() == 'model_checkpoint_path: "m-1"\nall_model_checkpoint_paths: "m-1"\n'
    assert af.train.latest_checkpoint("run") == os.path.join("run", "m-1")
    assert v.name == "v:0"


@pytest.mark.parametrize("sharded", [False, True])
def test_a_failed_restore_changes_no_variable(tmp_path, sharded):
    # A checkpoint whose last tensor ("b") is corrupt: the restore is DataLossError and the
    # variable keeps the value it had. Unsharded, one RestoreV2 feeds every assign, so no
    # variable changes (nothing restored half-way); sharded, each device's shard restores
    # on its own, as in TF, so only the corrupt shard's variables are sure to be kept.
    g = af.Graph()
    with g.as_default():
        with af.device("/cpu:0"):
            a = af.Variable([1.0, 2.0, 3.0], name="a")
        with af.device("/cpu:1"):
            b = af.get_variable("b", initializer=af.constant([4, 5], af.int64),
                                use_resource=True)
        saver = af.train.Saver(sharded=sharded)
        init = af.global_variables_initializer()
        change = af.group(a.assign([9.0, 9.0, 9.0]), b.assign([9, 9]))
    config = af.ConfigProto(device_count={"CPU": 2})

    async def main():
        async with af.Session(graph=g, config=config) as sess:
            await sess.run(init)
            prefix = await saver.save(sess, str(tmp_path / "model"))
            await sess.run(change)
            from aioflow.lib import tensor_bundle
            with tensor_bundle.BundleReader(prefix) as reader:
                entries = [reader.entry(k) for k in reader.keys() if k != b""]
            num_shards = len([p for p in os.listdir(tmp_path) if ".data-" in p])
            assert num_shards == (2 if sharded else 1)
            entry = entries[-1]  # b's, its last byte
            data = f"{prefix}.data-{entry.shard_id:05d}-of-{num_shards:05d}"
            with open(data, "r+b") as f:
                f.seek(entry.offset + entry.size - 1)
                byte = f.read(1)
                f.seek(entry.offset + entry.size - 1)
                f.write(bytes([byte[0] ^ 0x10]))
            with pytest.raises(errors.DataLossError):
                await saver.restore(sess, prefix)
            return await sess.run([a, b])

    got_a, got_b = run(main())
    np.testing.assert_array_equal(got_b, [9, 9])
    if not sharded:
        np.testing.assert_array_equal(got_a, [9.0, 9.0, 9.0])
