"""Where the oneDNN convolution gradients run (aioflow/kernels/onednn/conv_grad_onednn.py,
backend.LoopOrThread, as the forward convolutions): by their multiply-adds, inline on the
event loop up to backend.TRAINING_INLINE_WORK (a lone gradient, the first layer's filter
gradient at a step's end, without a round trip through a pool thread; the old rule sent
every gradient of more than a few thousand elements to the pool), a layer's input and
filter gradients ready together one on a pool thread and one on the loop (the executor's
branch rule) unless they split their batch (then both on the loop, each on both cores
with the warm helper), both on the pool above TRAINING_INLINE_WORK; a forward
convolution of a geometry a gradient ran for inline up to TRAINING_INLINE_WORK too, any
other up to INLINE_WORK; the values as the NumPy kernels'. Skipped without the onednn
extra."""

from __future__ import annotations

import os

import numpy as np
import pytest
from kernel_testutil import create

import aioflow.compat.v1 as tf
from aioflow.framework import errors
from aioflow.kernels.nn import conv_grad_kernels
from aioflow.kernels.onednn import backend, batch_split, conv_grad_onednn, dnnl_api

pytestmark = pytest.mark.skipif(not backend.AVAILABLE,
                                reason=f"oneDNN not loaded: {dnnl_api.load_error()}")

X_SHAPE, W_SHAPE = (4, 16, 16, 8), (3, 3, 8, 16)
DY_SHAPE = (4, 16, 16, 16)
WORK = int(np.prod(DY_SHAPE)) * 3 * 3 * 8  # 1.2 M multiply-adds: worth a thread


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("op, inputs, work", [
    ("Conv2DBackpropInput", [np.array(X_SHAPE, np.int32), _rand(*W_SHAPE),
                             _rand(*DY_SHAPE)], WORK),
    ("Conv2DBackpropFilter", [_rand(*X_SHAPE), np.array(W_SHAPE, np.int32),
                              _rand(*DY_SHAPE)], WORK),
    ("DepthwiseConv2dNativeBackpropInput", [np.array(X_SHAPE, np.int32),
                                            _rand(3, 3, 8, 2), _rand(4, 16, 16, 16)],
     4 * 16 * 16 * 16 * 9),  # the window only: one input channel per output
    ("DepthwiseConv2dNativeBackpropFilter", [_rand(*X_SHAPE), np.array([3, 3, 8, 2], np.int32),
                                             _rand(4, 16, 16, 16)], 4 * 16 * 16 * 16 * 9),
])
def test_a_gradient_is_placed_by_its_multiply_adds(op, inputs, work, monkeypatch):
    kernel = create(op, inputs, strides=[1, 1, 1, 1], padding="SAME")
    assert kernel.expensive is None and kernel.learns_cost is False
    assert kernel.work(inputs) == work
    assert not kernel.is_expensive(inputs)
    assert kernel.worth_a_thread(inputs) == (work >= backend.TEAM_WORK)
    monkeypatch.setattr(backend, "TRAINING_INLINE_WORK", work - 1)
    assert kernel.is_expensive(inputs)


@pytest.mark.parametrize("op, inputs", [
    ("Conv2DBackpropInput", [np.array(X_SHAPE, np.int32), _rand(*W_SHAPE), _rand(*DY_SHAPE)]),
    ("Conv2DBackpropFilter", [_rand(*X_SHAPE), np.array(W_SHAPE, np.int32), _rand(*DY_SHAPE)]),
])
def test_a_gradient_is_a_training_call_inline_past_the_inference_limit(op, inputs,
                                                                        monkeypatch):
    kernel = create(op, inputs, strides=[1, 1, 1, 1], padding="SAME")
    monkeypatch.setattr(backend, "INLINE_WORK", WORK - 1)
    assert kernel.training(inputs) and not kernel.is_expensive(inputs)
    monkeypatch.setattr(backend, "TRAINING_INLINE_WORK", WORK - 1)
    assert kernel.is_expensive(inputs)


@pytest.mark.parametrize("op, inputs", [
    ("Conv2DBackpropInput", [np.array(X_SHAPE, np.int32), _rand(*W_SHAPE), _rand(*DY_SHAPE)]),
    ("Conv2DBackpropFilter", [_rand(*X_SHAPE), np.array(W_SHAPE, np.int32), _rand(*DY_SHAPE)]),
])
def test_a_gradient_that_splits_its_batch_is_not_worth_a_thread(op, inputs, monkeypatch):
    kernel = create(op, inputs, strides=[1, 1, 1, 1], padding="SAME")
    assert kernel.worth_a_thread(inputs) and not kernel.split_call(inputs)
    _split_small(monkeypatch)
    assert kernel.split_call(inputs) and not kernel.worth_a_thread(inputs)


def _split_small(monkeypatch):
    """The test layer's gradients split their batch (as the conv step's 302M ones)."""
    monkeypatch.setattr(batch_split, "SPLIT_WORK", WORK)
    monkeypatch.setattr(conv_grad_onednn, "FILTER_SPLIT_POSITIONS", 1)


def test_a_forward_convolution_of_a_trained_geometry_stays_inline(monkeypatch):
    monkeypatch.setattr(backend, "_trained", set())
    x, w = _rand(*X_SHAPE), _rand(*W_SHAPE)
    conv = create("Conv2D", [x, w], strides=[1, 1, 1, 1], padding="SAME")
    monkeypatch.setattr(backend, "INLINE_WORK", conv.work([x, w]) - 1)
    assert conv.is_expensive([x, w])  # inference: to the pool past INLINE_WORK
    dy = _rand(*DY_SHAPE)
    grad_inputs = [x, np.array(W_SHAPE, np.int32), dy]
    grad = create("Conv2DBackpropFilter", grad_inputs, strides=[1, 1, 1, 1], padding="SAME")
    grad.compute(None, grad_inputs)  # a gradient of this geometry ran: a training step's
    assert conv.training([x, w]) and not conv.is_expensive([x, w])
    other = _rand(8, *X_SHAPE[1:])  # another batch: another geometry, inference
    assert not conv.training([other, w]) and conv.is_expensive([other, w])


def test_malformed_sizes_run_inline_to_the_kernels_error():
    inputs = [_rand(*X_SHAPE), np.array(7, np.int32), _rand(*DY_SHAPE)]
    kernel = create("Conv2DBackpropFilter", inputs, strides=[1, 1, 1, 1], padding="SAME")
    assert kernel.work(inputs) == int(np.prod(DY_SHAPE))  # no window: not expensive
    assert not kernel.is_expensive(inputs)
    with pytest.raises(errors.InvalidArgumentError, match="filter_sizes"):
        kernel.compute(None, inputs)


def _threads(fetches, feeds):
    """(the event loop's thread: the one that ran the _Retval nodes, {node: its threads})
    over three traced runs, and the last run's values."""
    loop, threads = set(), {}
    with tf.Session() as sess:
        for _ in range(3):
            meta = tf.RunMetadata()
            values = sess.run(fetches, feeds, run_metadata=meta, options=tf.RunOptions(
                trace_level=tf.RunOptions.FULL_TRACE))
            for dev in meta.step_stats.dev_stats:
                for ns in dev.node_stats:
                    if ns.node_name.startswith("_retval"):
                        loop.add(ns.thread_id)
                    else:
                        threads.setdefault(ns.node_name, set()).add(ns.thread_id)
    assert len(loop) == 1
    return loop.pop(), threads, values


def _layer(wrt_input: bool):
    """A Conv2D and the gradients of its filter (and input), out_backprop fed."""
    x = tf.placeholder(tf.float32, X_SHAPE)
    dy = tf.placeholder(tf.float32, DY_SHAPE)
    w = tf.constant(_rand(*W_SHAPE, seed=1))
    y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    grads = tf.gradients(y, [x, w] if wrt_input else [w], grad_ys=dy)
    feeds = {x: _rand(*X_SHAPE, seed=2), dy: _rand(*DY_SHAPE, seed=3)}
    return grads, feeds


def _numpy_grads(feeds_values, w):
    x, dy = feeds_values
    pads = [(1, 1), (1, 1)]
    dx = conv_grad_kernels.conv_backprop_input(dy, w, x.shape[1:3], (1, 1), (1, 1), pads)
    dw = conv_grad_kernels.conv_backprop_filter(x, dy, (3, 3), (1, 1), (1, 1), pads)
    return dx, dw


def test_a_lone_gradient_runs_on_the_event_loop():
    with tf.Graph().as_default():
        (dw,), feeds = _layer(wrt_input=False)
        loop, threads, (got,) = _threads([dw], feeds)
    assert threads[dw.op.name] == {loop}
    x, dy = feeds.values()
    want = _numpy_grads((x, dy), _rand(*W_SHAPE, seed=1))[1]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: no branch on the pool")
def test_a_layers_two_gradients_run_side_by_side_on_the_loop_and_a_pool_thread():
    with tf.Graph().as_default():
        (dx, dw), feeds = _layer(wrt_input=True)
        loop, threads, got = _threads([dx, dw], feeds)
    ran = threads[dx.op.name] | threads[dw.op.name]
    assert loop in ran and len(ran) >= 2  # one on the loop, the other on a pool thread
    x, dy = feeds.values()
    for g, want in zip(got, _numpy_grads((x, dy), _rand(*W_SHAPE, seed=1)), strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4)


def test_gradients_above_the_training_inline_work_run_on_the_pool(monkeypatch):
    monkeypatch.setattr(backend, "INLINE_WORK", WORK - 1)
    monkeypatch.setattr(backend, "TRAINING_INLINE_WORK", WORK - 1)
    with tf.Graph().as_default():
        (dx, dw), feeds = _layer(wrt_input=True)
        loop, threads, _ = _threads([dx, dw], feeds)
    assert loop not in threads[dx.op.name] | threads[dw.op.name]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: no split")
def test_a_layers_two_split_gradients_both_run_on_the_loop(monkeypatch):
    _split_small(monkeypatch)
    with tf.Graph().as_default():
        (dx, dw), feeds = _layer(wrt_input=True)
        loop, threads, got = _threads([dx, dw], feeds)
    assert threads[dx.op.name] == threads[dw.op.name] == {loop}
    x, dy = feeds.values()
    for g, want in zip(got, _numpy_grads((x, dy), _rand(*W_SHAPE, seed=1)), strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4)
