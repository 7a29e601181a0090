"""Partitioned variables against TF 2.21 (tests/data/partitioned.*, partitioned_ckpt/,
made by tests/data/make_partitioned_fixtures_tf.py): get_variable with a partitioner
(fixed_size, variable_axis_size, min_max; ref and resource variables; from an initializer,
a constant tensor or the default glorot over the full shape), a PartitionedVariable as a
tensor and under embedding_lookup ("mod", "div"), Adam updating each part with slots per
part: TF's GraphDef node for node, TF's values and names; TF's sliced checkpoint restores
into the aioflow-built graph, and aioflow writes the same checkpoint files TF wrote."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from graph_compare import assert_same_graph

import aioflow.compat.v1 as tf
from aioflow.lib import tensor_bundle, tensor_slice
from aioflow.proto import graph_pb2

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_partitioned_fixtures_tf as programs  # noqa: E402

FIXTURES = json.loads((DATA / "partitioned.json").read_text())
ARRAYS = np.load(DATA / "partitioned.npz")
CKPT = DATA / "partitioned_ckpt" / "model"


def _build(name):
    g = tf.Graph()
    with g.as_default():
        fetches, names = programs.PROGRAMS[name](tf)
    return g, fetches, names


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_graph_and_names_equal_tf(name):
    g, _, names = _build(name)
    assert names == FIXTURES[name]["names"]
    want = graph_pb2.GraphDef.FromString(ARRAYS[f"{name}/graph_def"].tobytes())
    assert_same_graph(g.as_graph_def(), want)


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_values_equal_tf(name):
    g, fetches, _ = _build(name)
    with g.as_default(), tf.Session(graph=g) as sess:
        got = programs.run(tf, name, g, fetches, sess)
    assert sorted(got) == FIXTURES[name]["values"]
    for key, value in got.items():
        np.testing.assert_allclose(value, ARRAYS[f"{name}/{key}"], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name} {key}")


def test_partitioners_answer_as_tf():
    got = [programs.partitioner(tf, kind, kwargs)(shape=tf.TensorShape(shape),
                                                  dtype=tf.as_dtype(dtype))
           for kind, kwargs, shape, dtype in programs.PARTITIONER_CASES]
    assert got == FIXTURES["partitioners"]


def test_tf_checkpoint_restores_into_aioflow_graph():
    g, fetches, _ = _build("adam")
    with g.as_default(), tf.Session(graph=g) as sess:
        fetches["saver"].restore(sess, str(CKPT))
        for v in tf.global_variables():
            np.testing.assert_array_equal(sess.run(v), ARRAYS[f"adam/var:{v.op.name}"],
                                          err_msg=v.op.name)


def test_aioflow_writes_tfs_checkpoint_files(tmp_path):
    """Restored from TF's checkpoint and saved again: the same index and data bytes (the
    sliced entries, their encoded keys and order, the full tensors' slice lists)."""
    g, fetches, _ = _build("adam")
    with g.as_default(), tf.Session(graph=g) as sess:
        fetches["saver"].restore(sess, str(CKPT))
        fetches["saver"].save(sess, str(tmp_path / "model"), write_meta_graph=False,
                              write_state=False)
    for suffix in (".index", ".data-00000-of-00001"):
        assert (tmp_path / f"model{suffix}").read_bytes() == \
            Path(f"{CKPT}{suffix}").read_bytes(), suffix


def test_restore_into_a_different_partitioning(tmp_path):
    """Slices saved with 2 parts read back into 3 parts and whole (RestoreV2 assembles a
    slice from the stored ones that overlap it)."""
    want = np.arange(30, dtype=np.float32).reshape(10, 3)
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.get_variable("emb", initializer=tf.constant(want),
                        partitioner=tf.fixed_size_partitioner(2))
        saver = tf.train.Saver()
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "two"), write_meta_graph=False, write_state=False)
    with tf.Graph().as_default(), tf.Session() as sess:
        emb = tf.get_variable("emb", [10, 3], partitioner=tf.fixed_size_partitioner(3))
        tf.train.Saver().restore(sess, str(tmp_path / "two"))
        np.testing.assert_array_equal(sess.run(emb.as_tensor()), want)
    with tf.Graph().as_default(), tf.Session() as sess:
        whole = tf.get_variable("emb", [10, 3])
        tf.train.Saver().restore(sess, str(tmp_path / "two"))
        np.testing.assert_array_equal(sess.run(whole), want)
    with tensor_bundle.BundleReader(str(tmp_path / "two")) as reader:
        np.testing.assert_array_equal(reader.lookup("emb"), want)
        part = tensor_slice.parse_shape_and_slice("10 3 3,4:1,2")[1]
        np.testing.assert_array_equal(reader.lookup_slice("emb", part), want[3:7, 1:3])


def test_errors_as_tf():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Can only slice a variable along one "
                                             "dimension"):
            tf.get_variable("a", [4, 4], partitioner=lambda shape, dtype: [2, 2])
        tf.get_variable("b", [4, 2], partitioner=tf.fixed_size_partitioner(2))
        with pytest.raises(ValueError, match="Partitioned variable with name b already "
                                             "exists"):
            tf.get_variable("b", [4, 2], partitioner=tf.fixed_size_partitioner(2))
        tf.get_variable("c", [4, 2])
        with pytest.raises(ValueError, match="A partitioner was provided, but an "
                                             "unpartitioned version of the variable was "
                                             "found: c"):
            tf.get_variable("c", [4, 2], partitioner=tf.fixed_size_partitioner(2))
        with tf.variable_scope("", reuse=True):
            same = tf.get_variable("b", [4, 2], partitioner=tf.fixed_size_partitioner(2))
        assert [v.op.name for v in same] == ["b/part_0", "b/part_1"]
        with pytest.raises(ValueError, match="max_shards must be positive"):
            tf.variable_axis_size_partitioner(10, max_shards=-1)


def test_meta_graph_keeps_the_slices(tmp_path):
    """export_meta_graph writes each part's save_slice_info_def; after import_meta_graph
    the parts are slices again, and a Saver over them reads TF's checkpoint."""
    g, _, _ = _build("adam")
    with g.as_default():
        tf.train.export_meta_graph(str(tmp_path / "m.meta"))
        specs = {v.op.name: v._save_slice_info.spec for v in tf.global_variables()
                 if v._save_slice_info is not None}
    assert specs["emb/part_1"] == "10 3 5,5:0,3"
    assert specs["emb/part_0/Adam_1"] == "10 3 0,5:0,3"
    with tf.Graph().as_default() as g2:
        saver = tf.train.import_meta_graph(str(tmp_path / "m.meta"))
        assert {v.op.name: v._save_slice_info.spec for v in tf.global_variables()
                if v._save_slice_info is not None} == specs
        with tf.Session(graph=g2) as sess:
            saver.restore(sess, str(CKPT))
            np.testing.assert_array_equal(sess.run("emb/part_1:0"),
                                          ARRAYS["adam/var:emb/part_1"])


@pytest.mark.parametrize("use_resource,sharded", [(True, False), (False, True),
                                                  (True, True)])
def test_save_and_restore_round_trip(tmp_path, use_resource, sharded):
    """Resource parts, and a sharded Saver (a SaveV2 per device, MergeV2Checkpoints
    joining the slices of one variable)."""
    want = np.arange(24, dtype=np.float32).reshape(8, 3)
    config = tf.ConfigProto(device_count={"CPU": 2})
    with tf.Graph().as_default(), tf.Session(config=config) as sess:
        with tf.device("/cpu:0"):
            tf.get_variable("a", initializer=tf.constant(want), use_resource=use_resource,
                            partitioner=tf.fixed_size_partitioner(3))
        with tf.device("/device:CPU:1" if sharded else "/cpu:0"):
            tf.get_variable("b", initializer=tf.constant(want[:4]),
                            partitioner=tf.fixed_size_partitioner(2))
        saver = tf.train.Saver(sharded=sharded)
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "m"), write_meta_graph=False, write_state=False)
    with tf.Graph().as_default(), tf.Session() as sess:
        a = tf.get_variable("a", [8, 3], use_resource=use_resource,
                            partitioner=tf.fixed_size_partitioner(2))
        b = tf.get_variable("b", [4, 3])
        tf.train.Saver().restore(sess, str(tmp_path / "m"))
        np.testing.assert_array_equal(sess.run(a.as_tensor()), want)
        np.testing.assert_array_equal(sess.run(b), want[:4])


def test_init_from_checkpoint_fills_the_parts():
    """init_from_checkpoint over a partitioned variable (by name, by scope, or its
    parts): each part restores its slice of TF's checkpoint tensor."""
    with tf.Graph().as_default(), tf.Session() as sess:
        emb = tf.get_variable("new/emb", [10, 3], partitioner=tf.fixed_size_partitioner(4))
        slot = tf.get_variable("slot", [10, 3], partitioner=tf.fixed_size_partitioner(3))
        dense = tf.get_variable("dense", [3, 1])
        tf.train.init_from_checkpoint(str(CKPT), {"emb": "new/emb", "emb/Adam": list(slot),
                                                  "/": "other/"})
        tf.train.init_from_checkpoint(str(CKPT), {"dense": "dense"})
        sess.run(tf.global_variables_initializer())
        full = sess.run(emb.as_tensor())
        np.testing.assert_array_equal(full, np.concatenate(
            [ARRAYS["adam/var:emb/part_0"], ARRAYS["adam/var:emb/part_1"]]))
        np.testing.assert_array_equal(sess.run(slot.as_tensor()), np.concatenate(
            [ARRAYS["adam/var:emb/part_0/Adam"], ARRAYS["adam/var:emb/part_1/Adam"]]))
        np.testing.assert_array_equal(sess.run(dense), ARRAYS["adam/var:dense"])
