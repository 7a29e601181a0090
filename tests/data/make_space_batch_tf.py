"""Writes space_batch_tf.json: TF 2.21's OpDefs of SpaceToBatchND, BatchToSpaceND,
SpaceToBatch, BatchToSpace, SpaceToDepth and DepthToSpace, their outputs on small
tensors (the test rebuilds the inputs: np.arange of the given shape and dtype), and
their errors.
Run with TF 2.21: /work/peers-venv/bin/python tests/data/make_space_batch_tf.py"""

import json
from pathlib import Path

import numpy as np
from tf_error_text import error_record

OPS = ["SpaceToBatchND", "BatchToSpaceND", "SpaceToBatch", "BatchToSpace", "SpaceToDepth",
       "DepthToSpace"]
# (op, input shape, dtype, attrs/inputs); inputs are np.arange(prod(shape)) reshaped.
CASES = {
    "s2b_2d": ["SpaceToBatchND", [2, 4, 6, 3], "float32",
               {"block_shape": [2, 3], "paddings": [[0, 0], [0, 0]]}],
    "s2b_padded": ["SpaceToBatchND", [1, 3, 5, 2], "int32",
                   {"block_shape": [2, 2], "paddings": [[1, 0], [2, 1]]}],
    "s2b_1d_rest": ["SpaceToBatchND", [2, 6, 2, 2], "float64",
                    {"block_shape": [3], "paddings": [[0, 0]]}],
    "s2b_int64_args": ["SpaceToBatchND", [1, 4, 4, 1], "float32",
                       {"block_shape": np.array([2, 2], np.int64),
                        "paddings": np.array([[0, 0], [0, 0]], np.int64)}],
    "b2s_2d": ["BatchToSpaceND", [6, 2, 2, 3], "float32",
               {"block_shape": [2, 3], "crops": [[0, 0], [0, 0]]}],
    "b2s_cropped": ["BatchToSpaceND", [4, 2, 3, 2], "int64",
                    {"block_shape": [2, 2], "crops": [[1, 0], [2, 1]]}],
    "s2b_legacy": ["SpaceToBatch", [1, 4, 4, 2], "float32",
                   {"block_size": 2, "paddings": [[0, 0], [0, 0]]}],
    "b2s_legacy": ["BatchToSpace", [4, 2, 2, 1], "float32",
                   {"block_size": 2, "crops": [[0, 0], [0, 1]]}],
    "s2d": ["SpaceToDepth", [2, 4, 6, 3], "float32", {"block_size": 2}],
    "d2s": ["DepthToSpace", [2, 2, 3, 12], "int32", {"block_size": 2}],
    "d2s_3": ["DepthToSpace", [1, 1, 2, 18], "float32", {"block_size": 3}],
    "s2b_not_divisible": ["SpaceToBatchND", [1, 5, 4, 1], "float32",
                          {"block_shape": [2, 2], "paddings": [[0, 0], [0, 0]]}],
    "s2b_negative_pad": ["SpaceToBatchND", [1, 4, 4, 1], "float32",
                         {"block_shape": [2, 2], "paddings": [[0, -2], [0, 0]]}],
    "s2b_bad_block": ["SpaceToBatchND", [1, 4, 4, 1], "float32",
                      {"block_shape": [0, 2], "paddings": [[0, 0], [0, 0]]}],
    "s2b_rank": ["SpaceToBatchND", [4, 4], "float32",
                 {"block_shape": [2, 2], "paddings": [[0, 0], [0, 0]]}],
    "b2s_not_divisible": ["BatchToSpaceND", [3, 2, 2, 1], "float32",
                          {"block_shape": [2, 2], "crops": [[0, 0], [0, 0]]}],
    "b2s_crop_too_big": ["BatchToSpaceND", [4, 2, 2, 1], "float32",
                         {"block_shape": [2, 2], "crops": [[3, 2], [0, 0]]}],
    "s2d_not_divisible": ["SpaceToDepth", [1, 3, 4, 1], "float32", {"block_size": 2}],
    "d2s_not_divisible": ["DepthToSpace", [1, 2, 2, 6], "float32", {"block_size": 2}],
    "s2d_rank": ["SpaceToDepth", [3, 4, 1], "float32", {"block_size": 2}],
}


def as_args(spec):
    """Tensor inputs as placeholders fed at run time (so errors come from the kernels)."""
    return {k: np.asarray(v, np.int32 if not isinstance(v, np.ndarray) else v.dtype)
            if k != "block_size" else v for k, v in spec.items()}


def main():
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    out = {"opdefs": {n: str(op_def_registry.get(n)) for n in OPS}, "cases": {}}
    for name, (op, shape, dtype, spec) in CASES.items():
        value = np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)
        args = as_args(spec)
        try:
            with tf.Graph().as_default():
                x = v1.placeholder(dtype, None)
                feeds = {x: value}
                kwargs = {}
                for key, arg in args.items():
                    if key == "block_size":
                        kwargs[key] = arg
                        continue
                    p = v1.placeholder(arg.dtype, arg.shape)
                    feeds[p] = arg
                    kwargs[key] = p
                y = getattr(tf.raw_ops, op)(input=x, **kwargs)
                with v1.Session() as sess:
                    got = sess.run(y, feeds)
            result = {"shape": list(got.shape), "data": got.reshape(-1).tolist(),
                      "dtype": str(got.dtype)}
        except Exception as e:  # noqa: BLE001 - the error is the fixture
            result = error_record(e)
        out["cases"][name] = {"op": op, "shape": shape, "dtype": dtype,
                              "args": {k: np.asarray(v).tolist() for k, v in spec.items()},
                              "arg_dtypes": {k: str(np.asarray(v).dtype) for k, v in
                                             args.items()},
                              "result": result}
    path = Path(__file__).with_name("space_batch_tf.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
