"""Writes misc_ops_tf.json: TF 2.21's OpDefs and outputs (or errors) of the ops imported
graphs often carry that aioflow added with them: DynamicPartition, DynamicStitch,
ParallelDynamicStitch (partitioned embedding lookups), Roll, InvertPermutation, ListDiff,
LinSpace, Bincount, Acosh/Asinh/Atanh, FakeQuantWithMinMax{Args,Vars,VarsPerChannel}
(quantization-aware graphs), NonMaxSuppression and NonMaxSuppressionV2, Timestamp.
Inputs are NumPy expressions (the test evaluates the same strings); every input is fed
through a placeholder of its shape, so errors come from the kernels.
Run with TF 2.21: /work/peers-venv/bin/python tests/data/make_misc_ops_tf.py"""

import json
from pathlib import Path

import numpy as np
from tf_error_text import error_record

OPS = ["DynamicPartition", "DynamicStitch", "ParallelDynamicStitch", "Roll",
       "InvertPermutation", "ListDiff", "LinSpace", "Bincount", "Acosh", "Asinh", "Atanh",
       "FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars",
       "FakeQuantWithMinMaxVarsPerChannel", "NonMaxSuppression", "NonMaxSuppressionV2",
       "Timestamp"]
BOXES = "np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], " \
        "[0, 10.1, 1, 11.1], [0, 100, 1, 101]], np.float32)"
SCORES = "np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)"
# name: [op, {input: numpy expression}, {attr: value}]
CASES = {
    "partition": ["DynamicPartition", {
        "data": "np.arange(10, dtype=np.float32)",
        "partitions": "np.array([0, 2, 1, 0, 2, 2, 1, 0, 0, 1], np.int32)"},
        {"num_partitions": 4}],
    "partition_2d": ["DynamicPartition", {
        "data": "np.arange(12).reshape(2, 3, 2)",
        "partitions": "np.array([[1, 0, 1], [0, 0, 1]], np.int32)"}, {"num_partitions": 2}],
    "partition_bad": ["DynamicPartition", {"data": "np.arange(4, dtype=np.float32)",
                                           "partitions": "np.array([0, 3, 1, 0], np.int32)"},
                      {"num_partitions": 2}],
    "partition_shape": ["DynamicPartition", {"data": "np.arange(4, dtype=np.float32)",
                                             "partitions": "np.array([0, 1, 1], np.int32)"},
                        {"num_partitions": 2}],
    "stitch": ["DynamicStitch", {"indices": ["np.array([6, 4, 1], np.int32)",
                                             "np.array([[2, 5], [0, 3]], np.int32)"],
                                 "data": [
                                     "np.array([[61, 62], [41, 42], [11, 12]], np.float32)",
                                     "np.array([[[21, 22], [51, 52]], [[1, 2], [31, 32]]], "
                                     "np.float32)"]},
              {}],
    "stitch_overlap": ["DynamicStitch", {"indices": ["np.array([0, 1], np.int32)",
                                                     "np.array([1, 2], np.int32)"],
                                         "data": ["np.array([1.0, 2.0], np.float32)",
                                                  "np.array([3.0, 4.0], np.float32)"]}, {}],
    "stitch_gap": ["DynamicStitch", {"indices": ["np.array([0, 3], np.int32)"],
                                     "data": ["np.array([1, 2], np.int64)"]}, {}],
    "stitch_negative": ["DynamicStitch", {"indices": ["np.array([0, -1], np.int32)"],
                                          "data": ["np.array([1, 2], np.int64)"]}, {}],
    "stitch_shape": ["DynamicStitch", {"indices": ["np.array([0, 1], np.int32)"],
                                       "data": ["np.array([1, 2, 3], np.int64)"]}, {}],
    "pstitch": ["ParallelDynamicStitch", {"indices": ["np.array([2, 0], np.int32)",
                                                      "np.array([1], np.int32)"],
                                          "data": ["np.array([5, 6], np.int32)",
                                                   "np.array([7], np.int32)"]}, {}],
    "roll": ["Roll", {"input": "np.arange(12).reshape(3, 4)",
                      "shift": "np.array([1, -5], np.int32)",
                      "axis": "np.array([0, 1], np.int32)"}, {}],
    "roll_same_axis": ["Roll", {"input": "np.arange(5, dtype=np.float32)",
                                "shift": "np.array([2, 1], np.int64)",
                                "axis": "np.array([0, -1], np.int64)"}, {}],
    "roll_bad_axis": ["Roll", {"input": "np.arange(5, dtype=np.float32)",
                               "shift": "np.int32(1)", "axis": "np.int32(2)"}, {}],
    "invert": ["InvertPermutation", {"x": "np.array([3, 4, 0, 2, 1], np.int32)"}, {}],
    "invert_bad": ["InvertPermutation", {"x": "np.array([0, 0, 1], np.int64)"}, {}],
    "invert_range": ["InvertPermutation", {"x": "np.array([0, 5, 1], np.int32)"}, {}],
    "listdiff": ["ListDiff", {"x": "np.array([1, 2, 3, 4, 5, 6, 2], np.int32)",
                              "y": "np.array([1, 3, 5], np.int32)"}, {"out_idx": "int64"}],
    "listdiff_str": ["ListDiff", {"x": "np.array([b'a', b'b', b'c'])",
                                  "y": "np.array([b'b'])"}, {}],
    "linspace": ["LinSpace", {"start": "np.float32(1)", "stop": "np.float32(4)",
                              "num": "np.int32(7)"}, {}],
    "linspace_one": ["LinSpace", {"start": "np.float64(2.5)", "stop": "np.float64(9)",
                                  "num": "np.int64(1)"}, {}],
    "linspace_zero": ["LinSpace", {"start": "np.float32(1)", "stop": "np.float32(4)",
                                   "num": "np.int32(0)"}, {}],
    "bincount": ["Bincount", {"arr": "np.array([1, 1, 3, 0, 7, 3], np.int32)",
                              "size": "np.int32(5)", "weights": "np.array([], np.float32)"}, {}],
    "bincount_weights": ["Bincount", {"arr": "np.array([1, 1, 3, 0], np.int32)",
                                      "size": "np.int32(4)",
                                      "weights": "np.array([0.5, 1, 2, 4], np.float64)"}, {}],
    "bincount_negative": ["Bincount", {"arr": "np.array([1, -1], np.int32)",
                                       "size": "np.int32(4)",
                                       "weights": "np.array([], np.int32)"}, {}],
    "acosh": ["Acosh", {"x": "np.array([1, 1.5, 10, 0.5, np.inf], np.float32)"}, {}],
    "asinh": ["Asinh", {"x": "np.array([-2, 0, 0.5, 1e10], np.float64)"}, {}],
    "atanh": ["Atanh", {"x": "np.array([-0.5, 0, 0.99, 1, 2], np.float32)"}, {}],
    "fq_args": ["FakeQuantWithMinMaxArgs", {"inputs": "np.linspace(-8, 8, 33).astype(np.float32)"},
                {"min": -6.0, "max": 6.0}],
    "fq_args_narrow": ["FakeQuantWithMinMaxArgs",
                       {"inputs": "np.linspace(-1, 2, 31).astype(np.float32)"},
                       {"min": -0.3, "max": 1.7, "num_bits": 4, "narrow_range": True}],
    "fq_args_bad": ["FakeQuantWithMinMaxArgs", {"inputs": "np.zeros(2, np.float32)"},
                    {"min": 1.0, "max": -1.0}],
    "fq_vars": ["FakeQuantWithMinMaxVars", {"inputs": "np.linspace(-2, 3, 21).astype(np.float32)",
                                            "min": "np.float32(-1.1)", "max": "np.float32(2.3)"},
                {"num_bits": 6}],
    "fq_vars_zero_span": ["FakeQuantWithMinMaxVars",
                          {"inputs": "np.array([-1, 0, 1], np.float32)",
                           "min": "np.float32(0.5)", "max": "np.float32(0.5)"}, {}],
    "fq_per_channel": ["FakeQuantWithMinMaxVarsPerChannel",
                       {"inputs": "np.linspace(-3, 3, 24).astype(np.float32).reshape(2, 4, 3)",
                        "min": "np.array([-1, -2, 0.25], np.float32)",
                        "max": "np.array([1, 0.5, 2], np.float32)"}, {"narrow_range": True}],
    "fq_per_channel_bad": ["FakeQuantWithMinMaxVarsPerChannel",
                           {"inputs": "np.zeros((2, 3), np.float32)",
                            "min": "np.zeros(2, np.float32)", "max": "np.ones(2, np.float32)"},
                           {}],
    "nms_v1": ["NonMaxSuppression", {"boxes": BOXES, "scores": SCORES,
                                     "max_output_size": "np.int32(3)"}, {"iou_threshold": 0.5}],
    "nms_v2": ["NonMaxSuppressionV2", {"boxes": BOXES, "scores": SCORES,
                                       "max_output_size": "np.int32(10)",
                                       "iou_threshold": "np.float32(0.4)"}, {}],
    "nms_v2_bad_iou": ["NonMaxSuppressionV2", {"boxes": BOXES, "scores": SCORES,
                                               "max_output_size": "np.int32(10)",
                                               "iou_threshold": "np.float32(1.5)"}, {}],
}


def as_json(value):
    array = np.asarray(value)
    if array.dtype.kind in ("S", "O"):
        data = [v.decode("latin-1") for v in array.reshape(-1).tolist()]
        dtype = "string"
    else:
        data = [None if isinstance(v, float) and v != v else v
                for v in array.reshape(-1).tolist()]
        dtype = str(array.dtype)
    return {"dtype": dtype, "shape": list(array.shape), "data": data,
            "nan": np.isnan(array).reshape(-1).tolist() if array.dtype.kind == "f" else None}


def main():
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    out = {"opdefs": {n: str(op_def_registry.get(n)) for n in OPS}, "cases": {}}
    for name, (op, inputs, attrs) in CASES.items():
        try:
            with tf.Graph().as_default():
                feeds, kwargs = {}, {}
                for key, expr in inputs.items():
                    exprs = expr if isinstance(expr, list) else [expr]
                    holders = []
                    for e in exprs:
                        value = eval(e)
                        p = v1.placeholder(tf.as_dtype(np.asarray(value).dtype),
                                           np.shape(value))
                        feeds[p] = value
                        holders.append(p)
                    kwargs[key] = holders if isinstance(expr, list) else holders[0]
                attrs_tf = {k: (tf.as_dtype(v) if k == "out_idx" else v)
                            for k, v in attrs.items()}
                result = getattr(tf.raw_ops, op)(**kwargs, **attrs_tf)
                with v1.Session() as sess:
                    got = sess.run(result, feeds)
            got = [as_json(g) for g in got] if isinstance(got, (list, tuple)) else [as_json(got)]
            record = {"outputs": got}
        except Exception as e:  # noqa: BLE001 - the error is the fixture
            record = error_record(e)
        out["cases"][name] = {"op": op, "inputs": inputs, "attrs": attrs, "result": record}
    path = Path(__file__).with_name("misc_ops_tf.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
