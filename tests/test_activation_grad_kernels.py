"""ReluGrad and Relu6Grad against TF 2.21 (tests/data/activation_grad_cases.npz, made by
tests/data/make_activation_grad_fixtures_tf.py), bit for bit: TF's gradients * mask, so a
NaN or infinite gradient where the feature is not in range gives NaN and a negative one
-0.0; on the NumPy path, on the compiled loop (aioflow/kernels/nn/activation_grad_jit.py,
its size threshold lowered), with the work split among threads, and with the NumPy path
until the loop is compiled. SparseSoftmaxCrossEntropyWithLogits: without classes TF's
InvalidArgument even for an empty batch; with -inf logits beside the label's, TF's
finite loss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from kernel_testutil import create, run1, run_kernel

from aioflow.framework import errors
from aioflow.kernels import element_threads
from aioflow.kernels.nn import activation_grad_jit, activation_grad_kernels, pass_placement

_CASES = np.load(Path(__file__).resolve().parent / "data" / "activation_grad_cases.npz")
_KEYS = sorted({k.rsplit("_", 1)[0] for k in _CASES.files if k.endswith("_g")})


@pytest.fixture(params=["numpy", "jit"])
def path(request, monkeypatch):
    if request.param == "jit":
        if not activation_grad_jit.wait_ready(120):
            pytest.skip("numba (the jit extra) is not installed")
        monkeypatch.setattr(activation_grad_kernels, "COMPILED_FROM", 1)
    return request.param


def _assert_bits_equal(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        fine = ~np.isnan(want)
        np.testing.assert_array_equal(got[fine], want[fine])
        np.testing.assert_array_equal(np.signbit(got[fine]), np.signbit(want[fine]))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["ReluGrad", "Relu6Grad"])
@pytest.mark.parametrize("key", _KEYS)
def test_matches_tensorflow(op, key, path):
    g, x = _CASES[f"{key}_g"], _CASES[f"{key}_x"]
    _assert_bits_equal(run1(op, [g, x]), _CASES[f"{key}_{op}"])


@pytest.mark.parametrize("op", ["ReluGrad", "Relu6Grad"])
def test_threaded_ranges_match_one_pass(op, monkeypatch):
    """Above pass_placement.WHOLE_PASS (and element_threads.SPLIT_ABOVE) the ranges are
    shared among threads; the result is the one pass's."""
    if not activation_grad_jit.wait_ready(120):
        pytest.skip("numba (the jit extra) is not installed")
    rng = np.random.default_rng(3)
    g = rng.standard_normal((4, 33, 33, 16)).astype(np.float32)
    x = rng.normal(3, 4, g.shape).astype(np.float32)
    whole = run1(op, [g, x])
    monkeypatch.setattr(pass_placement, "WHOLE_PASS", 1000)
    monkeypatch.setattr(element_threads, "SPLIT_ABOVE", 1000)
    monkeypatch.setattr(element_threads, "BLOCK", 1000)
    _assert_bits_equal(run1(op, [g, x]), whole)
    mask = (x > 0) & (x < 6) if op == "Relu6Grad" else x > 0
    _assert_bits_equal(whole, g * mask)


def test_strided_and_mixed_inputs_take_numpy(monkeypatch):
    """A strided view runs NumPy (the loop takes flat contiguous arrays), same values."""
    monkeypatch.setattr(activation_grad_kernels, "COMPILED_FROM", 1)
    rng = np.random.default_rng(4)
    g = rng.standard_normal((8, 10)).astype(np.float32)[:, ::2]
    x = rng.standard_normal((8, 10)).astype(np.float32)[:, ::2]
    _assert_bits_equal(run1("ReluGrad", [g, x]), g * (x > 0))


def test_runs_numpy_until_the_loop_is_compiled(monkeypatch):
    monkeypatch.setattr(activation_grad_jit, "ready", lambda: False)
    monkeypatch.setattr(activation_grad_jit, "relu_grad", None)  # a call would raise
    monkeypatch.setattr(activation_grad_kernels, "COMPILED_FROM", 1)
    g = np.array([np.nan, -1.0, 2.0], np.float32)
    x = np.array([-1.0, -1.0, 1.0], np.float32)
    _assert_bits_equal(run1("ReluGrad", [g, x]), np.array([np.nan, -0.0, 2.0], np.float32))


def test_shape_mismatch_is_invalid_argument():
    with pytest.raises(errors.InvalidArgumentError, match="same shape"):
        run1("ReluGrad", [np.zeros(3, np.float32), np.zeros(4, np.float32)])


@pytest.mark.parametrize("shape", [(0, 0), (2, 0)])
def test_sparse_cross_entropy_without_classes_is_invalid_argument(shape):
    """TF 2.21 refuses logits without classes even for an empty batch (its message in the
    fixture); an empty batch of 5 classes gives empty outputs."""
    with pytest.raises(errors.InvalidArgumentError) as info:
        run1("SparseSoftmaxCrossEntropyWithLogits",
             [np.zeros(shape, np.float32), np.zeros(shape[0], np.int64)])
    assert info.value.message == str(_CASES[f"sparse_xent_{shape[0]}x0_message"])
    loss, backprop = run_kernel("SparseSoftmaxCrossEntropyWithLogits",
                                [np.zeros((0, 5), np.float32), np.zeros(0, np.int64)])
    assert loss.shape == (0,) and backprop.shape == (0, 5)


def test_sparse_cross_entropy_loss_ignores_other_classes_infinities():
    """TF's loss is log(sum(exp(shifted))) - shifted[label]: a -inf logit in another class
    leaves it finite (the one-hot product gave NaN: 0 * -inf)."""
    loss, backprop = run_kernel("SparseSoftmaxCrossEntropyWithLogits",
                                [_CASES["sparse_xent_inf_features"],
                                 _CASES["sparse_xent_inf_labels"]])
    np.testing.assert_array_equal(loss, _CASES["sparse_xent_inf_loss"])
    np.testing.assert_allclose(backprop, _CASES["sparse_xent_inf_backprop"], rtol=1e-6,
                               atol=1e-7)


@pytest.mark.parametrize("shape,dtype,data_format", [
    ((32, 256), np.float32, "NHWC"), ((4, 5, 6, 7), np.float64, "NHWC"),
    ((3, 8), np.float16, "NHWC"), ((2, 3, 4), np.float32, "NCHW")])
def test_bias_add_grads_compiled_function_is_computes_sum(shape, dtype, data_format):
    """The function a compiled segment calls (an RNN's gradient loop) sums as compute
    does, bit for bit, in its dtype; NCHW has none (compute runs)."""
    g = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    kernel = create("BiasAddGrad", [g], data_format=data_format)
    fn = kernel.compiled_fn()
    if data_format == "NCHW":
        assert fn is None
        return
    got, want = fn(g), kernel.compute(None, [g])[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
