"""Writes the partitioned-variable fixtures (tests/data/partitioned.npz, partitioned.json,
tests/data/partitioned_ckpt/): TF 2.21's tf.compat.v1 get_variable with a partitioner
(fixed_size, variable_axis_size, min_max; ref and resource variables), a
PartitionedVariable used as a tensor (ConcatPartitions), by embedding_lookup ("mod" and
"div") and by the sampled losses, Adam training a partitioned embedding (slots per part),
a Saver writing TF's sliced checkpoint entries, and variable scopes' custom getters:
GraphDefs node for node, values, the partitioners' answers for several shapes, and the
checkpoint files TF wrote.

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_partitioned_fixtures_tf.py

Each program takes the TF-1-like module (tf.compat.v1 here, aioflow.compat.v1 in
tests/test_partitioned_variables.py) and returns (fetches, run) where run(sess) gives the
values to compare.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CKPT = HERE / "partitioned_ckpt"
IDS = np.array([[0, 5, 9], [3, 3, 7]], np.int64)

PARTITIONER_CASES = [  # (kind, kwargs, shape, dtype)
    ("fixed", {"num_shards": 3}, [10, 4], "float32"),
    ("fixed", {"num_shards": 5, "axis": 1}, [2, 3], "float32"),
    ("axis_size", {"max_shard_bytes": 40}, [7, 3], "float32"),
    ("axis_size", {"max_shard_bytes": 1 << 10, "axis": 1}, [100, 50], "float64"),
    ("axis_size", {"max_shard_bytes": 100, "max_shards": 2}, [20, 4], "int32"),
    ("axis_size", {"max_shard_bytes": 64, "bytes_per_string_element": 8}, [9, 2], "string"),
    ("min_max", {"max_partitions": 4, "min_slice_size": 32}, [8, 2], "float32"),
    ("min_max", {"max_partitions": 8}, [1000, 300], "float32"),
    ("min_max", {"max_partitions": 3, "axis": 1, "min_slice_size": 1}, [4, 2], "float32"),
]


def partitioner(tf, kind, kwargs):
    return {"fixed": tf.fixed_size_partitioner,
            "axis_size": tf.variable_axis_size_partitioner,
            "min_max": tf.min_max_variable_partitioner}[kind](**kwargs)


def fixed(tf):
    tf.set_random_seed(1)
    ids = tf.placeholder(tf.int64, [2, 3], name="ids")
    with tf.variable_scope("scope", partitioner=tf.fixed_size_partitioner(3)):
        w = tf.get_variable("w", [10, 4])
    full = tf.identity(w, name="full")
    rows = tf.nn.embedding_lookup(w, ids)
    names = {"parts": [v.op.name for v in w], "len": len(w), "name": w.name,
             "shape": w.get_shape().as_list(), "partitions": w._get_partitions(),
             "list": [v.op.name for v in w._get_variable_list()]}
    return {"full": full, "rows": rows}, names


def axis_size_resource(tf):
    tf.set_random_seed(2)
    ids = tf.placeholder(tf.int64, [2, 3], name="ids")
    v = tf.get_variable("v", [10, 3], use_resource=True,
                        initializer=tf.random_normal_initializer(seed=4),
                        partitioner=tf.variable_axis_size_partitioner(40))
    rows = tf.nn.embedding_lookup(v, ids, partition_strategy="div")
    return {"full": v.as_tensor(), "rows": rows}, {"parts": [x.op.name for x in v]}


def min_max_constant(tf):
    init = np.arange(16, dtype=np.float32).reshape(8, 2)
    u = tf.get_variable("u", initializer=tf.constant(init),
                        partitioner=tf.min_max_variable_partitioner(4, min_slice_size=32))
    k = tf.get_variable("k", [6, 2], initializer=tf.constant_initializer(0.5),
                        partitioner=tf.fixed_size_partitioner(4))
    total = tf.reduce_sum(u) + tf.reduce_sum(k)
    return {"u": u.as_tensor(), "k": tf.convert_to_tensor(k), "total": total}, \
        {"parts": [x.op.name for x in list(u) + list(k)]}


def adam(tf):
    tf.set_random_seed(3)
    ids = tf.placeholder(tf.int64, [2, 3], name="ids")
    emb = tf.get_variable("emb", [10, 3], partitioner=tf.fixed_size_partitioner(2))
    dense = tf.get_variable("dense", [3, 1])
    rows = tf.nn.embedding_lookup(emb, ids)
    loss = tf.reduce_mean(tf.square(tf.tensordot(rows, dense, 1) - 1.0))
    gs = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=gs)
    # offsets past 63: the slice keys' multi-byte OrderedCode
    tf.get_variable("big", [300, 2], trainable=False, initializer=tf.ones_initializer(),
                    partitioner=tf.fixed_size_partitioner(3))
    saver = tf.train.Saver()
    names = {"variables": [v.op.name for v in tf.global_variables()],
             "saver": saver.saver_def.save_tensor_name}
    return {"loss": loss, "train": train, "saver": saver}, names


def sampled(tf):
    """nce_loss and sampled_softmax_loss over a partitioned output table."""
    tf.set_random_seed(6)
    weights = tf.get_variable("out_w", [12, 3], partitioner=tf.fixed_size_partitioner(3))
    biases = tf.get_variable("out_b", [12], initializer=tf.zeros_initializer())
    inputs = tf.constant(np.random.default_rng(2).normal(size=(4, 3)).astype(np.float32))
    labels = tf.constant([[1], [5], [7], [11]], tf.int64)
    nce = tf.nn.nce_loss(weights, biases, labels, inputs, num_sampled=4, num_classes=12)
    softmax = tf.nn.sampled_softmax_loss(weights, biases, labels, inputs, num_sampled=4,
                                         num_classes=12, partition_strategy="div")
    return {"nce": nce, "softmax": softmax}, {"parts": [v.op.name for v in weights]}


def custom_getter(tf):
    """Variable scopes' custom getters, nested (the inner one calls the outer one), and
    one given to get_variable; with a partitioner passed through."""
    def rename(getter, name, *args, **kwargs):
        kwargs["trainable"] = False
        return getter(name + "_x", *args, **kwargs)

    def doubled(getter, name, *args, **kwargs):
        return tf.convert_to_tensor(getter(name, *args, **kwargs)) * 2.0

    with tf.variable_scope("s", custom_getter=rename):
        with tf.variable_scope("t", custom_getter=doubled):
            v = tf.get_variable("v", [2], initializer=tf.ones_initializer())
            p = tf.get_variable("p", [4, 2], initializer=tf.ones_initializer(),
                                partitioner=tf.fixed_size_partitioner(2))
        w = tf.get_variable("w", [3], initializer=tf.zeros_initializer(),
                            custom_getter=lambda getter, *a, **k: getter(*a, **k) + 1.0)
    return {"v": v, "p": p, "w": w}, {
        "global": [x.op.name for x in tf.global_variables()],
        "trainable": [x.op.name for x in tf.trainable_variables()]}


def ema_parts(tf):
    """ExponentialMovingAverage of a partitioned variable's parts: the shadow of each
    part is a part of the full shadow (saved as its slice), as TF's."""
    w = tf.get_variable("w", [6, 2], initializer=tf.ones_initializer(),
                        partitioner=tf.fixed_size_partitioner(2))
    ema = tf.train.ExponentialMovingAverage(0.5)
    maintain = ema.apply(list(w))
    saver = tf.train.Saver()
    restore = tf.train.Saver(ema.variables_to_restore())
    return {"maintain": maintain, "saver": saver}, {
        "restore": sorted(ema.variables_to_restore()),
        "specs": [v._save_slice_info.spec for v in tf.global_variables()],
        "full_names": [v._save_slice_info.full_name for v in tf.global_variables()],
        "restore_saver": restore.saver_def.restore_op_name}


PROGRAMS = {"fixed": fixed, "axis_size_resource": axis_size_resource,
            "min_max_constant": min_max_constant, "adam": adam, "sampled": sampled,
            "custom_getter": custom_getter, "ema_parts": ema_parts}


def feeds(graph):
    try:
        return {graph.get_tensor_by_name("ids:0"): IDS}
    except KeyError:
        return {}


def run(tf, name, graph, fetches, sess, save_to=None):
    """The program's values: after init (and for "adam" three steps, then every global
    variable; saved to `save_to` when given)."""
    sess.run(tf.global_variables_initializer())
    out = {}
    if name == "ema_parts":
        sess.run(fetches["maintain"])
        return {"var:" + v.op.name: sess.run(v) for v in tf.global_variables()}
    if name == "adam":
        for step in range(3):
            _, out[f"loss{step}"] = sess.run([fetches["train"], fetches["loss"]],
                                             feeds(graph))
        for v in tf.global_variables():
            out["var:" + v.op.name] = sess.run(v)
        if save_to is not None:
            fetches["saver"].save(sess, str(save_to), write_meta_graph=False,
                                  write_state=False)
        return out
    return sess.run(fetches, feeds(graph))


def main() -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    arrays, meta = {}, {"partitioners": []}
    for kind, kwargs, shape, dtype in PARTITIONER_CASES:
        part = partitioner(v1, kind, kwargs)
        meta["partitioners"].append(part(shape=tf.TensorShape(shape), dtype=tf.as_dtype(dtype)))
    shutil.rmtree(CKPT, ignore_errors=True)
    CKPT.mkdir()
    for name, program in PROGRAMS.items():
        g = tf.Graph()
        with g.as_default():
            fetches, names = program(v1)
            arrays[f"{name}/graph_def"] = np.frombuffer(
                g.as_graph_def().SerializeToString(deterministic=True), np.uint8)
            with v1.Session(graph=g) as sess:
                values = run(v1, name, g, fetches, sess, CKPT / "model")
        meta[name] = {"names": names, "values": sorted(values)}
        for key, value in values.items():
            arrays[f"{name}/{key}"] = np.asarray(value)
    np.savez_compressed(HERE / "partitioned.npz", **arrays)
    (HERE / "partitioned.json").write_text(json.dumps(meta, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
