"""Writes tests/data/set_diag.json: TF 2.21's answers for the set ops
(DenseToDenseSetOperation, DenseToSparseSetOperation, SparseToSparseSetOperation,
SetSize) and DiagPart on small
inputs, values or (error class, message), for tests/test_set_diag_kernels.py.

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_set_diag_tf.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

DENSE = [[[1, 2, 2, 5], [3, 3, 0, 1]], [[7, 1, 1, 1], [0, 0, 0, 0]]]
DENSE_B = [[[2, 9, 5, 5], [1, 1, 1, 1]], [[1, 8, 7, 6], [4, 0, 3, 0]]]
SPARSE = {"indices": [[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 1, 2]], "values": [5, 9, 3, 0],
          "shape": [2, 2, 3]}
SPARSE_B = {"indices": [[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]], "values": [5, 4, 0, 7],
            "shape": [2, 2, 2]}
CASES = {
    **{f"dense_{op}": ("DenseToDenseSetOperation", {"set1": DENSE, "set2": DENSE_B,
                                                    "set_operation": op})
       for op in ("a-b", "b-a", "intersection", "union")},
    "dense_2d": ("DenseToDenseSetOperation", {"set1": [[4, 1], [2, 2]],
                                              "set2": [[1, 1], [3, 2]],
                                              "set_operation": "a-b"}),
    **{f"sparse_{op}": ("DenseToSparseSetOperation", {"set1": DENSE, **SPARSE,
                                                      "set_operation": op})
       for op in ("a-b", "intersection", "union")},
    **{f"sparse_sparse_{op}": ("SparseToSparseSetOperation", {**SPARSE, "other": SPARSE_B,
                                                               "set_operation": op})
       for op in ("a-b", "intersection", "union")},
    "size": ("SetSize", SPARSE),
    "diag_2d": ("DiagPart", {"input": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]}),
    "diag_4d": ("DiagPart", {"input": [[[[1, 2], [3, 4]], [[5, 6], [7, 8]]],
                                       [[[9, 10], [11, 12]], [[13, 14], [15, 16]]]]}),
    "diag_odd_rank": ("DiagPart", {"input": [[[1.0]]]}),
    "diag_mismatch": ("DiagPart", {"input": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}),
}


def run(tf, op, args):
    raw = getattr(tf.raw_ops, op)
    if op == "DiagPart":
        x = tf.constant(args["input"])
        return [raw(input=x)]
    if op == "SetSize":
        return [raw(set_indices=tf.constant(args["indices"], tf.int64),
                    set_values=tf.constant(args["values"], tf.int64),
                    set_shape=tf.constant(args["shape"], tf.int64))]
    if op == "SparseToSparseSetOperation":
        other = args["other"]
        return raw(set1_indices=tf.constant(args["indices"], tf.int64),
                   set1_values=tf.constant(args["values"], tf.int64),
                   set1_shape=tf.constant(args["shape"], tf.int64),
                   set2_indices=tf.constant(other["indices"], tf.int64),
                   set2_values=tf.constant(other["values"], tf.int64),
                   set2_shape=tf.constant([2, 2, 3], tf.int64),
                   set_operation=args["set_operation"])
    set1 = tf.constant(args["set1"], tf.int64)
    if op == "DenseToDenseSetOperation":
        return raw(set1=set1, set2=tf.constant(args["set2"], tf.int64),
                   set_operation=args["set_operation"])
    return raw(set1=set1, set2_indices=tf.constant(args["indices"], tf.int64),
               set2_values=tf.constant(args["values"], tf.int64),
               set2_shape=tf.constant(args["shape"], tf.int64),
               set_operation=args["set_operation"])


def main() -> None:
    import tensorflow as tf

    out = {}
    for name, (op, args) in CASES.items():
        try:
            out[name] = {"values": [v.numpy().tolist() for v in run(tf, op, args)]}
        except tf.errors.OpError as e:
            message = e.message.split(" [Op:")[0].split("}} ", 1)[-1]
            out[name] = {"error": type(e).__name__, "message": message}
    (HERE / "set_diag.json").write_text(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
