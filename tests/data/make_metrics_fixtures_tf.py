"""Writes tests/data/metrics.json: TF 2.21's tf.compat.v1.metrics (accuracy, mean, the
condition counts, precision, recall, the errors, auc ROC/PR with each summation method,
mean_iou, the counts, precision and recall at thresholds, mean_relative_error,
mean_cosine_distance, percentage_below, mean_tensor, mean_per_class_accuracy,
sensitivity_at_specificity, specificity_at_sensitivity), each updated over three
batches (weights among them): the values after each update, the final value, and the
metric's local variables.

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


def program(tf):
    labels = tf.placeholder(tf.int64, [None], name="labels")
    scores = tf.placeholder(tf.float32, [None], name="scores")
    classes = tf.placeholder(tf.int64, [None], name="classes")
    predicted = tf.placeholder(tf.int64, [None], name="predicted")
    weights = tf.placeholder(tf.float32, [None], name="weights")
    binary = tf.cast(scores > 0.5, tf.int64)
    m = {
        "accuracy": tf.metrics.accuracy(classes, predicted),
        "accuracy_w": tf.metrics.accuracy(classes, predicted, weights=weights,
                                          name="weighted_accuracy"),
        "mean": tf.metrics.mean(scores),
        "mean_w": tf.metrics.mean(scores, weights=weights),
        "tp": tf.metrics.true_positives(labels, binary),
        "fp": tf.metrics.false_positives(labels, binary),
        "fn": tf.metrics.false_negatives(labels, binary),
        "tn": tf.metrics.true_negatives(labels, binary, weights=weights),
        "precision": tf.metrics.precision(labels, binary),
        "recall": tf.metrics.recall(labels, binary, weights=weights),
        "mae": tf.metrics.mean_absolute_error(tf.cast(labels, tf.float32), scores),
        "mse": tf.metrics.mean_squared_error(tf.cast(labels, tf.float32), scores),
        "rmse": tf.metrics.root_mean_squared_error(tf.cast(labels, tf.float32), scores),
        "auc_roc": tf.metrics.auc(labels, scores, num_thresholds=50),
        "auc_pr": tf.metrics.auc(labels, scores, curve="PR", num_thresholds=50,
                                 summation_method="majoring"),
        "auc_minoring": tf.metrics.auc(labels, scores, weights=weights,
                                       summation_method="minoring", thresholds=[0.3, 0.6]),
        "mean_iou": tf.metrics.mean_iou(classes, predicted, 3),
        "tp_at": tf.metrics.true_positives_at_thresholds(labels, scores, [0.2, 0.5, 0.8]),
        "fp_at": tf.metrics.false_positives_at_thresholds(labels, scores, [0.2, 0.5],
                                                          weights=weights),
        "fn_at": tf.metrics.false_negatives_at_thresholds(labels, scores, [0.4]),
        "tn_at": tf.metrics.true_negatives_at_thresholds(labels, scores, [0.3, 0.9]),
        "precision_at": tf.metrics.precision_at_thresholds(labels, scores, [0.25, 0.5, 0.75]),
        "recall_at": tf.metrics.recall_at_thresholds(labels, scores, [0.25, 0.5],
                                                     weights=weights),
        "relative_error": tf.metrics.mean_relative_error(
            tf.cast(labels, tf.float32), scores, normalizer=weights),
        "cosine": tf.metrics.mean_cosine_distance(
            tf.reshape(tf.nn.l2_normalize(tf.reshape(scores, [-1, 2]), 1), [-1, 2]),
            tf.nn.l2_normalize(tf.reshape(weights, [-1, 2]), 1), dim=1),
        "below": tf.metrics.percentage_below(scores, 0.4),
        "below_w": tf.metrics.percentage_below(scores, 0.6, weights=weights),
        "mean_tensor": tf.metrics.mean_tensor(tf.reshape(scores, [2, 4])),
        "mean_tensor_w": tf.metrics.mean_tensor(tf.reshape(scores, [2, 4]),
                                                weights=tf.reshape(weights, [2, 4])),
        "per_class": tf.metrics.mean_per_class_accuracy(classes, predicted, 3),
        "per_class_w": tf.metrics.mean_per_class_accuracy(classes, predicted, 3,
                                                          weights=weights),
        "sens_at_spec": tf.metrics.sensitivity_at_specificity(labels, scores, 0.7,
                                                              num_thresholds=20),
        "spec_at_sens": tf.metrics.specificity_at_sensitivity(labels, scores, 0.6,
                                                              weights=weights,
                                                              num_thresholds=30),
    }
    feeds = [{"labels:0": b[0], "scores:0": b[1], "classes:0": b[2], "predicted:0": b[3],
              "weights:0": b[4]} for b in BATCHES]
    return m, feeds


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


if __name__ == "__main__":
    main()
