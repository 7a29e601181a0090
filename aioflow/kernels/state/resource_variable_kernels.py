"""CPU kernels of TF's resource variables: VarHandleOp, ReadVariableOp, AssignVariableOp,
AssignAdd/SubVariableOp, ResourceCountUpTo, ResourceGather,
ResourceScatter{Update,Add,Sub,Mul,Div,Min,Max}, VarIsInitializedOp, VariableShape and
DestroyResourceOp, with TF's messages.

A handle (a 0-d object array holding a ResourceHandle) names the variable's container and
name; the variable itself lives in the device's ResourceMgr, created by the first assign.
Reads return the buffer read-only; updates take the variable's lock and copy the buffer
first when a reader still holds it (copy-on-write): a value once read never changes.
"""

from __future__ import annotations

import itertools

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.framework.var import ANONYMOUS_NAME, VAR_TYPE, ResourceHandle, Var, handle_value
from aioflow.kernels.math.cwise_kernels import BIG, shape_str
from aioflow.kernels.state.variable_kernels import _type_name, as_value, check_indices, scatter_rows

_CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
_anonymous = itertools.count()


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _str_attr(ctx, name: str) -> str:
    value = ctx.get_attr(name, "")  # TF takes any bytes: non-UTF-8 ones are kept, escaped
    return value.decode(errors="backslashreplace") if isinstance(value, bytes) else value


def handle_of(value) -> ResourceHandle:
    """The ResourceHandle a resource input carries."""
    handle = value[()] if isinstance(value, np.ndarray) else value
    if not isinstance(handle, ResourceHandle):
        raise _invalid(f"Expected a resource handle, got {type(handle).__name__}")
    return handle


def lookup_var(ctx, handle: ResourceHandle) -> Var:
    """The variable a handle names; NotFoundError in TF's words when there is none."""
    return ctx.resource_mgr.lookup(handle.container, VAR_TYPE, handle.name)


def initialized(var: Var, handle: ResourceHandle) -> np.ndarray:
    value = var.value
    if value is None:
        raise errors.FailedPreconditionError(
            None, None, f"Read variable failure {handle.name}. It could mean the variable is "
                        f"uninitialized or the variable is on another device ")
    return value


class _ResourceKernel(OpKernel):
    """Calls whose last input is large go to the pool."""

    expensive = None

    def is_expensive(self, inputs: list) -> bool:
        return len(inputs) > 1 and np.size(inputs[-1]) > BIG


@register_kernel("VarHandleOp")
class VarHandleOp(OpKernel):
    """The handle of (container, shared_name); an anonymous name makes one per kernel
    (shared by the session's executors, which share this kernel)."""

    # The same handle for the same ResourceMgr, no side effect: it may run inside a
    # compiled region (a graph reading its variables can then be one compiled step).
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.container = _str_attr(ctx, "container")
        self.shared_name = _str_attr(ctx, "shared_name")
        if self.shared_name == ANONYMOUS_NAME:
            self.shared_name = f"{ANONYMOUS_NAME}_{next(_anonymous)}"
        self.dtype = ctx.get_attr("dtype")
        self.shape = ctx.get_attr("shape")
        self.device = ctx.node_def.device or _CPU0
        self._cached = (None, None)

    def compute(self, ctx, inputs):
        mgr, value = self._cached
        if mgr is not ctx.resource_mgr:
            handle = ResourceHandle(self.device, self.container or ctx.resource_mgr.
                                    default_container, self.shared_name, VAR_TYPE,
                                    ((self.dtype, self.shape),))
            value = handle_value(handle)
            value.flags.writeable = False
            self._cached = (ctx.resource_mgr, value)
        return (value,)


@register_kernel("ReadVariableOp")
class ReadVariableOp(OpKernel):
    """The variable's value, read-only and never changed later (copy-on-write)."""

    # A read has no side effect and produces its output: it may run inside a compiled
    # segment, loop or function body (a Keras RNN's While body reads its kernels each
    # step), reading the variable's current value through ctx.resource_mgr; an error
    # (an uninitialized variable) makes the region run node by node, naming this node.
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("dtype")

    def compute(self, ctx, inputs):
        handle = handle_of(inputs[0])
        try:
            var = lookup_var(ctx, handle)
            value = var.value
            if value is None:
                raise errors.NotFoundError(None, None, "uninitialized")
        except errors.NotFoundError as e:
            raise errors.FailedPreconditionError(
                None, None, f"Could not find variable {handle.name}. This could mean that the "
                            f"variable has been deleted. In TF1, it can also mean the variable "
                            f"is uninitialized. Debug info: container={handle.container}, "
                            f"status error message={e.message}") from None
        if var.dtype is not self.dtype and var.dtype != self.dtype:
            raise _invalid(f"Trying to read variable {handle.name} from Container: "
                           f"{handle.container} with wrong dtype. Expected "
                           f"{_type_name(self.dtype)} got {_type_name(var.dtype)}")
        with var.lock:  # an update under way finishes first; a later one sees this view
            view = var.value.view()
        view.flags.writeable = False
        return (view,)


@register_kernel("AssignVariableOp")
class AssignVariableOp(_ResourceKernel):
    """Creates the variable on first assign; a new buffer (readers keep the old one)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("dtype")
        self.validate_shape = ctx.get_attr("validate_shape", False)

    def compute(self, ctx, inputs):
        handle = handle_of(inputs[0])
        value = as_value(inputs[1], self.dtype)
        var = ctx.resource_mgr.lookup_or_create(
            handle.container, VAR_TYPE, handle.name, lambda: Var(handle.name, self.dtype))
        if var.dtype != self.dtype:
            raise _invalid(f"Trying to assign variable with wrong dtype. Expected "
                           f"{_type_name(var.dtype)} got {_type_name(self.dtype)}")
        with var.lock:
            old = var.value
            if self.validate_shape and old is not None and old.shape != value.shape:
                raise _invalid(f"Trying to assign to variable with tensor with wrong shape. "
                               f"Expected {shape_str(old.shape)} got "
                               f"{shape_str(value.shape)}")
            var.value = value
        return ()


class _AssignUpdateVariableOp(_ResourceKernel):
    ufunc = np.add

    def compute(self, ctx, inputs):
        handle = handle_of(inputs[0])
        var = lookup_var(ctx, handle)
        value = np.asarray(inputs[1])
        with var.lock:
            old = initialized(var, handle)
            if old.shape != value.shape:
                raise _invalid(f"Cannot update variable with shape {shape_str(old.shape)} "
                               f"using a Tensor with shape {shape_str(value.shape)}, shapes "
                               f"must be equal.")
            buf = var.writable()
            self.ufunc(buf, value, out=buf)
        return ()


@register_kernel("AssignAddVariableOp")
class AssignAddVariableOp(_AssignUpdateVariableOp):
    ufunc = np.add


@register_kernel("AssignSubVariableOp")
class AssignSubVariableOp(_AssignUpdateVariableOp):
    ufunc = np.subtract


@register_kernel("ResourceCountUpTo")
class ResourceCountUpToOp(_ResourceKernel):
    """Increments a scalar resource variable and returns its old value, up to `limit`
    (OutOfRangeError "Reached limit of N" once there): the epoch counter of a TF 2-written
    limit_epochs."""

    expensive = False

    def __init__(self, ctx):
        super().__init__(ctx)
        self.limit = ctx.get_attr("limit")

    def compute(self, ctx, inputs):
        handle = handle_of(inputs[0])
        var = lookup_var(ctx, handle)
        with var.lock:
            before = initialized(var, handle)
            if before.ndim != 0:
                raise _invalid(f"input is not a scalar: {shape_str(before.shape)}")
            value = before[()]
            if value >= self.limit:
                raise errors.OutOfRangeError(None, None, f"Reached limit of {self.limit}")
            buf = var.writable()
            buf[()] = value + 1
        return (np.asarray(value),)


@register_kernel("ResourceGather")
class ResourceGatherOp(_ResourceKernel):
    """Rows of the variable (batch_dims 0)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.batch_dims = ctx.get_attr("batch_dims", 0)

    def compute(self, ctx, inputs):
        handle = handle_of(inputs[0])
        var = lookup_var(ctx, handle)
        value = initialized(var, handle)
        if self.batch_dims != 0:
            raise errors.UnimplementedError(
                None, None, "ResourceGather with batch_dims != 0 is not supported by aioflow")
        if value.ndim < 1:
            raise _invalid(f"params must be at least 1 dimensional; got "
                           f"{shape_str(value.shape)}")
        indices = np.asarray(inputs[1])
        flat = check_indices(indices, value.shape[0])
        return (np.take(value, flat, axis=0).reshape(indices.shape + value.shape[1:]),)


class _ResourceScatterOp(_ResourceKernel):
    mode = "update"

    def compute(self, ctx, inputs):
        handle = handle_of(inputs[0])
        var = lookup_var(ctx, handle)
        with var.lock:
            initialized(var, handle)
            scatter_rows(var.writable(), inputs[1], inputs[2], self.mode)
        return ()


for _op, _mode in (("ResourceScatterUpdate", "update"), ("ResourceScatterAdd", "add"),
                   ("ResourceScatterSub", "sub"), ("ResourceScatterMul", "mul"),
                   ("ResourceScatterDiv", "div"), ("ResourceScatterMin", "min"),
                   ("ResourceScatterMax", "max")):
    register_kernel(_op)(type(_op + "Op", (_ResourceScatterOp,), {"mode": _mode}))


@register_kernel("VarIsInitializedOp")
class VarIsInitializedOp(OpKernel):
    def compute(self, ctx, inputs):
        handle = handle_of(inputs[0])
        try:
            var = lookup_var(ctx, handle)
        except errors.NotFoundError:
            return (np.asarray(False),)
        return (np.asarray(var.value is not None),)


@register_kernel("VariableShape")
class VariableShapeOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.out_type = dtypes.as_dtype(ctx.get_attr("out_type", dtypes.int32)).as_numpy_dtype

    def compute(self, ctx, inputs):
        handle = handle_of(inputs[0])
        value = initialized(lookup_var(ctx, handle), handle)
        return (np.asarray(value.shape, dtype=self.out_type).reshape(-1),)


@register_kernel("DestroyResourceOp")
class DestroyResourceOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.ignore_lookup_error = ctx.get_attr("ignore_lookup_error", True)

    def compute(self, ctx, inputs):
        handle = handle_of(inputs[0])
        try:
            ctx.resource_mgr.delete(handle.container, handle.maybe_type_name, handle.name)
        except errors.NotFoundError:
            if not self.ignore_lookup_error:
                raise errors.NotFoundError(
                    None, None, f"Resource {handle.container}/{handle.name}/<unknown> does "
                                f"not exist.") from None
        return ()
