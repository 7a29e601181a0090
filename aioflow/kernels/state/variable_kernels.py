"""CPU kernels of TF's ref variables: VariableV2 (and legacy Variable), Assign, AssignAdd,
AssignSub, IsVariableInitialized, CountUpTo, RefIdentity, Scatter{Update,Add,Sub,Mul,Div,
Min,Max} and ScatterNd{Update,Add,Sub}, with TF's semantics and messages.

A variable lives in the device's ResourceMgr under (container, shared_name or the node's
name), so it outlives runs and every executor of the session sees the same one. The ref
these ops output is the variable's `Var` (aioflow/framework/var.py); updates change its
buffer in place (a ref read earlier aliases it, as in TF), under the variable's lock, so
concurrent runs lose no update whatever `use_locking` says.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.framework.var import LEGACY_VAR_TYPE, Var
from aioflow.kernels.array.gather_scatter_nd_kernels import (
    _bad_rows,
    _check_scatter_shapes,
    _out_of_range,
)
from aioflow.kernels.math.cwise_kernels import BIG, shape_str


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _type_name(dtype, ref: bool = False) -> str:
    """TF's DataTypeString: float, double, int32, float_ref, ..."""
    from aioflow.framework.node_def_util import tf_type_name

    enum = dtypes.as_dtype(dtype).as_datatype_enum
    return tf_type_name(enum + 100 if ref else enum)


def requested_input(ctx, index: int) -> str:
    """The node's input `index` as its NodeDef names it (TF's requested_input)."""
    inputs = ctx.node_def.input
    return inputs[index] if index < len(inputs) else f"input {index}"


def initialized_value(var: Var, name: str) -> np.ndarray:
    """The variable's buffer; FailedPreconditionError in TF's words when uninitialized."""
    value = var.value
    if value is None:
        raise errors.FailedPreconditionError(
            None, None, f"Attempting to use uninitialized value {name}")
    return value


def as_value(value, dtype) -> np.ndarray:
    """A fresh array of `dtype` holding `value` (a variable never aliases its input)."""
    return np.array(value, dtype=dtypes.as_dtype(dtype).as_numpy_dtype, copy=True)


class _RefKernel(OpKernel):
    """A kernel whose input 0 is a ref: its name for the messages; the pool takes calls
    whose last input is large."""

    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self.ref_name = requested_input(ctx, 0)

    def is_expensive(self, inputs: list) -> bool:
        return len(inputs) > 1 and np.size(inputs[-1]) > BIG


# -- variables ------------------------------------------------------------------------------
class VariableOp(OpKernel):
    """VariableV2 / Variable: the variable of (container, shared_name or node name)."""

    # The lookup changes nothing once the variable exists (the first run creates it, and
    # a run again finds the same one): it may run inside a compiled segment, as
    # ReadVariableOp does, with the `/read` Identities beside it (a training step's 20
    # variables and 8 reads: one executor item instead of 28).
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("dtype")
        shape = ctx.get_attr("shape")
        dims = None if shape.rank is None else shape.as_list()
        self.shape = None if dims is None or None in dims else tuple(dims)
        self.container = ctx.get_attr("container")
        self.shared_name = ctx.get_attr("shared_name") or self.name
        if isinstance(self.container, bytes):
            self.container = self.container.decode("utf-8", "surrogateescape")
        if isinstance(self.shared_name, bytes):
            self.shared_name = self.shared_name.decode("utf-8", "surrogateescape")

    def compute(self, ctx, inputs):
        var = ctx.resource_mgr.lookup_or_create(
            self.container, LEGACY_VAR_TYPE, self.shared_name, self._create)
        if var.dtype is not self.dtype and var.dtype != self.dtype:  # (same object: ~0.6 µs)
            raise errors.InternalError(
                None, None, f"Output 0 of type {_type_name(var.dtype, True)} does not match "
                            f"declared output type {_type_name(self.dtype, True)} for node "
                            f"{{{{node {self.name}}}}}")
        return (var,)

    def _create(self) -> Var:
        return Var(self.shared_name, self.dtype, self.shape)


register_kernel("VariableV2")(VariableOp)
register_kernel("Variable")(VariableOp)


@register_kernel("Assign")
class AssignOp(_RefKernel):
    """ref = value: into the buffer when the shapes agree (earlier ref reads see it, as
    TF's copy into the old lhs), else a new buffer; validate_shape compares with the
    variable's shape (its declared shape while uninitialized)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.validate_shape = ctx.get_attr("validate_shape", True)

    def compute(self, ctx, inputs):
        var, value = inputs
        value = np.asarray(value)
        with var.lock:
            old = var.value
            lhs = old.shape if old is not None else getattr(var, "shape", None)
            if self.validate_shape and lhs is not None and tuple(lhs) != value.shape:
                raise _invalid(f"Assign requires shapes of both tensors to match. lhs shape= "
                               f"{shape_str(lhs)} rhs shape= {shape_str(value.shape)}")
            if old is not None and old.shape == value.shape and old.flags.writeable:
                np.copyto(old, value)
            else:
                var.value = as_value(value, var.dtype)
        return (var,)


class _AssignUpdate(_RefKernel):
    """AssignAdd / AssignSub: in place, under the variable's lock."""

    ufunc = np.add

    def compute(self, ctx, inputs):
        var, value = inputs
        with var.lock:
            buf = initialized_value(var, self.ref_name)
            if buf.size != np.size(value):
                raise _invalid("Parameters and update must be the same size")
            self.ufunc(buf, np.reshape(value, buf.shape), out=buf)
        return (var,)


@register_kernel("AssignAdd")
class AssignAddOp(_AssignUpdate):
    ufunc = np.add


@register_kernel("AssignSub")
class AssignSubOp(_AssignUpdate):
    ufunc = np.subtract


@register_kernel("IsVariableInitialized")
class IsVariableInitializedOp(OpKernel):
    def compute(self, ctx, inputs):
        return (np.asarray(inputs[0].value is not None),)


@register_kernel("RefIdentity")
class RefIdentityOp(OpKernel):
    """Forwards the ref (the variable itself)."""

    def compute(self, ctx, inputs):
        return (inputs[0],)


@register_kernel("CountUpTo")
class CountUpToOp(_RefKernel):
    """Increments a scalar variable and returns its old value, up to `limit`."""

    expensive = False

    def __init__(self, ctx):
        super().__init__(ctx)
        self.limit = ctx.get_attr("limit")

    def compute(self, ctx, inputs):
        var = inputs[0]
        with var.lock:
            buf = initialized_value(var, self.ref_name)
            if buf.ndim != 0:
                raise _invalid(f"input is not a scalar: {shape_str(buf.shape)}")
            before = buf[()]
            if before >= self.limit:
                raise errors.OutOfRangeError(None, None, f"Reached limit of {self.limit}")
            buf[()] = before + 1
        return (np.asarray(before),)


# -- scatter (shared with the resource kernels) ---------------------------------------------
def check_indices(indices, first_dim: int) -> np.ndarray:
    """Flat int64 indices, each in [0, first_dim); TF's message for the first that is not."""
    flat = np.asarray(indices).reshape(-1).astype(np.int64, copy=False)
    bad = (flat < 0) | (flat >= first_dim)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _invalid(f"indices[{i}] = {flat[i]} is not in [0, {first_dim})")
    return flat


def scatter_rows(buf: np.ndarray, indices, updates, mode: str) -> None:
    """TF's scatter functors on `buf` (in place): rows `indices` of it updated by `updates`
    (indices.shape + buf.shape[1:], or a scalar), duplicates applied in order."""
    indices = np.asarray(indices)
    updates = np.asarray(updates)
    if buf.ndim < 1:
        raise _invalid(f"params must be at least 1-D, got shape {shape_str(buf.shape)}")
    want = indices.shape + buf.shape[1:]
    if updates.ndim != 0 and updates.shape != want:
        raise _invalid(f"Must have updates.shape = indices.shape + params.shape[1:] or "
                       f"updates.shape = [], got updates.shape {shape_str(updates.shape)}, "
                       f"indices.shape {shape_str(indices.shape)}, params.shape "
                       f"{shape_str(buf.shape)}")
    flat = check_indices(indices, buf.shape[0])
    if flat.size == 0:
        return
    rows = np.broadcast_to(updates, want).reshape((flat.size,) + buf.shape[1:])
    apply_at(buf, flat, rows, mode)


def apply_at(buf: np.ndarray, index, rows, mode: str) -> None:
    """`buf[index] (op)= rows`, unbuffered (repeated indices apply each in order)."""
    if mode == "update":
        buf[index] = rows
    elif mode == "div" and buf.dtype.kind in "iu":
        for k in range(len(rows)):
            at = tuple(ix[k] for ix in index) if isinstance(index, tuple) else index[k]
            buf[at] = _trunc_div(buf[at], rows[k])
    else:
        _UFUNCS[mode].at(buf, index, rows)


def _trunc_div(a, b):
    """C's integer division (toward zero), as TF's for integer scatter_div."""
    if np.any(b == 0):
        raise _invalid("Integer division by zero")
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(np.asarray(a).dtype)


_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
           "min": np.minimum, "max": np.maximum}


class _ScatterOp(_RefKernel):
    mode = "update"

    def compute(self, ctx, inputs):
        var, indices, updates = inputs
        with var.lock:
            buf = initialized_value(var, self.ref_name)
            scatter_rows(buf, indices, updates, self.mode)
        return (var,)


for _op, _mode in (("ScatterUpdate", "update"), ("ScatterAdd", "add"), ("ScatterSub", "sub"),
                   ("ScatterMul", "mul"), ("ScatterDiv", "div"), ("ScatterMin", "min"),
                   ("ScatterMax", "max")):
    register_kernel(_op)(type(_op + "Op", (_ScatterOp,), {"mode": _mode}))


def scatter_nd(buf: np.ndarray, indices, updates, mode: str) -> None:
    """ScatterNd{Update,Add,Sub} on `buf` in place: TF's shape checks and messages."""
    indices = np.asarray(indices)
    updates = np.asarray(updates)
    if indices.ndim < 1:
        raise _invalid(f"Indices shape must have rank at least one. Found:"
                       f"{shape_str(indices.shape)}")
    _check_scatter_shapes(indices, updates, list(buf.shape))
    depth = indices.shape[-1]
    if indices.size == 0 or buf.size == 0:
        return
    flat = indices.reshape(-1, depth).astype(np.int64, copy=False)
    bad = _bad_rows(flat, buf.shape[:depth])
    if bad.any():
        raise _out_of_range(flat, bad, indices.shape[:-1],
                            f"does not index into shape {shape_str(buf.shape)}")
    rows = updates.reshape((flat.shape[0],) + buf.shape[depth:])
    apply_at(buf, tuple(flat.T), rows, mode)


class _ScatterNdOp(_RefKernel):
    mode = "update"

    def compute(self, ctx, inputs):
        var, indices, updates = inputs
        with var.lock:
            buf = initialized_value(var, self.ref_name)
            scatter_nd(buf, indices, updates, self.mode)
        return (var,)


for _op, _mode in (("ScatterNdUpdate", "update"), ("ScatterNdAdd", "add"),
                   ("ScatterNdSub", "sub")):
    register_kernel(_op)(type(_op + "Op", (_ScatterNdOp,), {"mode": _mode}))
