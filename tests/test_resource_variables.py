"""Resource variables: VarHandleOp / ReadVariableOp / AssignVariableOp / ... kernels with
TF's semantics and words (checked side by side with TF 2.21), copy-on-write, the
session's shared stateful kernels (OpSegment), Session.reset, concurrency."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import state_ops

pytestmark = pytest.mark.usefixtures("segments_mode", "executor_type")

_MISSING = ("Could not find variable {0}. This could mean that the variable has been "
            "deleted. In TF1, it can also mean the variable is uninitialized. Debug info: "
            "container=localhost, status error message=Resource localhost/{0}/"
            "N10tensorflow3VarE does not exist.")


def _handle(name: str, dtype=af.float32, shape=(2,)):
    return state_ops.var_handle_op(dtype, list(shape), shared_name=name)


async def test_uninitialized_read_and_lookup_errors():
    g = af.Graph()
    with g.as_default():
        h = _handle("zz")
        read = state_ops.read_variable_op(h, af.float32)
        is_init = state_ops.var_is_initialized_op(h)
        shape = state_ops.variable_shape(h)
        destroy = state_ops.destroy_resource_op(h, ignore_lookup_error=False)
        destroy_quiet = state_ops.destroy_resource_op(h)
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.FailedPreconditionError) as e:
            await sess.run(read)
        assert e.value.message.startswith(_MISSING.format("zz") + "\n")
        assert e.value.node_def.name == "ReadVariableOp"
        assert not await sess.run(is_init)
        with pytest.raises(errors.NotFoundError,
                           match="^Resource localhost/zz/N10tensorflow3VarE does not exist."):
            await sess.run(shape)
        with pytest.raises(errors.NotFoundError,
                           match="^Resource localhost/zz/<unknown> does not exist."):
            await sess.run(destroy)
        assert await sess.run(destroy_quiet) is None


async def test_assign_read_update_destroy():
    g = af.Graph()
    with g.as_default():
        h = _handle("r")
        x = af.placeholder(af.float32)
        assign = state_ops.assign_variable_op(h, x)
        strict = state_ops.assign_variable_op(h, x, validate_shape=True)
        add = apply_op("AssignAddVariableOp", resource=h, value=x)
        sub = apply_op("AssignSubVariableOp", resource=h, value=x)
        read = state_ops.read_variable_op(h, af.float32)
        wrong = state_ops.read_variable_op(_handle("r", af.int32), af.int32)
        assign_int = state_ops.assign_variable_op(_handle("r", af.int32), [1, 2])
        shape = state_ops.variable_shape(h, out_type=af.int64)
        destroy = state_ops.destroy_resource_op(h)
    async with af.Session(graph=g) as sess:
        await sess.run(assign, {x: [1.0, 2.0]})
        await sess.run(add, {x: [10.0, 10.0]})
        await sess.run(sub, {x: [1.0, 2.0]})
        np.testing.assert_array_equal(await sess.run(read), [10.0, 10.0])
        np.testing.assert_array_equal(await sess.run(shape), [2])
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"^Cannot update variable with shape \[2\] using a Tensor with "
                                 r"shape \[3\], shapes must be equal."):
            await sess.run(add, {x: [1.0, 2.0, 3.0]})
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"^Trying to assign to variable with tensor with wrong shape. "
                                 r"Expected \[2\] got \[3\]"):
            await sess.run(strict, {x: [1.0, 2.0, 3.0]})
        with pytest.raises(errors.InvalidArgumentError,
                           match="^Trying to read variable r from Container: localhost with "
                                 "wrong dtype. Expected int32 got float"):
            await sess.run(wrong)
        with pytest.raises(errors.InvalidArgumentError,
                           match="^Trying to assign variable with wrong dtype. Expected float "
                                 "got int32"):
            await sess.run(assign_int)
        await sess.run(assign, {x: [[1.0, 2.0, 3.0]]})  # validate_shape=False: any shape
        np.testing.assert_array_equal(await sess.run(shape), [1, 3])
        await sess.run(destroy)
        with pytest.raises(errors.FailedPreconditionError):
            await sess.run(read)


async def test_copy_on_write():
    """A value read before an update, in the same run or an earlier one, keeps the value
    it had (TF's copy-on-write), whatever updates it in place later."""
    g = af.Graph()
    with g.as_default():
        v = af.Variable([1.0, 2.0], name="v", use_resource=True)
        before = v.read_value()
        with af.control_dependencies([before]):
            inc = v.assign_add([1.0, 1.0])
        scatter = af.scatter_add(v, [0], [100.0])
    async with af.Session(graph=g) as sess:
        await sess.run(v.initializer)
        got_before, got_after = await sess.run([before, inc])
        np.testing.assert_array_equal(got_before, [1.0, 2.0])
        np.testing.assert_array_equal(got_after, [2.0, 3.0])
        kept = await sess.run(before)
        np.testing.assert_array_equal(await sess.run(scatter), [102.0, 3.0])
        np.testing.assert_array_equal(kept, [2.0, 3.0])


async def test_gather_and_scatter():
    g = af.Graph()
    with g.as_default():
        v = af.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="v", use_resource=True)
        rows = v.sparse_read([2, 0])
        gather = af.gather(v, [[1], [1]])
        idx = af.placeholder(af.int32, [None])
        bad = v.sparse_read(idx)
        ops = {name: getattr(af, f"scatter_{name}")(v, [0, 2], [[10.0, 10.0], [2.0, 2.0]])
               for name in ("update", "add", "sub", "mul", "div", "min", "max")}
    want = {"update": [[10, 10], [3, 4], [2, 2]], "add": [[11, 12], [3, 4], [7, 8]],
            "sub": [[-9, -8], [3, 4], [3, 4]], "mul": [[10, 20], [3, 4], [10, 12]],
            "div": [[0.1, 0.2], [3, 4], [2.5, 3]], "min": [[1, 2], [3, 4], [2, 2]],
            "max": [[10, 10], [3, 4], [5, 6]]}
    async with af.Session(graph=g) as sess:
        await sess.run(v.initializer)
        np.testing.assert_array_equal(await sess.run(rows), [[5, 6], [1, 2]])
        np.testing.assert_array_equal(await sess.run(gather), [[[3, 4]], [[3, 4]]])
        with pytest.raises(errors.InvalidArgumentError, match=r"^indices\[1\] = 3 is not in "
                                                              r"\[0, 3\)"):
            await sess.run(bad, {idx: [0, 3]})
        for name, op in ops.items():
            await sess.run(v.initializer)
            np.testing.assert_allclose(await sess.run(op), want[name], rtol=1e-6)


async def test_shared_name_and_reset():
    """Two handles of one shared_name are one variable; Session.reset closes every open
    session (TF)."""
    g = af.Graph()
    with g.as_default():
        a = state_ops.assign_variable_op(_handle("shared"), [1.0, 2.0])
        read = state_ops.read_variable_op(_handle("shared"), af.float32)
        other = state_ops.read_variable_op(
            state_ops.var_handle_op(af.float32, [2], container="c", shared_name="shared"),
            af.float32)
    async with af.Session(graph=g) as sess, af.Session(graph=g) as sess2:
        await sess.run(a)
        await sess2.run(a)
        np.testing.assert_array_equal(await sess.run(read), [1.0, 2.0])
        with pytest.raises(errors.FailedPreconditionError, match="container=c,"):
            await sess.run(other)
        # As TF 2.21 (tests/data/direct_session_tf.json): reset clears the containers
        # of every open session, then closes them all.
        af.Session.reset("", ["c"])
        for s in (sess, sess2):
            with pytest.raises(errors.CancelledError, match="Session has been closed."):
                await s.run(read)


async def test_anonymous_variable_is_shared_by_executors():
    """A stateful kernel is one per session (TF's OpSegment): an anonymous variable's
    handle op seen from two fetch signatures names one variable."""
    from aioflow.framework.var import ANONYMOUS_NAME

    g = af.Graph()
    with g.as_default():
        h = state_ops.var_handle_op(af.float32, [], shared_name=ANONYMOUS_NAME)
        assign = state_ops.assign_variable_op(h, 5.0)
        read = state_ops.read_variable_op(h, af.float32)
        plus = read + 1
    async with af.Session(graph=g) as sess:
        await sess.run(assign)
        assert await sess.run(read) == 5.0
        assert await sess.run(plus) == 6.0
    async with af.Session(graph=g) as sess:  # another session: another variable
        with pytest.raises(errors.FailedPreconditionError):
            await sess.run(read)


@pytest.mark.executor_types()  # the default executor's thread pool
@pytest.mark.parametrize("on_pool", [False, True])
async def test_concurrent_assign_add_loses_nothing(on_pool, monkeypatch):
    """Thousands of gathered assign_add runs, inline and with the kernel on the pool,
    with reads in flight (copy-on-write under the variable's lock)."""
    from aioflow.kernels.state import resource_variable_kernels
    threads = set()
    compute = resource_variable_kernels.AssignAddVariableOp.compute

    def recording(self, ctx, inputs):
        threads.add(threading.current_thread().name.startswith("aioflow-CPU-pool"))
        return compute(self, ctx, inputs)

    monkeypatch.setattr(resource_variable_kernels.AssignAddVariableOp, "compute", recording)
    if on_pool:
        monkeypatch.setattr(resource_variable_kernels.AssignAddVariableOp, "expensive", True)
    g = af.Graph()
    with g.as_default():
        v = af.Variable(np.zeros(4, np.int64), name="v", use_resource=True)
        inc = v.assign_add(np.ones(4, np.int64), read_value=False)
        read = v.read_value()
    async with af.Session(graph=g) as sess:
        await sess.run(v.initializer)
        runs = [sess.run(inc if i % 10 else read) for i in range(3300)]
        results = await asyncio.gather(*runs)
        np.testing.assert_array_equal(await sess.run(read), [2970] * 4)
        seen = [r[0] for r in results if r is not None]
        assert all(0 <= x <= 2970 for x in seen)
    assert threads == {on_pool}


def test_resource_variable_api():
    g = af.Graph()
    with g.as_default():
        v = af.get_variable("v", [2], initializer=af.zeros_initializer(), use_resource=True)
        with af.variable_scope("s", use_resource=True):
            w = af.get_variable("w", [], dtype=af.int32)
        assert w.op.type == "VarHandleOp" and w.name == "s/w:0"
        assert v.dtype == af.float32 and v.shape.as_list() == [2]
        assert v.handle.dtype == af.resource
        assert v.value().op.type == "ReadVariableOp"
        assert af.convert_to_tensor(v).shape.as_list() == [2]
        assert af.global_variables() == [v, w]
