"""Where Relu, Relu6, ReluGrad and Relu6Grad run (aioflow/kernels/nn/pass_placement.py):
a pass of up to WHOLE_PASS elements in one piece on the calling thread, the event loop
in a session (the old rules sent a million-element pass to a pool thread and split it
over the intra-op threads), worth a pool thread of its own past cwise_kernels.BIG when
the loop has other work, on the pool and split above WHOLE_PASS; the same values on
every path."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_testutil import create, run1

import aioflow.compat.v1 as tf
from aioflow.framework.op_kernel import OpKernel
from aioflow.kernels.math.cwise_kernels import BIG
from aioflow.kernels.nn import (
    activation_grad_jit,
    activation_grad_kernels,
    activation_jit,
    activation_kernels,
    pass_placement,
)

OPS = {"Relu": 1, "Relu6": 1, "ReluGrad": 2, "Relu6Grad": 2}
MILLION = 16 * 32 * 32 * 64  # a training step's activation (benchmarks/gradients_peer.py)


def _inputs(op, n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(2, 4, n).astype(np.float32) for _ in range(OPS[op])]


def _reference(op, inputs):
    if op == "Relu":
        return np.maximum(inputs[0], np.float32(0))
    if op == "Relu6":
        return np.minimum(np.maximum(inputs[0], np.float32(0)), np.float32(6))
    g, x = inputs
    return g * ((x > 0) & (x < 6) if op == "Relu6Grad" else x > 0)


@pytest.mark.parametrize("op", sorted(OPS))
def test_the_executor_asks_the_kernel_per_call(op):
    kernel = create(op, _inputs(op, 8))
    assert kernel.expensive is None and kernel.learns_cost is False
    assert type(kernel).is_expensive is not OpKernel.is_expensive  # not the size rule
    one = np.empty(pass_placement.WHOLE_PASS, np.float32)
    over = np.empty(pass_placement.WHOLE_PASS + 1, np.float32)
    assert not kernel.is_expensive([one] * OPS[op])
    assert kernel.is_expensive([over] * OPS[op])
    assert not kernel.worth_a_thread([np.empty(BIG, np.float32)] * OPS[op])
    assert kernel.worth_a_thread([np.empty(BIG + 1, np.float32)] * OPS[op])


@pytest.fixture(scope="module")
def compiled():
    """The compiled loops (the NumPy path before them is not split either)."""
    if not (activation_jit.wait_ready(120) and activation_grad_jit.wait_ready(120)):
        pytest.skip("numba cannot compile the activation loops")


@pytest.fixture
def split_calls(monkeypatch):
    """The sizes for_ranges was called with by the activation kernels."""
    calls = []
    for module in (activation_kernels, activation_grad_kernels):
        real = module.for_ranges
        monkeypatch.setattr(module, "for_ranges", lambda n, fn, *a, _real=real, **k:
                            calls.append(n) or _real(n, fn, *a, **k))
    return calls


@pytest.mark.parametrize("op", sorted(OPS))
def test_a_pass_up_to_the_limit_runs_in_one_piece(op, compiled, split_calls, monkeypatch):
    monkeypatch.setattr(pass_placement, "WHOLE_PASS", 1 << 15)
    inputs = _inputs(op, 1 << 15)
    np.testing.assert_array_equal(run1(op, inputs), _reference(op, inputs))
    assert split_calls == []
    inputs = _inputs(op, (1 << 15) + 1, seed=1)
    np.testing.assert_array_equal(run1(op, inputs), _reference(op, inputs))
    assert split_calls == [(1 << 15) + 1]  # above: shared among the intra-op threads


def _loop_thread_and_threads_of(fetch, feeds, names, runs=3):
    """(the thread that ran the step's _Retval nodes: the event loop, {name: threads that
    ran it}) over `runs` traced runs."""
    threads: dict = {name: set() for name in names}
    loop = set()
    with tf.Session() as sess:
        for _ in range(runs):
            meta = tf.RunMetadata()
            sess.run(fetch, feeds, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=meta)
            for dev in meta.step_stats.dev_stats:
                for ns in dev.node_stats:
                    if ns.node_name.startswith("_retval"):
                        loop.add(ns.thread_id)
                    elif ns.node_name in threads:
                        threads[ns.node_name].add(ns.thread_id)
    assert len(loop) == 1
    return loop.pop(), threads


def test_a_million_element_relu_and_its_gradient_run_on_the_event_loop():
    """A training step's Relu and ReluGrad of 16x32x32x64 (the old rule: the pool)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [MILLION], name="x")
        dy = tf.placeholder(tf.float32, [MILLION], name="dy")
        y = tf.nn.relu(x, name="relu")
        (dx,) = tf.gradients(y, [x], grad_ys=dy)
        feeds = dict(zip((x, dy), _inputs("ReluGrad", MILLION), strict=True))
        loop, threads = _loop_thread_and_threads_of(
            [y, dx], feeds, ["relu", dx.op.name])
        assert threads == {"relu": {loop}, dx.op.name: {loop}}
        with tf.Session() as sess:
            got_y, got_dx = sess.run([y, dx], feeds)
    np.testing.assert_array_equal(got_y, _reference("Relu", [feeds[x]]))
    np.testing.assert_array_equal(got_dx, _reference("ReluGrad", [feeds[dy], feeds[x]]))
