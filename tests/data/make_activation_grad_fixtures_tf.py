"""Make tests/data/activation_grad_cases.npz: TF 2.21's ReluGrad and Relu6Grad on
gradients and features holding NaN, infinities, signed zeros and the boundaries 0 and 6,
then random values, in float32, float64, float16 and int32, and TF's
SparseSoftmaxCrossEntropyWithLogits for logits without classes (its message) and with
-inf logits beside the label's
(tests/test_activation_grad_kernels.py replays them on aioflow's NumPy path and, with its
size threshold lowered, on its compiled loop).

TF computes gradients * (features > 0) (Relu6Grad: * (0 < features < 6)), not a select:
a NaN or infinite gradient where the mask is 0 gives NaN, a negative one -0.0.

Run from the project root with TensorFlow's Python (never an aioflow dependency)::

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_activation_grad_fixtures_tf.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

OUT = Path(__file__).resolve().parent / "activation_grad_cases.npz"
SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 6.0, -6.0, 1e-30, -1e-30, 5.999,
           6.001, 2.5, -2.5]


def _pairs(size: int, seed: int):
    """Every (gradient, feature) pair of special values, then random values (a tenth of
    them special) up to `size`."""
    g0, x0 = np.meshgrid(SPECIAL, SPECIAL)
    rng = np.random.default_rng(seed)
    extra = max(0, size - g0.size)
    g = np.concatenate([g0.ravel(), rng.normal(0, 4, extra)])
    x = np.concatenate([x0.ravel(), rng.normal(3, 4, extra)])
    for v in (g, x):
        pick = rng.random(v.size) < 0.1
        pick[:g0.size] = False
        v[pick] = rng.choice(SPECIAL, pick.sum())
    return g, x


def main() -> None:
    arrays = {}
    for size, seed in ((196, 0), (1000, 1)):
        g, x = _pairs(size, seed)
        for name in ("float32", "float64", "float16", "int32"):
            dtype = np.dtype(name)
            if dtype.kind == "i":
                gv = np.nan_to_num(g, posinf=7, neginf=-7).round().astype(dtype)
                xv = np.nan_to_num(x, posinf=7, neginf=-7).round().astype(dtype)
            else:
                gv, xv = g.astype(dtype), x.astype(dtype)
            key = f"{name}_{size}"
            arrays[f"{key}_g"], arrays[f"{key}_x"] = gv, xv
            arrays[f"{key}_ReluGrad"] = tf.raw_ops.ReluGrad(gradients=gv, features=xv).numpy()
            arrays[f"{key}_Relu6Grad"] = tf.raw_ops.Relu6Grad(gradients=gv,
                                                              features=xv).numpy()
    for rows in (0, 2):  # logits without classes: TF's error message
        try:
            tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(
                features=np.zeros((rows, 0), np.float32), labels=np.zeros(rows, np.int64))
            message = ""
        except tf.errors.InvalidArgumentError as e:
            message = e.message.split("}} ")[-1].split(" [Op:")[0]
        arrays[f"sparse_xent_{rows}x0_message"] = np.array(message)
    # -inf logits beside the label's: the loss stays finite
    f = np.array([[1.0, -np.inf, 2.0], [0.5, 0.25, -np.inf], [3.0, 1.0, -2.0]], np.float32)
    labels = np.array([2, 0, 1], np.int64)
    loss, backprop = tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=f, labels=labels)
    arrays.update(sparse_xent_inf_features=f, sparse_xent_inf_labels=labels,
                  sparse_xent_inf_loss=loss.numpy(), sparse_xent_inf_backprop=backprop.numpy())
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({len(arrays)} arrays)")


if __name__ == "__main__":
    main()
