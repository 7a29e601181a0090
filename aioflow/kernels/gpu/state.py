"""Variables on the GPU, ref and resource: the value is a device array; reads hand it
out as it is (device values are never written in place, so a value read earlier never
changes), updates make a new value on the compute stream, where the stream's order
makes each read-modify-write whole. Handles, names and flags stay in host memory."""

from __future__ import annotations

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, registered_kernels
from aioflow.framework.var import VAR_TYPE, Var

from ..state import resource_variable_kernels as rv
from ..state import variable_kernels as vk
from .base import FLOATS, GpuKernel, device_context_of, register_gpu

_TYPES = list(FLOATS) + ["int64"]


class DeviceVar(Var):
    """A ref variable whose value is in device memory: a ref read is the value itself."""

    __slots__ = ()

    def read_ref(self, input_name: str):
        value = self.value
        if value is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {input_name}")
        return value


class VariableOp(vk.VariableOp):
    def _create(self) -> Var:
        return DeviceVar(self.shared_name, self.dtype, self.shape)


class AssignOp(OpKernel):
    """ref = value (a device value: it becomes the variable's, as values never change)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.device = device_context_of(ctx)
        self.validate_shape = ctx.get_attr("validate_shape", True)

    def compute(self, ctx, inputs):
        var, value = inputs
        if not self.device.is_device_value(value):
            raise errors.InternalError(
                None, None, f"Input 1 of node {self.name} is in host memory, but its kernel "
                            f"on {self.device.device_name} reads it from device memory")
        with var.lock:
            old = var.value
            lhs = old.shape if old is not None else var.shape
            if self.validate_shape and lhs is not None and tuple(lhs) != tuple(value.shape):
                raise errors.InvalidArgumentError(
                    None, None, f"Assign requires shapes of both tensors to match. lhs shape= "
                                f"{vk.shape_str(lhs)} rhs shape= {vk.shape_str(value.shape)}")
            var.value = value
        return (var,)


class _UpdateOp(GpuKernel):
    """value = value op delta, on the compute stream (reads and writes the variable there)."""

    subtract = False
    resource = False

    def start_async(self, ctx, inputs, done):
        target, delta = inputs
        var = rv.lookup_var(ctx, rv.handle_of(target)) if self.resource else target
        device = self.device

        def work(xp, delta_raw):
            old = var.value
            if old is None:
                raise errors.FailedPreconditionError(
                    None, None, f"Attempting to use uninitialized value {var.name}")
            raw = device.unwrap(old)
            if raw.size != delta_raw.size:
                raise errors.InvalidArgumentError(
                    None, None, "Parameters and update must be the same size")
            delta_raw = delta_raw.reshape(raw.shape)
            var.value = device.wrap(raw - delta_raw if self.subtract else raw + delta_raw)
            return ()

        finished = (lambda outs, error: done((var,), None) if error is None
                    else done(None, error)) if not self.resource else done
        device.launch(ctx, self.name, work, [delta], frozenset(), frozenset(), finished)
        return None


class ReadVariableOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.cpu = rv.ReadVariableOp(ctx)

    def compute(self, ctx, inputs):
        handle = rv.handle_of(inputs[0])
        try:
            var = rv.lookup_var(ctx, handle)
        except errors.NotFoundError:
            return self.cpu.compute(ctx, inputs)  # (its error, in TF's words)
        if var.value is None:
            return self.cpu.compute(ctx, inputs)
        return (var.value,)


class AssignVariableOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.device = device_context_of(ctx)
        self.dtype = ctx.get_attr("dtype")

    def compute(self, ctx, inputs):
        handle = rv.handle_of(inputs[0])
        value = inputs[1]
        if not self.device.is_device_value(value):
            raise errors.InternalError(
                None, None, f"Input 1 of node {self.name} is in host memory, but its kernel "
                            f"on {self.device.device_name} reads it from device memory")
        var = ctx.resource_mgr.lookup_or_create(
            handle.container, VAR_TYPE, handle.name, lambda: Var(handle.name, self.dtype))
        with var.lock:
            var.value = value
        return ()


def _register_all() -> None:
    cpu = registered_kernels()
    for op in ("VariableV2", "Variable"):
        register_gpu(op, dtype=_TYPES)(VariableOp)
    register_gpu("Assign", T=_TYPES)(AssignOp)
    register_gpu("AssignAdd", T=_TYPES)(type("GpuAssignAddOp", (_UpdateOp,), {}))
    register_gpu("AssignSub", T=_TYPES)(type("GpuAssignSubOp", (_UpdateOp,),
                                             {"subtract": True}))
    register_gpu("IsVariableInitialized", host_memory=("is_initialized",), dtype=_TYPES)(
        cpu[("IsVariableInitialized", "CPU")][0])
    register_gpu("VarHandleOp", host_memory=("resource",), dtype=_TYPES)(rv.VarHandleOp)
    register_gpu("ReadVariableOp", host_memory=("resource",), dtype=_TYPES)(ReadVariableOp)
    register_gpu("AssignVariableOp", host_memory=("resource",), dtype=_TYPES)(AssignVariableOp)
    register_gpu("AssignAddVariableOp", host_memory=("resource",), dtype=_TYPES)(
        type("GpuAssignAddVariableOp", (_UpdateOp,), {"resource": True}))
    register_gpu("AssignSubVariableOp", host_memory=("resource",), dtype=_TYPES)(
        type("GpuAssignSubVariableOp", (_UpdateOp,), {"resource": True, "subtract": True}))
    register_gpu("VarIsInitializedOp", host_memory=("resource", "is_initialized"))(
        rv.VarIsInitializedOp)


_register_all()
