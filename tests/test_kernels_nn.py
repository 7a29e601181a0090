"""Activation, Softmax/LogSoftmax and BiasAdd kernels against NumPy references."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from kernel_testutil import run1
from test_kernels_cwise import assert_same, rand

from aioflow.framework import errors

BF16 = ml_dtypes.bfloat16
FLOATS = [np.float16, BF16, np.float32, np.float64]
SELU_SCALE, SELU_ALPHA = 1.0507009873554805, 1.6732632423543772


def _wide(fn, x):
    with np.errstate(all="ignore"):
        return np.asarray(fn(x.astype(np.float64))).astype(x.dtype)


ACTIVATIONS = {
    "Relu": lambda x: np.maximum(x, 0),
    "Relu6": lambda x: np.minimum(np.maximum(x, 0), 6),
    "Elu": lambda x: np.where(x < 0, np.expm1(x), x),
    "Selu": lambda x: SELU_SCALE * np.where(x < 0, SELU_ALPHA * np.expm1(x), x),
    "Softplus": lambda x: np.log1p(np.exp(x)),
    "Softsign": lambda x: x / (1 + np.abs(x)),
    "LeakyRelu": lambda x: np.where(x > 0, x, 0.2 * x),
}


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dt", FLOATS)
def test_activations(op, dt):
    x = rand(dt, (3, 4), -8, 8)
    assert_same(run1(op, [x]), _wide(ACTIVATIONS[op], x))


@pytest.mark.parametrize("dt", [np.int32, np.int8, np.uint8, np.int64])
def test_relu_on_ints(dt):
    x = rand(dt, (5,), -10, 10)
    assert_same(run1("Relu", [x]), np.maximum(x, 0).astype(dt))
    assert_same(run1("Relu6", [x]), np.clip(x, 0, 6).astype(dt))


def test_activation_special_values():
    x = np.float32([np.nan, -np.inf, np.inf, 0.0, 100.0, -100.0])
    assert_same(run1("Relu", [x]), np.float32([np.nan, 0, np.inf, 0, 100, 0]))
    assert_same(run1("Relu6", [x]), np.float32([np.nan, 0, 6, 0, 6, 0]))
    assert_same(run1("Softplus", [np.float32([-100, 0, 100])]), np.float32([0, np.log(2), 100]))
    assert_same(run1("LeakyRelu", [np.float32([-1, 1])], alpha=0.1), np.float32([-0.1, 1]))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("shape", [(5,), (2, 5), (2, 3, 4)])
def test_softmax(dt, shape):
    x = rand(dt, shape, -10, 10)
    assert_same(run1("Softmax", [x]), _wide(_softmax, x))
    assert_same(run1("LogSoftmax", [x]), _wide(lambda v: np.log(_softmax(v)), x), rtol=3e-2)


def test_softmax_is_stable_and_follows_tf_on_infinities():
    x = np.float32([[1.0, 2.0, 1000.0], [-np.inf, 0.0, 0.0], [np.inf, 0.0, 1.0]])
    out = run1("Softmax", [x])
    np.testing.assert_allclose(out[0], [0, 0, 1])
    np.testing.assert_allclose(out[1], [0, 0.5, 0.5])
    assert np.isnan(out[2]).all()
    assert_same(run1("LogSoftmax", [np.float32([[1.0, 2.0, 1000.0]])]),
                np.float32([[-999, -998, 0]]))
    assert run1("Softmax", [np.ones((3, 0), np.float32)]).shape == (3, 0)


def test_softmax_needs_a_vector():
    for op in ("Softmax", "LogSoftmax"):
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"logits must have >= 1 dimension, got \[\]"):
            run1(op, [np.float32(1)])


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32, np.complex64])
def test_bias_add(dt):
    x, b = rand(dt, (2, 3, 4)), rand(dt, (4,))
    assert_same(run1("BiasAdd", [x, b]), x + b)
    b3 = rand(dt, (3,))
    assert_same(run1("BiasAdd", [x, b3], data_format="NCHW"), x + b3[:, None])
    x4 = rand(dt, (2, 3, 4, 5))
    assert_same(run1("BiasAdd", [x4, b3], data_format="NCHW"), x4 + b3[:, None, None])
    x2 = rand(dt, (2, 3))
    assert_same(run1("BiasAdd", [x2, b3], data_format="NCHW"), x2 + b3)


def test_bias_add_errors():
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Must provide as many biases as the last dimension of the input "
                             r"tensor: \[4\] vs. \[2,3\]"):
        run1("BiasAdd", [np.zeros((2, 3), np.float32), np.zeros(4, np.float32)])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Input tensor must be at least 2D: \[3\]"):
        run1("BiasAdd", [np.zeros(3, np.float32), np.zeros(3, np.float32)])
    with pytest.raises(errors.InvalidArgumentError, match=r"Biases must be 1D: \[1,3\]"):
        run1("BiasAdd", [np.zeros((2, 3), np.float32), np.zeros((1, 3), np.float32)])
