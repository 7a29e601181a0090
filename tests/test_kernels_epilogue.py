"""The fused ops' epilogue (kernels/fused_kernels.Epilogue): its compiled one-pass loop
(numba, the jit extra) against NumPy's passes, for each chain it takes, with NaN, -0.0,
inf and values on the clip bounds; and the fused kernels through it against the unfused
op followed by NumPy; and the loop's compile kept off the kernels' path (NumPy's passes
until it is compiled, on a background thread), so that runs started together before it
is compiled keep their compiled segment."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
from kernel_testutil import create, run1

import aioflow as af
from aioflow.kernels.nn import epilogue_jit, fused_kernels
from aioflow.runtime.executor import observe_steps

needs_jit = pytest.mark.skipif(not epilogue_jit.available(),
                               reason="numba (the jit extra) is not installed")


def _block(dtype, shape=(5, 7, 6)):
    rng = np.random.default_rng(0)
    y = (rng.standard_normal(shape) * 5).astype(dtype)
    y.flat[:6] = [np.nan, -0.0, 0.0, 6.0, np.inf, -np.inf]
    return y


def _numpy_chain(y, scale, bias, act):
    y = y.copy()
    if scale is not None:
        y *= scale
    y += bias
    if act == "Relu":
        np.maximum(y, 0, out=y)
    elif act == "Relu6":
        np.maximum(y, 0, out=y)
        np.minimum(y, 6, out=y)
    return y


@needs_jit
@pytest.mark.parametrize("base", ["BiasAdd", "FusedBatchNorm"])
@pytest.mark.parametrize("act", [None, "Relu", "Relu6"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_epilogue_equals_numpy(base, act, dtype):
    rng = np.random.default_rng(1)
    c = 6
    args = [rng.standard_normal(c).astype(dtype)] if base == "BiasAdd" else [
        rng.uniform(0.5, 2, c).astype(dtype), rng.standard_normal(c).astype(dtype),
        rng.standard_normal(c).astype(dtype), rng.uniform(0.5, 2, c).astype(dtype)]
    fn = {None: None, "Relu": fused_kernels._relu, "Relu6": fused_kernels._relu6}[act]
    ep = fused_kernels.make_epilogue(base, fn, 0.001, 0.2, args, c, dtype)
    assert ep._clip is not None  # the compiled loop runs, once compiled:
    assert epilogue_jit.wait_ready(120), repr(epilogue_jit.last_error)
    y = _block(dtype)
    want = _numpy_chain(y, ep.scale, ep.bias, act)
    ep(y)
    np.testing.assert_array_equal(y, want)
    assert np.signbit(y.flat[1]) == np.signbit(want.flat[1])


def test_non_contiguous_block_and_other_activations_take_numpy():
    bias = np.arange(6, dtype=np.float32)
    ep = fused_kernels.make_epilogue("BiasAdd", fused_kernels._relu6, 0.0, 0.2, [bias], 6,
                                     np.float32)
    y = _block(np.float32, (4, 12))
    view = y[:, ::2]  # not contiguous: NumPy's passes on the view
    want = _numpy_chain(view, None, bias, "Relu6")
    ep(view)
    np.testing.assert_array_equal(view, want)
    elu = fused_kernels.make_epilogue("BiasAdd", fused_kernels._elu, 0.0, 0.2, [bias], 6,
                                      np.float32)
    assert elu._clip is None


@pytest.mark.parametrize("op, base_op, wshape", [
    ("_FusedConv2D", "Conv2D", (3, 3, 4, 5)),
    ("_FusedDepthwiseConv2dNative", "DepthwiseConv2dNative", (3, 3, 4, 1)),
])
@pytest.mark.parametrize("act", ["Relu", "Relu6"])
def test_fused_kernels_equal_op_then_chain(op, base_op, wshape, act):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((2, 9, 8, 4)) * 3).astype(np.float32)
    w = rng.standard_normal(wshape).astype(np.float32)
    c = wshape[3] if base_op == "Conv2D" else wshape[2] * wshape[3]
    bias = rng.standard_normal(c).astype(np.float32)
    attrs = dict(strides=[1, 1, 1, 1], padding="SAME")
    got = run1(op, [x, w, bias], fused_ops=["BiasAdd", act], num_args=1, **attrs)
    want = _numpy_chain(run1(base_op, [x, w], **attrs), None, bias, act)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@needs_jit
def test_epilogue_takes_numpy_until_the_loop_is_compiled(monkeypatch):
    requested = []
    monkeypatch.setattr(epilogue_jit, "_ready", threading.Event())  # not compiled yet
    monkeypatch.setattr(epilogue_jit, "compile_in_background", lambda: requested.append(1))
    monkeypatch.setattr(epilogue_jit, "scale_bias_clip", None)  # a call would raise
    bias = np.arange(6, dtype=np.float32) - 2
    ep = fused_kernels.make_epilogue("BiasAdd", fused_kernels._relu, 0.0, 0.2, [bias], 6,
                                     np.float32)
    y = _block(np.float32, (4, 6))
    want = _numpy_chain(y, None, bias, "Relu")
    ep(y)
    np.testing.assert_array_equal(y, want)
    assert requested  # and the compile was asked for, not waited for


@needs_jit
async def test_runs_started_before_the_loop_compiles_keep_their_compiled_segment(
        monkeypatch):
    """A served model's first burst of requests (64 runs started together) while the
    epilogue's loop is not compiled: _FusedMatMul runs inline by NumPy's passes, so the
    segment compiles and never falls back. (It used to say "expensive" until the loop
    compiled; each run that saw that counted a fallback of the compiled segment, which
    then gave up for good: the MLP served node by node, +8 µs a request.)"""
    monkeypatch.setenv("AIOFLOW_SEGMENTS", "1")
    monkeypatch.setattr(epilogue_jit, "_ready", threading.Event())  # not compiled yet
    monkeypatch.setattr(epilogue_jit, "compile_in_background", lambda: None)  # nor soon
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((8, 16)).astype(np.float32)
    b1 = rng.standard_normal(16).astype(np.float32)
    w2 = rng.standard_normal((16, 4)).astype(np.float32)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 8], name="x")
        h = af.nn.relu(af.matmul(x, af.constant(w1)) + af.constant(b1))
        y = af.nn.softmax(af.matmul(h, af.constant(w2)), name="probs")
    xs = rng.standard_normal((80, 1, 8)).astype(np.float32)
    states = []
    async with af.Session(graph=g) as sess:
        with observe_steps(states.extend):
            got = await asyncio.gather(*(sess.run(y, {x: v}) for v in xs[:64]))
            got += [await sess.run(y, {x: v}) for v in xs[64:]]
    logits = np.maximum(xs @ w1 + b1, 0) @ w2
    e = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(np.stack(got), e / e.sum(-1, keepdims=True), rtol=1e-5)
    impl = states[-1].impl
    fused = [item for item in impl.items if item.op == "_FusedMatMul"]
    assert fused  # the optimizer fused MatMul, BiasAdd and Relu
    segments = [s for s in impl.segments if fused[0] in s.members]
    assert segments and all(s.fn is not None and s.fallbacks == 0 for s in segments)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])  # (TF has no float64 one)
def test_fused_matmul_follows_its_bias_from_call_to_call(dtype):
    """_FusedMatMul keeps its epilogue while the bias is the same array: a new array, a
    changed value of the same array, another width or dtype each give the right answer."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 5)).astype(dtype)
    b = rng.standard_normal((5, 4)).astype(dtype)
    bias = rng.standard_normal(4).astype(dtype)
    kernel = create("_FusedMatMul", [a, b, bias], fused_ops=["BiasAdd", "Relu"], num_args=1)

    def want(a, b, bias):
        y = a.astype(np.float32) @ b.astype(np.float32) + bias.astype(np.float32)
        return np.maximum(y, 0).astype(dtype)

    def got(a, b, bias):
        with np.errstate(all="ignore"):
            (y,) = kernel.compute(None, [a, b, bias])
        return y

    tol = dict(rtol=1e-2, atol=1e-2) if dtype == np.float16 else dict(rtol=1e-5, atol=1e-6)
    for _ in range(2):  # the same bias twice
        np.testing.assert_allclose(got(a, b, bias), want(a, b, bias), **tol)
    bias[:] = rng.standard_normal(4) * 3  # the same array, new values
    np.testing.assert_allclose(got(a, b, bias), want(a, b, bias), **tol)
    other = rng.standard_normal(4).astype(dtype)  # another array
    np.testing.assert_allclose(got(a, b, other), want(a, b, other), **tol)
    wide_b = rng.standard_normal((5, 6)).astype(dtype)
    wide = rng.standard_normal(6).astype(dtype)
    np.testing.assert_allclose(got(a, wide_b, wide), want(a, wide_b, wide), **tol)
    with pytest.raises(af.errors.InvalidArgumentError,
                       match="bias must be 1-dimensional of size 4"):
        got(a, b, wide)  # checked again once the bias differs


@needs_jit
def test_a_failed_background_compile_is_tried_again_a_few_times(monkeypatch):
    """A compile that fails (a numba cache another process is writing, say) leaves
    NumPy's passes in place, and a later call tries again, at most _MAX_ATTEMPTS times."""
    calls = []

    class Jit:  # what kernels/jit.py's LazyJit offers: a call, and freeze
        def __init__(self, fn):
            self.fn, self.frozen = fn, False

        def __call__(self, *args):
            return self.fn(*args)

        def freeze(self):
            self.frozen = True

    def flaky(*args):
        calls.append(args[0].dtype)
        if len(calls) == 1:
            raise OSError("cache being written")

    jit = Jit(flaky)
    for name, value in (("_ready", threading.Event()), ("_finished", threading.Event()),
                        ("_started", False), ("_attempts", 0), ("last_error", None),
                        ("_compiled", jit)):
        monkeypatch.setattr(epilogue_jit, name, value)
    assert not epilogue_jit.wait_ready(30)
    assert isinstance(epilogue_jit.last_error, OSError) and not epilogue_jit.ready()
    assert not jit.frozen
    assert epilogue_jit.wait_ready(30)  # the second attempt compiles both types
    # (writeable and read-only scale and bias: four signatures a type), then freezes
    assert calls[1:] == [np.dtype(np.float32)] * 4 + [np.dtype(np.float64)] * 4
    assert jit.frozen

    def broken(*args):
        calls.append(None)
        raise OSError("no compiler")

    for name, value in (("_ready", threading.Event()), ("_finished", threading.Event()),
                        ("_started", False), ("_attempts", 0), ("_compiled", Jit(broken))):
        monkeypatch.setattr(epilogue_jit, name, value)
    calls.clear()
    for _ in range(epilogue_jit._MAX_ATTEMPTS + 2):
        assert not epilogue_jit.wait_ready(30)
    assert len(calls) == epilogue_jit._MAX_ATTEMPTS  # then NumPy's passes for good
