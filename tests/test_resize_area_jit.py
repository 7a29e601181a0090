"""ResizeArea's compiled loops (aioflow/kernels/image/resize_area_jit.py) against TF 2.21's
values (the fixtures of tests/test_kernels_image_scale.py) and against the NumPy path,
bit for bit: odd shapes, up and down, align_corners, non-finite pixels, integer inputs."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_testutil import run_kernel
from test_kernels_image_scale import ARRAYS, CASES, case_ids

from aioflow.kernels.image import resize_area_jit


@pytest.fixture(scope="module")
def compiled():
    if not resize_area_jit.wait_ready(120):
        pytest.skip(f"numba cannot compile the loops: {resize_area_jit._group.last_error!r}")


def _resize(img, size, align_corners=False, compiled_path=True):
    """ResizeArea's output through the compiled loops or NumPy's passes."""
    ready = resize_area_jit.ready
    try:
        if not compiled_path:
            resize_area_jit.ready = lambda: False
        return run_kernel("ResizeArea", [img, np.int32(size)], align_corners=align_corners)[0]
    finally:
        resize_area_jit.ready = ready


def _same_bits(a, b):
    assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("case_id", case_ids("ResizeArea", "ok"))
def test_compiled_matches_tf(compiled, case_id):
    case = CASES[case_id]
    img, size = (ARRAYS[key] for key in case["inputs"])
    got = _resize(img, size, case["attrs"].get("align_corners", False))
    want = ARRAYS[f"out:{case_id}:0"]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape, size, align", [
    ((1, 512, 512, 3), (300, 200), False),  # the benchmark's odd downscale
    ((2, 37, 53, 5), (11, 7), False),
    ((3, 13, 9, 1), (29, 31), False),  # up: taps of one cell
    ((2, 37, 53, 4), (10, 17), True),
    ((1, 1, 40, 2), (3, 7), True),  # a 1-pixel axis takes in / out even aligned
    ((1, 17, 19, 3), (17, 19), False),  # same size
    ((2, 8, 8, 3), (1, 1), False),  # one output pixel: every cell a tap
    ((1, 45, 38, 8), (13, 17), False),  # channels four at a time
    ((2, 20, 24, 12), (7, 40), True),
])
def test_compiled_matches_numpy(compiled, shape, size, align):
    rng = np.random.default_rng(sum(shape))
    img = rng.uniform(-300, 300, shape).astype(np.float32)
    _same_bits(_resize(img, size, align), _resize(img, size, align, compiled_path=False))


def test_compiled_matches_numpy_on_non_finite_pixels(compiled):
    rng = np.random.default_rng(7)
    img = rng.uniform(0, 255, (2, 23, 29, 3)).astype(np.float32)
    img[0, 3, 4, 1] = np.inf
    img[1, 10, 0, 0] = -np.inf
    img[1, 20, 28, 2] = np.nan
    img[0, 0, 0, 0] = -0.0
    for size in ((7, 9), (5, 30), (40, 11)):
        _same_bits(_resize(img, size), _resize(img, size, compiled_path=False))


def test_compiled_takes_integer_and_strided_inputs(compiled):
    img = np.arange(2 * 21 * 34 * 3, dtype=np.int32).reshape(2, 21, 34, 3) % 251
    _same_bits(_resize(img, (8, 13)), _resize(img, (8, 13), compiled_path=False))
    strided = np.random.default_rng(1).uniform(0, 9, (2, 40, 30, 6)).astype(np.float32)
    view = strided[:, ::2, 1::2, :3]
    _same_bits(_resize(view, (9, 4)), _resize(view, (9, 4), compiled_path=False))
