"""The gradient kernels added with Qr's, RandomGamma's and the sparse ops' gradients —
SparseAddGrad, SparseSliceGrad, SparseFillEmptyRowsGrad, RandomGammaGrad and
MatrixTriangularSolve — against what TF 2.21 computes or raises for the same inputs
(tests/data/gradients_tf/kernel_cases.*, written by make_gradient_fixtures_tf.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import aioflow.compat.v1 as tf
from aioflow.framework import errors
from aioflow.framework.op_def_library import apply_op

DATA = Path(__file__).resolve().parent / "data" / "gradients_tf"
CASES = json.loads((DATA / "kernel_cases.json").read_text())
ARRAYS = np.load(DATA / "kernel_cases.npz")


@pytest.mark.parametrize("cid", sorted(CASES))
def test_kernel_is_tfs(cid):
    case = CASES[cid]
    inputs = {name: ARRAYS[f"{cid}/{name}"] for name in case["inputs"]}
    with tf.Graph().as_default():
        feeds = {name: tf.placeholder(tf.as_dtype(value.dtype), None, name=name)
                 for name, value in inputs.items()}
        outs = apply_op(case["op"], **feeds, **case["attrs"])
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        with tf.Session() as sess:
            run = lambda: sess.run(outs, {feeds[n]: v for n, v in inputs.items()})  # noqa: E731
            if "error" in case:
                with pytest.raises(getattr(errors, case["error"])) as info:
                    run()
                assert info.value.message.split("\n\t [[")[0] == case["message"]
                return
            values = run()
    for i, value in enumerate(values):
        want = ARRAYS[f"{cid}/out{i}"]
        assert value.dtype == want.dtype and value.shape == want.shape
        # TF computes float32 in float32 (its series loses ~1e-6); aioflow in float64.
        rtol = 1e-5 if want.dtype == np.float32 else 1e-9
        np.testing.assert_allclose(value, want, rtol=rtol, err_msg=f"{cid} output {i}")


def test_vectorised_sparse_add_grad_is_tfs_walk():
    """On ordered inputs (as SparseAdd writes them) the vectorised match gives what TF's
    merge walk (kept for unordered inputs) gives."""
    from aioflow.kernels.sparse.sparse_grad_kernels import _split_sum_grad

    rng = np.random.default_rng(5)
    for _ in range(20):
        dense_a = rng.random((6, 5)) < 0.4
        dense_b = rng.random((6, 5)) < 0.4
        a = np.argwhere(dense_a).astype(np.int64)
        b = np.argwhere(dense_b).astype(np.int64)
        s = np.argwhere((dense_a | dense_b) & (rng.random((6, 5)) < 0.8)).astype(np.int64)
        grad = rng.random(len(s)).astype(np.float32)
        with tf.Graph().as_default(), tf.Session() as sess:
            got = sess.run(apply_op("SparseAddGrad", backprop_val_grad=grad, a_indices=a,
                                    b_indices=b, sum_indices=s))
        want_a, want_b = np.zeros(len(a), np.float32), np.zeros(len(b), np.float32)
        _split_sum_grad(grad, a, b, s, want_a, want_b)
        np.testing.assert_array_equal(got[0], want_a)
        np.testing.assert_array_equal(got[1], want_b)
