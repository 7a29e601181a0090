"""Writes tests/data/metrics.json: TF 2.21's tf.compat.v1.metrics (accuracy, mean, the
condition counts, precision, recall, the errors, auc ROC/PR with each summation method,
mean_iou, the counts, precision and recall at thresholds, mean_relative_error,
mean_cosine_distance, percentage_below, mean_tensor, mean_per_class_accuracy,
sensitivity_at_specificity, specificity_at_sensitivity, and the metrics at k: precision
and recall at k and at top k, with class_id, weights and sparse labels, average precision
at k), each updated over three batches (weights among them): the values after each
update, the final value, and the metric's local variables; and each metric's GraphDef,
built alone (tests/data/metrics_graphs.npz).

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_metrics_fixtures_tf.py

`program(tf)` is shared with tests/test_metrics.py (tf.compat.v1 here, aioflow.compat.v1
there).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
R = np.random.default_rng(11)
BATCHES = [(R.integers(0, 2, 8).astype(np.int64), R.uniform(size=8).astype(np.float32),
            R.integers(0, 3, 8).astype(np.int64), R.integers(0, 3, 8).astype(np.int64),
            R.uniform(0, 2, size=8).astype(np.float32)) for _ in range(3)]


R_K = np.random.default_rng(12)  # the metrics at k: scores of 4 classes, class-id labels
BATCHES_K = [(R_K.normal(size=(8, 4)).astype(np.float32),
              R_K.integers(0, 4, 8).astype(np.int64),
              R_K.integers(0, 5, (8, 2)).astype(np.int64)) for _ in range(3)]
SPARSE_LABELS = ([[0, 0], [1, 0], [1, 1], [3, 0], [4, 0], [6, 0], [6, 1], [7, 0]],
                 [1, 0, 3, 2, 2, 0, 1, 3], [8, 2])


def _sparse_labels(tf):
    indices, values, shape = SPARSE_LABELS
    return tf.SparseTensor(indices, tf.constant(values, tf.int64), shape)


def _inputs(tf):
    labels = tf.placeholder(tf.int64, [None], name="labels")
    scores = tf.placeholder(tf.float32, [None], name="scores")
    classes = tf.placeholder(tf.int64, [None], name="classes")
    predicted = tf.placeholder(tf.int64, [None], name="predicted")
    weights = tf.placeholder(tf.float32, [None], name="weights")
    logits = tf.placeholder(tf.float32, [None, 4], name="logits")
    class_ids = tf.placeholder(tf.int64, [None], name="class_ids")
    multi = tf.placeholder(tf.int64, [None, 2], name="multi")
    return labels, scores, classes, predicted, weights, logits, class_ids, multi


def _metrics(tf, labels, scores, classes, predicted, weights, logits, class_ids, multi):
    """Each metric's builder (in the order program() builds them)."""
    def binary():
        return tf.cast(scores > 0.5, tf.int64)

    def flabels():
        return tf.cast(labels, tf.float32)

    m = tf.metrics if tf is not None else None
    return {
        "accuracy": lambda: m.accuracy(classes, predicted),
        "accuracy_w": lambda: m.accuracy(classes, predicted, weights=weights,
                                         name="weighted_accuracy"),
        "mean": lambda: m.mean(scores),
        "mean_w": lambda: m.mean(scores, weights=weights),
        "tp": lambda: m.true_positives(labels, binary()),
        "fp": lambda: m.false_positives(labels, binary()),
        "fn": lambda: m.false_negatives(labels, binary()),
        "tn": lambda: m.true_negatives(labels, binary(), weights=weights),
        "precision": lambda: m.precision(labels, binary()),
        "recall": lambda: m.recall(labels, binary(), weights=weights),
        "mae": lambda: m.mean_absolute_error(flabels(), scores),
        "mse": lambda: m.mean_squared_error(flabels(), scores),
        "rmse": lambda: m.root_mean_squared_error(flabels(), scores),
        "auc_roc": lambda: m.auc(labels, scores, num_thresholds=50),
        "auc_pr": lambda: m.auc(labels, scores, curve="PR", num_thresholds=50,
                                summation_method="majoring"),
        "auc_minoring": lambda: m.auc(labels, scores, weights=weights,
                                      summation_method="minoring", thresholds=[0.3, 0.6]),
        "auc_pr_careful": lambda: m.auc(labels, scores, weights=weights, curve="PR",
                                        num_thresholds=20,
                                        summation_method="careful_interpolation"),
        "auc_roc_careful": lambda: m.auc(labels, scores, num_thresholds=10,
                                         summation_method="careful_interpolation"),
        "mean_iou": lambda: m.mean_iou(classes, predicted, 3),
        "tp_at": lambda: m.true_positives_at_thresholds(labels, scores, [0.2, 0.5, 0.8]),
        "fp_at": lambda: m.false_positives_at_thresholds(labels, scores, [0.2, 0.5],
                                                         weights=weights),
        "fn_at": lambda: m.false_negatives_at_thresholds(labels, scores, [0.4]),
        "tn_at": lambda: m.true_negatives_at_thresholds(labels, scores, [0.3, 0.9]),
        "precision_at": lambda: m.precision_at_thresholds(labels, scores, [0.25, 0.5, 0.75]),
        "recall_at": lambda: m.recall_at_thresholds(labels, scores, [0.25, 0.5],
                                                    weights=weights),
        "relative_error": lambda: m.mean_relative_error(flabels(), scores,
                                                        normalizer=weights),
        "cosine": lambda: m.mean_cosine_distance(
            tf.reshape(tf.nn.l2_normalize(tf.reshape(scores, [-1, 2]), 1), [-1, 2]),
            tf.nn.l2_normalize(tf.reshape(weights, [-1, 2]), 1), dim=1),
        "below": lambda: m.percentage_below(scores, 0.4),
        "below_w": lambda: m.percentage_below(scores, 0.6, weights=weights),
        "mean_tensor": lambda: m.mean_tensor(tf.reshape(scores, [2, 4])),
        "mean_tensor_w": lambda: m.mean_tensor(tf.reshape(scores, [2, 4]),
                                               weights=tf.reshape(weights, [2, 4])),
        "per_class": lambda: m.mean_per_class_accuracy(classes, predicted, 3),
        "per_class_w": lambda: m.mean_per_class_accuracy(classes, predicted, 3,
                                                         weights=weights),
        "sens_at_spec": lambda: m.sensitivity_at_specificity(labels, scores, 0.7,
                                                             num_thresholds=20),
        "spec_at_sens": lambda: m.specificity_at_sensitivity(labels, scores, 0.6,
                                                             weights=weights,
                                                             num_thresholds=30),
        "precision_at_2": lambda: m.precision_at_k(class_ids, logits, 2),
        "precision_at_2_class1": lambda: m.precision_at_k(class_ids, logits, 2, class_id=1),
        "sparse_precision_at_3": lambda: m.sparse_precision_at_k(multi, logits, 3,
                                                                 weights=weights),
        "precision_at_top_k": lambda: m.precision_at_top_k(
            class_ids, tf.nn.top_k(logits, 2)[1], k=2),
        "recall_at_2": lambda: m.recall_at_k(class_ids, logits, 2),
        "recall_at_1_class2": lambda: m.recall_at_k(multi, logits, 1, class_id=2),
        "recall_at_top_k": lambda: m.recall_at_top_k(multi, tf.nn.top_k(logits, 3)[1],
                                                     weights=weights),
        "recall_sparse_labels": lambda: m.recall_at_k(_sparse_labels(tf),
                                                      logits, 2),
        "recall_sparse_class": lambda: m.recall_at_k(_sparse_labels(tf), logits, 2,
                                                     class_id=3),
        "average_precision_at_3": lambda: m.average_precision_at_k(multi, logits, 3),
        "sparse_average_precision_at_2": lambda: m.sparse_average_precision_at_k(
            class_ids, logits, 2, weights=weights),
        "average_precision_sparse": lambda: m.average_precision_at_k(
            _sparse_labels(tf), logits, 2),
    }


METRICS = list(_metrics(None, *[None] * 8))


def one_metric(tf, key):
    """The graph of one metric alone (for node-for-node comparison)."""
    return _metrics(tf, *_inputs(tf))[key]()


def _feeds():
    return [{"labels:0": b[0], "scores:0": b[1], "classes:0": b[2], "predicted:0": b[3],
             "weights:0": b[4], "logits:0": k[0], "class_ids:0": k[1], "multi:0": k[2]}
            for b, k in zip(BATCHES, BATCHES_K, strict=True)]


def program(tf):
    builders = _metrics(tf, *_inputs(tf))
    return {key: build() for key, build in builders.items()}, _feeds()


def run(tf, sess, graph, m, feeds) -> dict:
    sess.run(tf.local_variables_initializer())
    out = {}
    for k, feed in enumerate(feeds):
        feed = {graph.get_tensor_by_name(n): v for n, v in feed.items()}
        updates = sess.run({key: update for key, (_, update) in m.items()}, feed)
        for key, value in updates.items():
            out[f"{key}/update{k}"] = np.asarray(value, np.float64).tolist()
    for key, value in sess.run({key: v for key, (v, _) in m.items()}).items():
        out[f"{key}/value"] = np.asarray(value, np.float64).tolist()
    return out


def main() -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    g = tf.Graph()
    with g.as_default():
        m, feeds = program(v1)
        local = [v.op.name for v in v1.local_variables()]
        with v1.Session(graph=g) as sess:
            values = run(v1, sess, g, m, feeds)
    (HERE / "metrics.json").write_text(json.dumps({"values": values, "local_variables": local},
                                                  indent=1, sort_keys=True))
    graphs = {}
    for key in METRICS:
        g = tf.Graph()
        with g.as_default():
            one_metric(v1, key)
        graphs[key] = np.frombuffer(g.as_graph_def().SerializeToString(deterministic=True),
                                    np.uint8)
    np.savez_compressed(HERE / "metrics_graphs.npz", **graphs)


if __name__ == "__main__":
    main()
