"""Make tests/data/box_pool_cases.npz: TF 2.21's stride-1 AvgPool3D and AvgPool (oneDNN
on, TF's defaults) at the windows and channel counts aioflow's separable box filter
takes (aioflow/kernels/onednn/box_pool.py) and at odd sizes, SAME and VALID, a window
larger than the input; tests/test_box_pool.py replays them on the filter and on the
AvgPool3D kernel.

Run from the project root with TensorFlow's Python (never an aioflow dependency)::

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_box_pool_fixtures_tf.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

OUT = Path(__file__).resolve().parent / "box_pool_cases.npz"
#: (name, input shape, window, padding): 3-D windows (AvgPool3D) and 2-D (AvgPool).
CASES = [
    ("same3x3x3", (1, 3, 5, 13, 64), (3, 3, 3), "SAME"),
    ("valid3x3x3", (1, 3, 4, 13, 64), (3, 3, 3), "VALID"),
    ("same4x2x5", (1, 3, 7, 6, 72), (4, 2, 5), "SAME"),
    ("larger_same", (1, 2, 3, 2, 64), (5, 5, 5), "SAME"),
    ("same2d3x3", (2, 7, 9, 24), (3, 3), "SAME"),
    ("same2d3x3_c64", (2, 5, 13, 64), (3, 3), "SAME"),
    ("valid2d2x4", (1, 6, 5, 8), (2, 4), "VALID"),
    ("larger2d_same", (2, 2, 3, 8), (7, 7), "SAME"),
]


def main() -> None:
    rng = np.random.default_rng(29)
    arrays = {}
    for name, shape, window, padding in CASES:
        x = rng.standard_normal(shape).astype(np.float32)
        ones = [1] * (len(window) + 2)
        ksize = [1, *window, 1]
        op = tf.raw_ops.AvgPool3D if len(window) == 3 else tf.raw_ops.AvgPool
        arg = "input" if len(window) == 3 else "value"
        y = op(**{arg: tf.constant(x)}, ksize=ksize, strides=ones, padding=padding)
        arrays[f"{name}/x"] = x
        arrays[f"{name}/y"] = y.numpy()
        arrays[f"{name}/window"] = np.array(window, np.int32)
        arrays[f"{name}/padding"] = np.array(padding)
    np.savez_compressed(OUT, **arrays)


if __name__ == "__main__":
    main()
