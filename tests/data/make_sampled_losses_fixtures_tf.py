"""Writes the candidate sampler and sampled loss fixtures (tests/data/sampled_losses.npz,
sampled_losses_op_defs.pb): TF 2.21's OpDefs of UniformCandidateSampler,
LogUniformCandidateSampler, AllCandidateSampler and ComputeAccidentalHits; the samplers'
outputs over three runs under several seeds (unique or not, one or two true classes);
and tf.nn.nce_loss / tf.nn.sampled_softmax_loss programs (GraphDefs, and losses and
weights over three GradientDescent steps).

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_sampled_losses_fixtures_tf.py

Each program takes the TF-1-like module (tf.compat.v1 here, aioflow.compat.v1 in
tests/test_sampled_losses.py) and returns (fetches by name, train op or None).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RUNS = 3
R = np.random.default_rng(25)
CLASSES1 = np.array([[3], [0], [17], [3], [9]], np.int64)
CLASSES2 = np.array([[1, 4], [0, 2], [7, 5]], np.int64)
W = R.normal(size=(20, 6)).astype(np.float32) * 0.3
B = R.normal(size=(20,)).astype(np.float32) * 0.1
X = R.normal(size=(5, 6)).astype(np.float32)
X2 = R.normal(size=(3, 6)).astype(np.float32)
OPS = ["UniformCandidateSampler", "LogUniformCandidateSampler", "AllCandidateSampler",
       "ComputeAccidentalHits"]


def _sampler(kind, classes, num_true, num_sampled, unique, range_max, seed):
    def program(tf):
        tf.set_random_seed(seed[0])
        t = tf.constant(classes, name="true_classes")
        fn = getattr(tf.random, kind)
        s, tc, sc = fn(t, num_true, num_sampled, unique, range_max, seed=seed[1])
        hits = tf.nn.compute_accidental_hits(t, s, num_true)
        return {"sampled": s, "true_count": tc, "sampled_count": sc, "hit_rows": hits[0],
                "hit_ids": hits[1], "hit_weights": hits[2]}, None
    return program


def all_sampler(tf):
    t = tf.constant(CLASSES2, name="true_classes")
    s, tc, sc = tf.random.all_candidate_sampler(t, 2, 8, True)
    return {"sampled": s, "true_count": tc, "sampled_count": sc}, None


def _loss(which, num_true, remove_hits, num_sampled, dtype_labels):
    def program(tf):
        tf.set_random_seed(11)
        w = tf.get_variable("w", initializer=tf.constant(W))
        b = tf.get_variable("b", initializer=tf.constant(B))
        x = tf.constant(X if num_true == 1 else X2, name="x")
        labels = tf.constant((CLASSES1 if num_true == 1 else CLASSES2).astype(dtype_labels),
                             name="labels")
        if which == "nce":
            per = tf.nn.nce_loss(w, b, labels, x, num_sampled, 20, num_true=num_true,
                                 remove_accidental_hits=remove_hits)
        else:
            per = tf.nn.sampled_softmax_loss(w, b, labels, x, num_sampled, 20,
                                             num_true=num_true,
                                             remove_accidental_hits=remove_hits, seed=3)
        loss = tf.reduce_mean(per)
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        return {"per_example": per, "loss": loss, "w": w, "b": b}, train
    return program


PROGRAMS = {
    "uniform_unique": _sampler("uniform_candidate_sampler", CLASSES1, 1, 6, True, 20, (4, 9)),
    "uniform_repeat": _sampler("uniform_candidate_sampler", CLASSES2, 2, 7, False, 10,
                               (4, None)),
    "log_uniform_unique": _sampler("log_uniform_candidate_sampler", CLASSES1, 1, 10, True,
                                   20, (1, 2)),
    "log_uniform_repeat": _sampler("log_uniform_candidate_sampler", CLASSES2, 2, 5, False,
                                   1000, (8, 5)),
    "log_uniform_big": _sampler("log_uniform_candidate_sampler", CLASSES1, 1, 64, True,
                                100000, (2, 7)),
    "all": all_sampler,
    "nce": _loss("nce", 1, False, 6, np.int64),
    "nce_hits_two_true": _loss("nce", 2, True, 5, np.int32),
    "sampled_softmax": _loss("softmax", 1, True, 6, np.int64),
    "sampled_softmax_two_true": _loss("softmax", 2, False, 5, np.int64),
}


def main() -> None:
    import tensorflow as tf
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.framework import op_def_registry

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    op_list = op_def_pb2.OpList()
    for name in OPS:
        op_list.op.add().CopyFrom(op_def_registry.get(name))
    (HERE / "sampled_losses_op_defs.pb").write_bytes(op_list.SerializeToString(
        deterministic=True))
    arrays = {}
    for name, program in PROGRAMS.items():
        g = tf.Graph()
        with g.as_default():
            fetches, train = program(v1)
            graph_def = g.as_graph_def()
            with v1.Session(graph=g) as sess:
                sess.run(v1.global_variables_initializer())
                for run in range(RUNS):
                    values = sess.run(fetches if train is None else (fetches, train))
                    values = values if train is None else values[0]
                    for key, value in values.items():
                        arrays[f"{name}/{run}/{key}"] = value
        arrays[f"{name}/graph_def"] = np.frombuffer(
            graph_def.SerializeToString(deterministic=True), np.uint8)
    np.savez_compressed(HERE / "sampled_losses.npz", **arrays)


if __name__ == "__main__":
    main()
