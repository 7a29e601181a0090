"""SparseSoftmaxCrossEntropyWithLogits computes the loss and backprop of the one-hot
SoftmaxCrossEntropyWithLogits, bit for bit, without building the one-hot labels; a
-inf logit outside the label leaves the loss finite, as TF's kernel (its loss touches
the label's logit only)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_testutil import create


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 10), (3, 1), (4, 300)])
def test_sparse_equals_dense_with_one_hot_labels(dtype, shape):
    rng = np.random.default_rng(shape[1])
    logits = (rng.normal(size=shape) * 8).astype(dtype)
    labels = rng.integers(0, shape[1], shape[0]).astype(np.int64)
    one_hot = np.eye(shape[1], dtype=dtype)[labels]
    sparse = create("SparseSoftmaxCrossEntropyWithLogits", [logits, labels])
    dense = create("SoftmaxCrossEntropyWithLogits", [logits, one_hot])
    got = sparse.compute(None, [logits, labels])
    want = dense.compute(None, [logits, one_hot])
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))


def test_minus_inf_logit_outside_the_label_keeps_the_loss_finite():
    logits = np.array([[-np.inf, 1.0, 2.0], [0.5, 0.5, -np.inf]], np.float32)
    labels = np.array([2, 0], np.int32)
    loss, backprop = create("SparseSoftmaxCrossEntropyWithLogits", [logits, labels]).compute(
        None, [logits, labels])
    shifted = logits - logits.max(axis=1, keepdims=True)
    want = np.log(np.exp(shifted).sum(axis=1)) - shifted[[0, 1], labels]
    np.testing.assert_allclose(loss, want, rtol=1e-6)
    assert backprop[0, 0] == 0 and backprop[1, 2] == 0

