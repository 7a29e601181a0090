"""MaxPoolGrad on the workspace its forward MaxPool kept (aioflow/kernels/onednn/
pool_workspace.py): reused for the very orig_output array, the forward recomputed for any
other (a copy with equal values, another orig_input), the same values either way (ties
to the same tap), and no entry left once the output dies. Skipped without oneDNN."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest
from kernel_testutil import create

import aioflow.compat.v1 as tf
from aioflow.kernels.nn.pooling_grad_kernels import max_pool_grad_2d
from aioflow.kernels.onednn import (
    backend,
    dnnl_api,
    pool_workspace,
    pooling_grad_onednn,
    pooling_onednn,
)

pytestmark = pytest.mark.skipif(not backend.AVAILABLE,
                                reason=f"oneDNN not loaded: {dnnl_api.load_error()}")

_ATTRS = dict(ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")


@pytest.fixture(name="kernels", scope="module")
def kernels_fixture():
    x = np.zeros((2, 9, 9, 4), np.float32)
    y = x[:, ::2, ::2]
    return create("MaxPool", [x], **_ATTRS), create("MaxPoolGrad", [x, y, y], **_ATTRS)


@pytest.fixture(autouse=True)
def fresh():
    pool_workspace.clear()
    yield
    pool_workspace.clear()


def _x(ties: bool) -> np.ndarray:
    if ties:  # whole windows equal: the first tap in window order wins
        return np.round(np.random.default_rng(1).standard_normal((2, 9, 9, 4))).astype(
            np.float32)
    return np.random.default_rng(2).standard_normal((2, 9, 9, 4)).astype(np.float32)


def _step(kernels, x, y_for_grad=None, x_for_grad=None):
    """(forward output, its gradient, forwards the gradient ran again)."""
    pool, grad = kernels
    y = pool.compute(None, [x])[0]
    g = np.random.default_rng(3).standard_normal(y.shape).astype(np.float32)
    before = pooling_grad_onednn.RECOMPUTES[0]
    dx = grad.compute(None, [x if x_for_grad is None else x_for_grad,
                             y if y_for_grad is None else y_for_grad(y), g])[0]
    return y, dx, pooling_grad_onednn.RECOMPUTES[0] - before, g


def test_an_inference_forward_keeps_no_workspace(kernels):
    y = kernels[0].compute(None, [_x(False)])[0]
    assert pool_workspace.count() == 0
    del y


def test_the_workspace_is_reused_after_the_first_gradient_asks_for_it(kernels):
    x = _x(False)
    _, _, first, _ = _step(kernels, x)
    assert first == 1  # no workspace yet: the forward again, and the geometry wanted
    y, _, second, _ = _step(kernels, x)
    assert second == 0
    assert pool_workspace.count() == 1
    del y


@pytest.mark.parametrize("ties", [False, True])
def test_the_workspace_gives_the_recomputes_values(kernels, ties):
    x = _x(ties)
    _step(kernels, x)  # want the geometry
    y, dx_ws, recomputes, g = _step(kernels, x)
    assert recomputes == 0
    dx_again = kernels[1].compute(None, [x, y.copy(), g])[0]  # a copy: recomputed
    np.testing.assert_array_equal(dx_ws, dx_again)
    want = max_pool_grad_2d(x, g, [3, 3], [2, 2], [(1, 1), (1, 1)], [5, 5])
    np.testing.assert_array_equal(dx_ws != 0, want != 0)  # the same winning taps
    np.testing.assert_allclose(dx_ws, want, rtol=1e-6, atol=1e-6)  # sums in other order


def test_an_equal_copy_of_the_output_falls_back_to_the_recompute(kernels):
    x = _x(False)
    _step(kernels, x)
    _, _, recomputes, _ = _step(kernels, x, y_for_grad=lambda y: y.copy())
    assert recomputes == 1


def test_another_orig_input_falls_back_to_the_recompute(kernels):
    x = _x(False)
    _step(kernels, x)
    _, dx, recomputes, g = _step(kernels, x, x_for_grad=x + 1)
    assert recomputes == 1
    np.testing.assert_allclose(
        dx, max_pool_grad_2d(x + 1, g, [3, 3], [2, 2], [(1, 1), (1, 1)], [5, 5]),
        rtol=1e-6, atol=1e-6)


def test_no_entry_outlives_the_output(kernels):
    x = _x(False)
    _step(kernels, x)
    y, _, _, _ = _step(kernels, x)
    assert pool_workspace.count() == 1
    del y
    gc.collect()
    assert pool_workspace.count() == 0


def test_a_sessions_second_step_reads_the_forwards_workspace():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2, 9, 9, 4])
        h = tf.nn.relu(x)
        loss = tf.reduce_sum(tf.nn.max_pool(h, [1, 3, 3, 1], [1, 2, 2, 1], "SAME") ** 2)
        (dx,) = tf.gradients(loss, [x])
        with tf.Session() as sess:
            feed = {x: _x(True)}
            before = pooling_grad_onednn.RECOMPUTES[0]
            first = sess.run(dx, feed)
            assert pooling_grad_onednn.RECOMPUTES[0] - before == 1
            second = sess.run(dx, feed)
            assert pooling_grad_onednn.RECOMPUTES[0] - before == 1  # the workspace read
    np.testing.assert_array_equal(first, second)
    gc.collect()
    assert pool_workspace.count() == 0


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: no team")
def test_a_training_forward_runs_on_its_calling_thread(kernels, monkeypatch):
    """An inference max pooling worth a team takes one; the training forward (workspace
    kept) runs on its calling thread below conv_grad_onednn.TEAM_WORK, as its gradient."""
    monkeypatch.setattr(backend, "TEAM_WORK", 1)  # every inference pooling worth a team
    monkeypatch.setattr(backend, "intra_op_threads", lambda: 2)  # (OPENBLAS_NUM_THREADS)
    threads = []
    monkeypatch.setattr(pooling_onednn, "set_threads", threads.append)
    x = _x(False)
    kernels[0].compute(None, [x])
    assert threads == [2]
    _step(kernels, x)  # the gradient asks for the geometry
    threads.clear()
    y, _, recomputes, _ = _step(kernels, x)
    assert recomputes == 0 and threads == [1]
    del y


def test_an_inference_3d_max_pool_runs_the_training_primitive_and_keeps_nothing():
    """oneDNN 3.2 runs 3-D max pooling faster as forward_training (TF's kind): an
    inference MaxPool3D runs that primitive, gives the windows' maxima (SAME: the pad
    never wins), and keeps no workspace."""
    from aioflow.kernels.onednn import dnnl_api as api

    x = np.random.default_rng(4).standard_normal((2, 5, 9, 9, 4)).astype(np.float32)
    attrs = dict(ksize=[1, 3, 3, 3, 1], strides=[1, 2, 2, 2, 1], padding="SAME")
    y = create("MaxPool3D", [x], **attrs).compute(None, [x])[0]
    padded = np.pad(x, [(0, 0), (1, 1), (1, 1), (1, 1), (0, 0)], constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3, 3), axis=(1, 2, 3))
    want = windows[:, ::2, ::2, ::2].max(axis=(-3, -2, -1))
    np.testing.assert_array_equal(y, want)
    assert pool_workspace.count() == 0
    kinds = {key[-1] for key in pooling_onednn._CACHE._entries
             if key[0] == x.shape and key[1] == api.POOLING_MAX}
    assert kinds == {api.FORWARD_TRAINING}
