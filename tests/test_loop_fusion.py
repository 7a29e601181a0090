"""Compiled while loops' element-wise chains (runtime/loop_fusion.py, kernels/math/
fused_cwise.py) and products (kernels/onednn/matmul_onednn.py's lean_gemm and
invariant_fn): each fused form gives its kernel's values bit for bit; a loop's chain runs
as one call once compiled and its values are those of the loop run node by node; a chain
falls back to its nodes when its inputs do not fit; a set of nodes that a path leaves and
re-enters is not fused; a failing product raises the node's error; the graph itself is
untouched."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from kernel_testutil import create, run1
from test_segments import assert_identical, executors_for

import aioflow as af
from aioflow.framework.op_def_library import apply_op
from aioflow.kernels import jit
from aioflow.kernels.math import fused_cwise
from aioflow.kernels.math.fused_cwise import OPS, FusedChain
from aioflow.kernels.onednn import backend, matmul_onednn
from aioflow.runtime import loop_fusion
from aioflow.runtime.loop_segments import LoopSegment
from aioflow.runtime.node_item import BY_SIZE, FORWARD, INLINE

_ARITY = {"Neg": 1, "Square": 1, "Sigmoid": 1, "Tanh": 1, "Exp": 1}
#: Values with every special case of the float types: zeros of both signs, inf, NaN,
#: subnormals, and ordinary values of both signs.
_SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3e-39, 1.0, -1.0, 0.5, 3.0e38]


def tanh_grad(y, dy):
    return apply_op("TanhGrad", y=y, dy=dy)


def sigmoid_grad(y, dy):
    return apply_op("SigmoidGrad", y=y, dy=dy)


def _values(dtype, seed: int, shape=(6, 7)):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    x.flat[:len(_SPECIAL)] = np.asarray(_SPECIAL, dtype)[rng.permutation(len(_SPECIAL))]
    return x


def _compiled(chain: FusedChain, *inputs):
    """The chain's outputs once compiled (it observes OBSERVE calls, then compiles)."""
    for _ in range(fused_cwise.OBSERVE):
        assert chain(*inputs) is None
    assert chain.wait_ready(120), chain.source
    return chain(*inputs)


@pytest.fixture(autouse=True)
def _default_segments(monkeypatch):
    monkeypatch.delenv("AIOFLOW_SEGMENTS", raising=False)
    with np.errstate(all="ignore"):  # (as the executor runs kernels: TF's inf/nan, quiet)
        yield


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(OPS))
def test_each_fused_form_gives_its_kernels_values_bit_for_bit(op, dtype):
    arity = 3 if op == "AddN" else _ARITY.get(op, 2)
    inputs = [_values(dtype, seed) for seed in range(arity)]
    attrs = {"N": arity} if op == "AddN" else {}
    want = run1(op, inputs, **attrs)
    chain = FusedChain([(op, [("in", k) for k in range(arity)])], [0], arity, op)
    (got,) = _compiled(chain, *inputs)
    assert_identical(got, want, op)


def test_a_chain_of_steps_and_views_gives_the_nodes_values():
    """An LSTM gradient's gates: steps reading steps, inputs that are strided views (a
    Slice's), read-only arrays (a constant's); outputs only the steps asked for."""
    base = _values(np.float32, 1, (6, 28))
    dh, y = base[:, :7], base[:, 7:14]  # views
    dc = _values(np.float32, 2, (6, 7))
    dc.flags.writeable = False
    steps = [("Mul", [("in", 0), ("in", 1)]),             # dh * y
             ("TanhGrad", [("in", 1), ("step", 0)]),       # (dh * y) * (1 - y * y)
             ("AddN", [("in", 2), ("step", 1)]),
             ("SigmoidGrad", [("in", 1), ("step", 2)])]
    chain = FusedChain(steps, [3, 1], 3, "gates")
    got = _compiled(chain, dh, y, dc)
    t0 = run1("Mul", [dh, y])
    t1 = run1("TanhGrad", [y, t0])
    t2 = run1("AddN", [dc, t1], N=2)
    assert_identical(list(got), [run1("SigmoidGrad", [y, t2]), t1])
    # read-only inputs of any layout run compiled too; other arrays (writable
    # contiguous ones) once their signature is compiled, the nodes running meanwhile
    frozen = [np.array(v) for v in (dh, y, dc)]
    for v in frozen:
        v.flags.writeable = False
    assert_identical(list(chain(*frozen)), list(got))
    # (whether numba's dispatcher converts these to a compiled signature or the chain
    # compiles theirs first depends on numba's process-wide conversion cache: either
    # way they run compiled, with the same values, once that is settled)
    later = (dh.copy(), y.copy(), dc.copy())
    first = chain(*later)
    if first is None:
        assert chain.wait_ready(120)
    else:
        assert_identical(list(first), list(got))
    assert_identical(list(chain(*later)), list(got))
    assert_identical(list(chain(dh, y, dc)), list(got))


def test_an_lstm_cells_gates_fused_in_stages_give_the_nodes_values():
    """BasicLSTMCell's forward: sigmoid(i), tanh(j), sigmoid(f + forget_bias),
    sigmoid(o), c * sf + si * tj, tanh of that, times so: numba loops around NumPy's exp
    and tanh; inputs strided views (a Split's) and a NumPy scalar (the forget bias)."""
    gates = _values(np.float32, 14, (6, 28))
    i, j, f, o = np.split(gates, 4, axis=1)
    c = _values(np.float32, 15, (6, 7))
    bias = np.float32(1.0)
    steps = [("AddV2", [("in", 2), ("in", 4)]),       # 0: f + forget_bias
             ("Sigmoid", [("in", 0)]),                # 1
             ("Tanh", [("in", 1)]),                   # 2
             ("Sigmoid", [("step", 0)]),              # 3
             ("Sigmoid", [("in", 3)]),                # 4
             ("Mul", [("in", 5), ("step", 3)]),       # 5: c * sf
             ("Mul", [("step", 1), ("step", 2)]),     # 6: si * tj
             ("AddV2", [("step", 5), ("step", 6)]),   # 7: new c
             ("Tanh", [("step", 7)]),                 # 8
             ("Mul", [("step", 8), ("step", 4)])]     # 9: new h
    outputs = [1, 2, 3, 4, 7, 8, 9]
    chain = FusedChain(steps, outputs, 6, "cell")
    got = _compiled(chain, i, j, f, o, bias, c)
    si, tj = run1("Sigmoid", [i]), run1("Tanh", [j])
    sf, so = run1("Sigmoid", [run1("AddV2", [f, bias])]), run1("Sigmoid", [o])
    new_c = run1("AddV2", [run1("Mul", [c, sf]), run1("Mul", [si, tj])])
    tc = run1("Tanh", [new_c])
    assert_identical(list(got), [si, tj, sf, so, new_c, tc, run1("Mul", [tc, so])])
    # three loops: the exps' operands; the sigmoids and c; h; NumPy's exp and tanh between
    run = chain.source[:chain.source.index("def loop0")]
    assert [run.count(call) for call in ("loop0(", "loop1(", "loop2(", "loop3(")] == \
        [1, 1, 1, 0], run
    assert (run.count("_exp("), run.count("_tanh(")) == (3, 2), run


def test_a_chain_answers_none_for_inputs_it_cannot_take():
    a, b = _values(np.float32, 3), _values(np.float32, 4)
    chain = FusedChain([("Mul", [("in", 0), ("in", 1)])], [0], 2, "mul")
    _compiled(chain, a, b)
    assert chain(a, b[:1]) is None  # shapes differ (a broadcast): the nodes run
    assert chain(a, b) is not None
    assert chain(a.astype(np.float64), b.astype(np.float64)) is None  # another type
    assert chain(a, b) is None  # ...from then on the nodes, for good
    ints = FusedChain([("Mul", [("in", 0), ("in", 1)])], [0], 2, "ints")
    for _ in range(fused_cwise.OBSERVE + 1):
        assert ints(np.arange(3), np.arange(3)) is None  # integers: never compiled
    assert not ints.wait_ready(0)


# -- chains in compiled loops -------------------------------------------------------------------

def _gates_loop(n: int = 12):
    """An LSTM gradient's element-wise shape: y = tanh-like values, a chain of Mul /
    AddN / TanhGrad / SigmoidGrad per iteration carried through two loop variables."""
    g = af.Graph()
    with g.as_default():
        y = af.placeholder(af.float32, [5, 6], name="y")
        dh0 = af.placeholder(af.float32, [5, 6], name="dh")

        def body(i, dh, dc):
            a = dh * y
            b = tanh_grad(y, a)
            c = af.add_n([dc, b])
            d = sigmoid_grad(y, c * 0.5)
            return i + 1, d - dh, c * y

        out = af.while_loop(lambda i, dh, dc: i < n, body,
                            [af.constant(0), dh0, af.zeros([5, 6], af.float32)])
    feeds = {y: np.tanh(_values(np.float32, 5, (5, 6))), dh0: _values(np.float32, 6, (5, 6))}
    return g, [y, dh0], list(out[1:]), feeds


async def test_a_loops_chain_runs_as_one_call_with_the_nodes_values(monkeypatch):
    g, feeds_at, fetches, feeds = _gates_loop()
    monkeypatch.setenv("AIOFLOW_SEGMENTS", "0")
    async with af.Session(graph=g) as sess:
        want = await sess.run(fetches, feeds)
    monkeypatch.setenv("AIOFLOW_SEGMENTS", "eager")
    calls = []
    real = FusedChain.__call__

    def counted(self, *inputs):
        out = real(self, *inputs)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(FusedChain, "__call__", counted)
    async with af.Session(graph=g) as sess:
        first = await sess.run(fetches, feeds)  # observed, then compiled in the background
        assert fused_cwise.wait_ready(120)
        calls.clear()
        again = await sess.run(fetches, feeds)
    assert calls and all(calls), calls  # every iteration's chain ran compiled
    assert_identical(first, want)
    assert_identical(again, want)


def test_a_loops_chain_is_generated_beside_its_nodes_lines():
    g, feeds_at, fetches, _ = _gates_loop()
    ops_before = [(op.name, op.type) for op in g.get_operations()]
    direct, eak = executors_for(g, feeds_at, fetches)
    try:
        (impl,) = eak.executors
        (loop,) = [s for s in impl.segments if isinstance(s, LoopSegment)]
        source, namespace = loop.generate()
        (chain,) = [v for v in namespace.values() if isinstance(v, FusedChain)]
        assert sorted(op for op, _ in chain.steps) == sorted(
            ["Mul", "TanhGrad", "AddN", "Mul", "SigmoidGrad", "Sub", "Mul"])
        assert " is None:" in source  # the nodes' own lines, when the chain says None
    finally:
        direct.close()
    assert [(op.name, op.type) for op in g.get_operations()] == ops_before


async def test_a_chain_whose_inputs_differ_in_shape_runs_its_nodes(monkeypatch):
    """A broadcast inside the chain (a row times a matrix): the chain answers None every
    iteration and the nodes compute, as without it."""
    g = af.Graph()
    with g.as_default():
        row = af.placeholder(af.float32, [6], name="row")
        x0 = af.placeholder(af.float32, [5, 6], name="x0")
        out = af.while_loop(lambda i, x: i < 9,
                            lambda i, x: (i + 1, (x * row - x) * 0.25 + row),
                            [af.constant(0), x0])
    feeds = {row: _values(np.float32, 7, (6,)), x0: _values(np.float32, 8, (5, 6))}
    monkeypatch.setenv("AIOFLOW_SEGMENTS", "0")
    async with af.Session(graph=g) as sess:
        want = await sess.run(out, feeds)
    monkeypatch.setenv("AIOFLOW_SEGMENTS", "eager")
    async with af.Session(graph=g) as sess:
        for _ in range(2):
            assert_identical(await sess.run(out, feeds), want)
            fused_cwise.wait_ready(120)


async def test_an_lstm_gradient_fused_matches_node_by_node(monkeypatch):
    """dynamic_rnn's BasicLSTMCell and its gradient loop (stacks, products, gates): the
    compiled loops with their chains and prepared products give the values of the loops
    run node by node. Products may sum in another order on another path (oneDNN's GEMM
    with a transposed copy, NumPy's below its size), hence a float32 rounding bound."""
    import aioflow.compat.v1 as tf

    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(0)  # (the same initial weights in every session)
        x = tf.placeholder(tf.float32, [4, 7, 8])
        _, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(16), x,
                                     dtype=tf.float32)
        loss = tf.reduce_sum(tf.square(state.h))
        grads = tf.gradients(loss, [x] + tf.trainable_variables())
        init = tf.global_variables_initializer()
    feed = {x: _values(np.float32, 9, (4, 7, 8)).clip(-3, 3)}
    feed[x][~np.isfinite(feed[x])] = 0.5
    results = {}
    for mode in ("0", "eager"):
        monkeypatch.setenv("AIOFLOW_SEGMENTS", mode)
        async with af.Session(graph=g) as sess:
            await sess.run(init)
            values = [await sess.run(grads, feed) for _ in range(2)]
            fused_cwise.wait_ready(120)
            results[mode] = [*values, await sess.run(grads, feed)]
    for want, got in zip(results["0"], results["eager"], strict=True):
        for w, v in zip(want, got, strict=True):
            np.testing.assert_allclose(v, w, rtol=2e-6, atol=1e-7)


# -- which nodes form a chain -------------------------------------------------------------------

def _member(i: int, op: str, mode=INLINE):
    return SimpleNamespace(id=i, op=op, num_outputs=1, mode=mode, name=f"n{i}",
                           pool_above=65536)


def test_a_set_a_path_leaves_and_reenters_is_not_fused():
    """0 -> 1 (a Slice: not fusible) -> 3, and 0 -> 2 -> 3: fusing {0, 2, 3} would need
    the Slice both before and after the chain."""
    body = [_member(0, "Mul"), _member(1, "Slice"), _member(2, "Mul"), _member(3, "AddV2")]
    sources = {0: [(10, 0), (11, 0)], 1: [(0, 0)], 2: [(0, 0), (11, 0)], 3: [(1, 0), (2, 0)]}
    assert loop_fusion.plan(body, sources, {}) == body


def test_a_chain_goes_where_its_last_node_was_its_dependants_after_it():
    """0, 2, 4 fusible through an Identity (3); 1 reads 0 (moved behind the chain), 5
    reads nothing of it (kept before)."""
    m = [_member(0, "Mul"), _member(1, "StackPushV2"), _member(5, "StackPopV2"),
         _member(2, "Sub", BY_SIZE), _member(3, "Identity", FORWARD), _member(4, "AddN")]
    sources = {0: [(10, 0), (11, 0)], 1: [(12, 0), (0, 0)], 5: [(13, 0)],
               2: [(0, 0), (5, 0)], 3: [(2, 0)], 4: [(3, 0), (0, 0)]}
    plan = loop_fusion.plan(m, sources, {})
    assert plan[0] is m[2] and plan[1] == [m[0], m[3], m[4], m[5]] and plan[2] is m[1]


def test_fewer_than_three_nodes_are_not_a_chain():
    body = [_member(0, "Mul"), _member(1, "AddV2"), _member(2, "Relu")]
    sources = {0: [(10, 0), (11, 0)], 1: [(0, 0), (11, 0)], 2: [(1, 0)]}
    assert loop_fusion.plan(body, sources, {}) == body


# -- products ----------------------------------------------------------------------------------

onednn = pytest.mark.skipif(not backend.AVAILABLE, reason="oneDNN not loaded")


@onednn
@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True)])
def test_the_lean_product_is_the_kernels(ta, tb):
    a = _values(np.float32, 10, (96, 32) if ta else (32, 96)).clip(-5, 5)
    b = _values(np.float32, 11, (256, 96) if tb else (96, 256)).clip(-5, 5)
    a[~np.isfinite(a)], b[~np.isfinite(b)] = 1.0, -1.0
    want = run1("MatMul", [a, b], transpose_a=ta, transpose_b=tb)
    fn = matmul_onednn.lean_gemm(ta, tb, None)
    assert_identical(fn(a, b), want)
    with pytest.raises(ValueError):
        fn(a, b[:5] if not tb else b[:, :5])  # inner sizes differ: compute's TF error
    with pytest.raises(ValueError):
        fn(a.ravel(), b)


@onednn
@pytest.mark.skipif(not jit.ENABLED, reason="numba missing or off")
@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_the_lean_product_calls_the_gemm_from_numba_with_the_ctypes_calls_values(
        monkeypatch, ta, tb):
    """Once gemm_jit compiled, lean_gemm's GEMM is called from numba (not ctypes): the
    same call, the same values; strides the GEMM cannot read go to `product`."""
    assert matmul_onednn.wait_compiled(300)
    a = _values(np.float32, 20, (96, 32) if ta else (32, 96)).clip(-5, 5)
    b = _values(np.float32, 21, (256, 96) if tb else (96, 256)).clip(-5, 5)
    a[~np.isfinite(a)], b[~np.isfinite(b)] = 1.0, -1.0
    b.flags.writeable = False  # (a variable's value: read-only)
    fn = matmul_onednn.lean_gemm(ta, tb, None)
    got = fn(a, b)
    monkeypatch.setattr(matmul_onednn._Jit, "sgemm", None)  # the ctypes call
    want = fn(a, b)
    assert_identical(got, want)
    monkeypatch.undo()
    calls = []
    jitted = matmul_onednn._Jit.sgemm
    monkeypatch.setattr(matmul_onednn._Jit, "sgemm",
                        lambda *args: calls.append(args) or jitted(*args))
    products = []
    fn = matmul_onednn.lean_gemm(ta, tb, lambda x, y: products.append(1) or x @ y)
    assert_identical(fn(a, b), want)
    assert len(calls) == 1 and not products
    strided = np.repeat(a, 2, axis=1)[:, ::2]  # (a's values; no unit stride)
    assert_identical(fn(strided, b), strided.T @ b.T if (ta and tb) else
                     strided.T @ b if ta else strided @ b.T if tb else strided @ b)
    assert len(calls) == 2 and products == [1]
    unaligned = np.frombuffer(b"\0" + a.tobytes(), np.float32, a.size, 1).reshape(a.shape)
    assert_identical(fn(unaligned, b), want)  # (the GEMM reads it, as through ctypes)
    assert len(calls) == 3 and products == [1]


@onednn
async def test_a_loop_product_of_a_transposed_invariant_reads_a_copy_made_once(monkeypatch):
    g = af.Graph()
    with g.as_default():
        w = af.placeholder(af.float32, [96, 256], name="w")
        d0 = af.placeholder(af.float32, [32, 256], name="d0")
        out = af.while_loop(  # (y: not read by the loop, so not an accumulation)
            lambda i, d, y: i < 6,
            lambda i, d, y: (i + 1, d * 0.5, af.matmul(d, w, transpose_b=True, name="dx")),
            [af.constant(0), d0, af.zeros([32, 96], af.float32)])
    feeds = {w: _values(np.float32, 12, (96, 256)).clip(-2, 2),
             d0: _values(np.float32, 13, (32, 256)).clip(-2, 2)}
    for v in feeds.values():
        v[~np.isfinite(v)] = 0.25
    direct, eak = executors_for(g, [w, d0], list(out))
    try:
        (loop,) = [s for s in eak.executors[0].segments if isinstance(s, LoopSegment)]
        (dx,) = [m for m in loop.members if m.name.endswith("dx")]
        source, _ = loop.generate()
        assert source.index(f"q{dx.id}(") < source.index("while True") < \
            source.index(f"g{dx.id}("), source
    finally:
        direct.close()
    results = {}
    for mode in ("0", "eager"):
        monkeypatch.setenv("AIOFLOW_SEGMENTS", mode)
        async with af.Session(graph=g) as sess:
            results[mode] = await asyncio.wait_for(sess.run(out, feeds), 30)
    # the same products (oneDNN's GEMM reading the copy untransposed)
    np.testing.assert_allclose(results["eager"][2], results["0"][2], rtol=1e-6, atol=1e-6)


# -- accumulating products -----------------------------------------------------------------------

def _accumulating_loop(inner: int = 16):
    """dW += x_t^T @ g_t and db += sum(g_t) over the iterations (an RNN gradient's weight
    gradients), g_t the loop's own product chain: the two accumulators are read by
    nothing else."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, inner], name="x")
        g0 = af.placeholder(af.float32, [None, 32], name="g0")
        u = af.constant(np.eye(32, dtype=np.float32) * np.float32(0.75))

        def body(i, gt, dw, db):
            dw = dw + af.matmul(x * af.cast(i, af.float32), gt, transpose_a=True, name="dw")
            db = db + af.reduce_sum(gt, axis=0)
            return i + 1, af.matmul(gt, u) - 0.125, dw, db

        out = af.while_loop(lambda i, *_: i < 9, body,
                            [af.constant(0), g0, af.zeros([inner, 32], af.float32),
                             af.zeros([32], af.float32)])
    feeds = {x: _values(np.float32, 16, (8, inner)).clip(-3, 3),
             g0: _values(np.float32, 17, (8, 32)).clip(-3, 3)}
    for v in feeds.values():
        v[~np.isfinite(v)] = 0.5
    return g, x, g0, list(out), feeds


async def test_a_failing_accumulation_raises_its_nodes_error(monkeypatch):
    """An accumulating product fails (its shapes do not match): the loop runs node by node
    and the step fails as it would, naming the product."""
    monkeypatch.setenv("AIOFLOW_SEGMENTS", "eager")
    g, x, g0, out, feeds = _accumulating_loop(inner=16)
    feeds[g0] = feeds[g0][:6]  # 8 rows of x against 6 of g: x^T @ g cannot be made
    async with af.Session(graph=g) as sess:
        for _ in range(2):
            with pytest.raises(af.errors.InvalidArgumentError, match="dw"):
                await asyncio.wait_for(sess.run(out, feeds), 30)


def _color_scheme(first: str) -> str:
    """numba's error-message colour scheme in a fresh process importing `first` first."""
    code = f"import {first}, numba.core.errors as e; print(type(e.termcolor()).__name__)"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True, timeout=120).stdout.split()[-1]


def test_background_compiles_leave_the_processs_streams_alone():
    """With colorama importable (Ray vendors one), numba's coloured error messages call
    colorama.init() / deinit(), replacing sys.stdout / sys.stderr from the compiling
    thread; aioflow has numba format them plain."""
    pytest.importorskip("ray")
    assert _color_scheme("ray") == "HighlightColorScheme"  # what numba would do
    assert _color_scheme("ray, aioflow") == "NOPColorScheme"


def test_a_prepared_push_and_pop_keep_the_kernels_values_and_errors():
    """invariant_fn's per-iteration push and pop: on the stack taken before the loop,
    and, on a handle needing compute's checks, compute's values and TF's errors."""
    from aioflow.kernels.data_flow.stack_kernels import Stack

    stack = Stack("s", af.float32, 2)
    handle = np.empty((), object)
    handle[()] = stack
    push = create("StackPushV2", [handle, np.zeros(2, np.float32)])
    pop = create("StackPopV2", [handle], elem_type=af.float32)
    prepare_push, push_fn = push.invariant_fn((True, False))
    prepare_pop, pop_fn = pop.invariant_fn((True,))
    x, y = np.ones(2, np.float32), np.full(2, 2, np.float32)
    assert prepare_push(handle) is stack and prepare_pop(handle) is stack
    assert push_fn(stack, x) is x and push_fn(stack, y) is y
    with pytest.raises(af.errors.InvalidArgumentError, match="overflowed its max_size"):
        push_fn(stack, x)
    assert pop_fn(stack) is y and pop_fn(stack) is x
    with pytest.raises(af.errors.InvalidArgumentError, match="is empty"):
        pop_fn(stack)
    other = np.empty((), object)  # a stack of another type: compute's checks and error
    other[()] = Stack("t", af.int32, -1)
    with pytest.raises(af.errors.InvalidArgumentError, match="Must have type int32"):
        push_fn(prepare_push(other), x)
    other[()].push(np.int32(3))
    with pytest.raises(af.errors.InvalidArgumentError, match="has type int32"):
        pop_fn(prepare_pop(other))


async def test_a_loops_stack_handle_is_looked_up_once(monkeypatch):
    """A loop gradient's pushes and pops take their stack once, before the loop
    (StackPushV2 / StackPopV2 invariant_fn), with the values of the loop node by node."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [6], name="x")
        _, y = af.while_loop(lambda i, v: i < 20, lambda i, v: (i + 1, af.tanh(v) * 1.5),
                             [af.constant(0), x])
        (dx,) = af.gradients(af.reduce_sum(y), [x])
    direct, eak = executors_for(g, [x], [dx])
    try:
        loops = [s for s in eak.executors[0].segments if isinstance(s, LoopSegment)]
        stack_ops = 0
        for loop in loops:
            source, _ = loop.generate()
            for m in loop.members:
                if m.op in ("StackPushV2", "StackPopV2"):
                    stack_ops += 1
                    assert source.index(f"q{m.id}(") < source.index("while True") < \
                        source.index(f"g{m.id}("), source
        assert stack_ops >= 2
    finally:
        direct.close()
    feeds = {x: np.linspace(-2, 2, 6).astype(np.float32)}
    results = {}
    for mode in ("0", "eager"):
        monkeypatch.setenv("AIOFLOW_SEGMENTS", mode)
        async with af.Session(graph=g) as sess:
            results[mode] = [await sess.run(dx, feeds) for _ in range(3)]
    assert_identical(results["eager"], results["0"])
