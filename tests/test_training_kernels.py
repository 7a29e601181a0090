"""The optimizer kernels (Apply*, ResourceApply*, SparseApply*, ResourceSparseApply*)
against TF 2.21: OpDefs field for field, each rule's variable and slots after several
steps on ref and resource variables, dense and sparse (duplicate rows), float16/32/64,
and TF's errors (tests/data/training_kernels.*, made by
tests/data/make_training_kernel_fixtures_tf.py). Also: concurrent steps lose no update.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from op_def_compare import assert_equal_to_tf

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_def_library import apply_op
from aioflow.proto import op_def_pb2

DATA = Path(__file__).parent / "data"
FIXTURES = json.loads((DATA / "training_kernels.json").read_text())
ARRAYS = np.load(DATA / "training_kernels.npz")
TOLERANCE = {"float16": (2e-3, 2e-3), "float32": (1e-5, 1e-6), "float64": (1e-12, 1e-13)}


def test_op_defs_equal_tf():
    tf_ops = op_def_pb2.OpList.FromString((DATA / "training_op_defs.pb").read_bytes())
    assert len(tf_ops.op) == 57
    assert_equal_to_tf(tf_ops)


def _build(name: str, meta: dict):
    """The case's graph: its variables, a grad placeholder, the update op."""
    dtype = af.as_dtype(meta["dtype"])
    resource = meta["op"].startswith("Resource")
    g = af.Graph()
    with g.as_default():
        variables = {v: af.Variable(ARRAYS[f"{name}/init/{v}"], name=v, use_resource=resource)
                     for v in meta["vars"]}
        grad_shape = ARRAYS[f"{name}/grad/0"].shape
        grad = af.placeholder(dtype, grad_shape, name="grad")
        kwargs = {v: (var.handle if resource else var._ref()) for v, var in variables.items()}
        dense_gd = "GradientDescent" in meta["op"] and "Sparse" not in meta["op"]
        kwargs["delta" if dense_gd else "grad"] = grad
        for key, value in meta["hyper"].items():
            kwargs[key] = af.constant(value, dtype=af.int64 if key == "global_step" else dtype,
                                      name=key)
        if meta["indices"] is not None:
            kwargs["indices"] = af.constant(meta["indices"], dtype=af.as_dtype(meta["itype"]),
                                            name="indices")
        kwargs.update(meta["attrs"])
        update = apply_op(meta["op"], name="update", **kwargs)
        reads = {v: var.read_value() if resource else var for v, var in variables.items()}
        init = af.global_variables_initializer()
    return g, init, update, grad, reads


@pytest.mark.parametrize("name", sorted(FIXTURES["cases"]))
async def test_steps_equal_tf(name):
    """The variable and its slots after each step equal TF's."""
    meta = FIXTURES["cases"][name]
    g, init, update, grad, reads = _build(name, meta)
    rtol, atol = TOLERANCE[meta["dtype"]]
    async with af.Session(graph=g) as sess:
        await sess.run(init)
        for k in range(meta["steps"]):
            await sess.run(update, {grad: ARRAYS[f"{name}/grad/{k}"]})
            got = await sess.run(reads)
            for v in meta["vars"]:
                want = ARRAYS[f"{name}/step{k}/{v}"]
                assert got[v].dtype == want.dtype
                np.testing.assert_allclose(got[v], want, rtol=rtol, atol=atol,
                                           err_msg=f"{name} step {k} {v}")


def test_fixture_covers_every_rule_and_form():
    ops = {meta["op"] for meta in FIXTURES["cases"].values()}
    tf_ops = op_def_pb2.OpList.FromString((DATA / "training_op_defs.pb").read_bytes())
    assert ops == {op.name for op in tf_ops.op}


# -- errors -------------------------------------------------------------------------------
def _error_graph(case: str):
    """The graphs of make_training_kernel_fixtures_tf.error_cases, built here."""
    g = af.Graph()
    with g.as_default():
        ref = {"use_resource": False}
        res = {"use_resource": True}
        if case == "uninitialized_slot":
            var = af.Variable([1.0, 2.0], name="var", **ref)
            accum = af.Variable([0.1, 0.1], name="accum", **ref)
            op = apply_op("ApplyAdagrad", var=var._ref(), accum=accum._ref(), lr=0.1,
                          grad=[1.0, 1.0], name="update")
            init = [var.initializer]
        elif case == "uninitialized_resource_slot":
            var = af.Variable([1.0, 2.0], name="var", **res)
            accum = af.Variable([0.1, 0.1], name="accum", **res)
            op = apply_op("ResourceApplyAdagrad", var=var.handle, accum=accum.handle, lr=0.1,
                          grad=[1.0, 1.0], name="update")
            init = [var.initializer]
        elif case == "grad_shape":
            var = af.Variable([1.0, 2.0], name="var", **ref)
            grad = af.placeholder_with_default([1.0, 2.0, 3.0], None, name="grad")
            op = apply_op("ApplyGradientDescent", var=var._ref(), alpha=0.1, delta=grad,
                          name="update")
            init = [var.initializer]
        elif case == "momentum_shape":
            var = af.Variable([1.0, 2.0], name="var", **res)
            accum = af.Variable([1.0, 2.0], name="accum", **res)
            grad = af.placeholder_with_default([[1.0, 2.0]], None, name="grad")
            op = apply_op("ResourceApplyMomentum", var=var.handle, accum=accum.handle,
                          lr=0.1, grad=grad, momentum=0.9, name="update")
            init = [var.initializer, accum.initializer]
        elif case == "lr_not_scalar":
            var = af.Variable([1.0, 2.0], name="var", **ref)
            lr = af.placeholder_with_default([0.1, 0.1], None, name="lr")
            op = apply_op("ApplyGradientDescent", var=var._ref(), alpha=lr, delta=[1.0, 1.0],
                          name="update")
            init = [var.initializer]
        elif case == "sparse_out_of_range":
            var = af.Variable([[1.0], [2.0]], name="var", **ref)
            accum = af.Variable([[0.1], [0.1]], name="accum", **ref)
            idx = af.placeholder_with_default([0, 5], None, name="idx")
            op = apply_op("SparseApplyAdagrad", var=var._ref(), accum=accum._ref(), lr=0.1,
                          grad=[[1.0], [1.0]], indices=idx, name="update")
            init = [var.initializer, accum.initializer]
        elif case == "sparse_vector_out_of_range":
            var = af.Variable([1.0, 2.0], name="var", **ref)
            accum = af.Variable([0.1, 0.1], name="accum", **ref)
            linear = af.Variable([0.1, 0.1], name="linear", **ref)
            idx = af.placeholder_with_default([-1], None, name="idx")
            op = apply_op("SparseApplyFtrl", var=var._ref(), accum=accum._ref(),
                          linear=linear._ref(), grad=[1.0],
                          indices=idx, lr=0.1, l1=0.0, l2=0.0, lr_power=-0.5, name="update")
            init = [var.initializer, accum.initializer, linear.initializer]
        elif case == "sparse_grad_rows":
            var = af.Variable([[1.0], [2.0]], name="var", **res)
            accum = af.Variable([[0.1], [0.1]], name="accum", **res)
            grad = af.placeholder_with_default([[1.0], [1.0], [1.0]], None, name="grad")
            op = apply_op("ResourceSparseApplyMomentum", var=var.handle, accum=accum.handle,
                          lr=0.1, grad=grad, indices=[0, 1], momentum=0.9, name="update")
            init = [var.initializer, accum.initializer]
        elif case == "keras_momentum_out_of_range":
            var = af.Variable([[1.0], [2.0]], name="var", **res)
            accum = af.Variable([[0.1], [0.1]], name="accum", **res)
            idx = af.placeholder_with_default([1, 2], None, name="idx")
            op = apply_op("ResourceSparseApplyKerasMomentum", var=var.handle,
                          accum=accum.handle, lr=0.1, grad=[[1.0], [1.0]], indices=idx,
                          momentum=0.9, name="update")
            init = [var.initializer, accum.initializer]
        elif case == "proximal_negative_lr":
            var = af.Variable([1.0, 2.0], name="var", **ref)
            accum = af.Variable([0.1, 0.1], name="accum", **ref)
            lr = af.placeholder_with_default(-0.1, None, name="lr")
            op = apply_op("ApplyProximalAdagrad", var=var._ref(), accum=accum._ref(), lr=lr, l1=0.0,
                          l2=0.0, grad=[1.0, 1.0], name="update")
            init = [var.initializer, accum.initializer]
        else:
            raise AssertionError(case)
    return g, op, init


@pytest.mark.parametrize("case", sorted(FIXTURES["errors"]))
async def test_errors_equal_tf(case):
    """TF's error class and message, naming the node."""
    want = FIXTURES["errors"][case]
    g, op, init = _error_graph(case)
    async with af.Session(graph=g) as sess:
        await sess.run(init)
        with pytest.raises(errors.OpError) as info:
            await sess.run(op)
    assert type(info.value).__name__ == want["error"]
    assert info.value.message.split("\n\t [[")[0] == want["message"]
    assert "update" in str(info.value)


async def test_kernels_only_for_tf_types():
    """An int32 ApplyGradientDescent has no kernel, as in TF."""
    g = af.Graph()
    with g.as_default():
        var = af.Variable([1, 2], name="var", use_resource=False)
        op = apply_op("ApplyGradientDescent", var=var._ref(), alpha=1, delta=[1, 1],
                      name="update")
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            await sess.run(op)
    assert "No OpKernel was registered to support Op 'ApplyGradientDescent'" in \
        info.value.message


# -- concurrency --------------------------------------------------------------------------
@pytest.mark.parametrize("resource", [False, True])
async def test_concurrent_steps_lose_no_update(resource):
    """Many runs of one update (large enough for the pool) in flight together: every
    step lands, as TF's locking promises."""
    n, steps = 70_000, 24
    g = af.Graph()
    with g.as_default():
        var = af.Variable(np.zeros(n, np.float32), name="var", use_resource=resource)
        accum = af.Variable(np.zeros(n, np.float32), name="accum", use_resource=resource)
        grad = af.constant(np.ones(n, np.float32), name="grad")
        if resource:
            op = apply_op("ResourceApplyMomentum", var=var.handle, accum=accum.handle,
                          lr=1.0, grad=grad, momentum=1.0, name="update")
        else:
            op = apply_op("ApplyMomentum", var=var._ref(), accum=accum._ref(), lr=1.0, grad=grad,
                          momentum=1.0, name="update")
        init = af.global_variables_initializer()
        read = var.read_value() if resource else af.identity(var)
    async with af.Session(graph=g) as sess:
        await sess.run(init)
        await asyncio.gather(*(sess.run(op) for _ in range(steps)))
        got = await sess.run(read)
    # accum after k steps is k; var is minus the sum 1 + 2 + ... + steps
    np.testing.assert_array_equal(got, np.full(n, -steps * (steps + 1) / 2, np.float32))


async def test_sparse_duplicates_apply_in_order():
    """A row named twice is updated twice, the second from the first (SGD-like
    proximal descent without regularization: the rows' sum)."""
    g = af.Graph()
    with g.as_default():
        var = af.Variable(np.zeros((3, 2), np.float32), name="var", use_resource=True)
        op = apply_op("ResourceSparseApplyProximalGradientDescent", var=var.handle,
                      alpha=1.0, l1=0.0, l2=0.0, grad=np.ones((4, 2), np.float32),
                      indices=[2, 0, 2, 2], name="update")
        read = var.read_value()
    async with af.Session(graph=g) as sess:
        await sess.run(var.initializer)
        await sess.run(op)
        got = await sess.run(read)
    np.testing.assert_array_equal(got, [[-1, -1], [0, 0], [-3, -3]])
