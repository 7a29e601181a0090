"""The compiled dense update rules (aioflow/kernels/training/dense_jit.py) give the NumPy
rules' results bit for bit (the rules themselves are held to TF's by
test_training_kernels.py), and the Apply kernels use them."""

from __future__ import annotations

import numpy as np
import pytest

import aioflow as af
import aioflow.compat.v1 as tf
from aioflow.framework.op_def_library import apply_op
from aioflow.kernels.training import dense_jit, dense_rules

pytestmark = pytest.mark.skipif(dense_jit.fused_for(dense_rules.adam) is None,
                                reason="numba is not installed")

# (rule, slots, hyper-parameters, variants of its attrs)
CASES = [
    (dense_rules.gradient_descent, 0, {"alpha": 0.1}, [{}]),
    (dense_rules.momentum, 1, {"lr": 0.05, "momentum": 0.9},
     [{"use_nesterov": False}, {"use_nesterov": True}]),
    (dense_rules.adam, 2, {"lr": 0.001, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7,
                           "beta1_power": 0.9 ** 3, "beta2_power": 0.999 ** 3},
     [{"use_nesterov": False}, {"use_nesterov": True}]),
    (dense_rules.adagrad, 1, {"lr": 0.01}, [{"update_slots": True}, {"update_slots": False}]),
    (dense_rules.adagrad_v2, 1, {"lr": 0.01, "epsilon": 1e-6},
     [{"update_slots": True}, {"update_slots": False}]),
    (dense_rules.rms_prop, 2, {"lr": 0.01, "rho": 0.9, "momentum": 0.5, "epsilon": 1e-6},
     [{}]),
]


def _state(rng, dtype, slots: int, n: int):
    var = rng.normal(size=n).astype(dtype)
    # slots positive (Adagrad and RMSProp take their square roots), a few zero
    bufs = [np.abs(rng.normal(size=n)).astype(dtype) for _ in range(slots)]
    for b in bufs:
        b[:3] = 0
    return [var, *bufs]


def _bits(a):
    return a.view(np.uint8)


@pytest.mark.parametrize("rule,slots,hyper,variants", CASES,
                         ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_rule_equals_numpy_rule_bit_for_bit(rule, slots, hyper, variants, dtype):
    fused = dense_jit.fused_for(rule)
    assert fused.group.wait_ready(120)
    rng = np.random.default_rng(7)
    for attrs in variants:
        h = {k: dtype(v) for k, v in hyper.items()} | attrs
        want = _state(rng, dtype, slots, 1001)
        got = [b.copy() for b in want]
        for step in range(4):
            g = rng.normal(size=1001).astype(dtype)
            g[5] = 0
            if step == 3:
                g.flags.writeable = False  # a fed or constant gradient
            with np.errstate(all="ignore"):  # 0 / 0 where a slot and gradient are 0
                rule(want, h, g)
            assert fused(got, h, g)
            for w, x in zip(want, got, strict=True):
                np.testing.assert_array_equal(_bits(x), _bits(w))


def test_other_types_layouts_and_overlaps_are_left_to_numpy():
    fused = dense_jit.fused_for(dense_rules.momentum)
    assert fused.group.wait_ready(120)
    h = {"lr": np.float32(0.1), "momentum": np.float32(0.9), "use_nesterov": False}
    var, accum = np.ones((4, 4), np.float32), np.ones((4, 4), np.float32)
    assert not fused([var, accum], h, np.ones((4, 4), np.float32).T.copy().T)  # F-order
    assert not fused([var.astype(np.float16), accum.astype(np.float16)],
                     {k: np.float16(v) for k, v in h.items()}, np.ones((4, 4), np.float16))
    assert not fused([var, var], h, np.ones((4, 4), np.float32))  # the slot is the var
    assert not fused([var, accum], h, accum[:])  # the gradient is a view of the slot
    np.testing.assert_array_equal(var, 1)
    assert fused([var, accum], h, np.ones((4, 4), np.float32))
    np.testing.assert_array_equal(accum, np.float32(1) * np.float32(0.9) + 1)


@pytest.mark.parametrize("use_resource", [False, True])
def test_apply_adam_kernel_takes_the_compiled_pass(use_resource):
    """ApplyAdam / ResourceApplyAdam, the kernel's rule compiled: the NumPy rule's values
    after three steps."""
    assert dense_jit.fused_for(dense_rules.adam).group.wait_ready(120)
    rng = np.random.default_rng(3)
    init = rng.normal(size=(300, 7)).astype(np.float32)
    grads = [rng.normal(size=(300, 7)).astype(np.float32) for _ in range(3)]
    g = af.Graph()
    with g.as_default():
        var = af.Variable(init, name="v", use_resource=use_resource)
        m = af.Variable(np.zeros_like(init), name="m", use_resource=use_resource)
        v = af.Variable(np.zeros_like(init), name="vv", use_resource=use_resource)
        grad = af.placeholder(af.float32, init.shape)
        hyper = {k: af.constant(x, af.float32) for k, x in
                 {"beta1_power": 0.9, "beta2_power": 0.999, "lr": 0.01, "beta1": 0.9,
                  "beta2": 0.999, "epsilon": 1e-7}.items()}
        refs = [x.handle if use_resource else x._ref() for x in (var, m, v)]
        update = apply_op("ResourceApplyAdam" if use_resource else "ApplyAdam",
                          var=refs[0], m=refs[1], v=refs[2], grad=grad, **hyper)
        read = [x.read_value() for x in (var, m, v)]
        init_op = af.global_variables_initializer()
    want = [init.copy(), np.zeros_like(init), np.zeros_like(init)]
    h = {"beta1_power": np.float32(0.9), "beta2_power": np.float32(0.999),
         "lr": np.float32(0.01), "beta1": np.float32(0.9), "beta2": np.float32(0.999),
         "epsilon": np.float32(1e-7), "use_nesterov": False}
    with tf.Session(graph=g) as sess:
        sess.run(init_op)
        for gv in grads:
            sess.run(update, {grad: gv})
            dense_rules.adam(want, h, gv)
        got = sess.run(read)
    for w, x in zip(want, got, strict=True):
        np.testing.assert_array_equal(_bits(x), _bits(w))
