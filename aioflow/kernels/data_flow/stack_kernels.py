"""Kernels of the stack ops (StackV2, StackPushV2, StackPopV2, StackCloseV2) with TF's
error messages. A stack lives for one step: StackV2 records it in the step context's
`step_resources`, so it is freed when the step ends, fails or is cancelled (with the
step's context), or earlier by StackCloseV2. While-loop gradients push each iteration's
forward values and pop them in the gradient loop, in reverse."""

from __future__ import annotations

import itertools
import threading

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, attr_text, register_kernel

_counter = itertools.count()


class Stack:
    """A step-local LIFO of tensors of one dtype (max_size < 0: unbounded)."""

    def __init__(self, name: str, elem_type, max_size: int):
        self.name = name
        self.elem_type = elem_type
        self.max_size = max_size
        self.values: list = []
        self.closed = False
        self.lock = threading.Lock()

    def _check_open(self) -> None:
        if self.closed:
            raise errors.InvalidArgumentError(
                None, None, f"Stack[{self.name}] has already been closed.")

    def push(self, value) -> None:
        with self.lock:
            self._check_open()
            if 0 <= self.max_size <= len(self.values):
                raise errors.InvalidArgumentError(
                    None, None, f"Stack[{self.name}] overflowed its max_size "
                    f"({self.max_size})")
            self.values.append(value)

    def pop(self):
        with self.lock:
            self._check_open()
            if not self.values:
                raise errors.InvalidArgumentError(
                    None, None, f"Stack[{self.name}] is empty.")
            return self.values.pop()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.values = []


def _stack_of(handle) -> Stack:
    if type(handle) is np.ndarray and handle.dtype == object and handle.size == 1:
        handle = handle[()] if handle.ndim == 0 else handle.reshape(())[()]
    if not isinstance(handle, Stack):
        raise errors.InvalidArgumentError(
            None, None, f"Expected a stack resource handle, got {type(handle).__name__}")
    return handle


@register_kernel("StackV2", "CPU")
class StackOp(OpKernel):
    """Create a step-local stack; outputs its handle."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.elem_type = ctx.get_attr("elem_type")
        name = ctx.get_attr("stack_name", b"")
        name = attr_text(name)
        self.stack_name = name or ctx.name

    def compute(self, ctx, inputs):
        max_size = inputs[0]
        if np.ndim(max_size) != 0:
            raise errors.InvalidArgumentError(
                None, None, "max_size must be a scalar, but had shape: "
                f"[{','.join(str(d) for d in np.shape(max_size))}]")
        name = f"{self.stack_name}_{next(_counter)}"
        stack = Stack(name, self.elem_type, int(max_size))
        resources = getattr(ctx, "step_resources", None)
        if resources is not None:
            resources[("_stacks", name)] = stack
        handle = np.empty((), dtype=object)
        handle[()] = stack
        return (handle,)


@register_kernel("StackPushV2", "CPU")
class StackPushOp(OpKernel):
    """Push `elem` (kept in memory: swap_memory has no host/device distinction on the
    CPU); outputs `elem`."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("T")

    def compute(self, ctx, inputs):
        stack = _stack_of(inputs[0])
        elem = inputs[1]
        if stack.elem_type is not self.dtype and stack.elem_type != self.dtype:
            raise errors.InvalidArgumentError(
                None, None, f"Must have type {dtypes.as_dtype(stack.elem_type).name} but "
                f"got {self.dtype.name}")
        stack.push(elem)
        return (elem,)


@register_kernel("StackPopV2", "CPU")
class StackPopOp(OpKernel):
    """Pop the most recently pushed value."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.elem_type = ctx.get_attr("elem_type")

    def compute(self, ctx, inputs):
        stack = _stack_of(inputs[0])
        value = stack.pop()
        if stack.elem_type is not self.elem_type and stack.elem_type != self.elem_type:
            raise errors.InvalidArgumentError(
                None, None, f"Stack[{stack.name}] has type "
                f"{dtypes.as_dtype(stack.elem_type).name} but requested type "
                f"{dtypes.as_dtype(self.elem_type).name}")
        return (value,)


@register_kernel("StackCloseV2", "CPU")
class StackCloseOp(OpKernel):
    """Close the stack and free its values."""

    def compute(self, ctx, inputs):
        stack = _stack_of(inputs[0])
        stack.close()
        resources = getattr(ctx, "step_resources", None)
        if resources is not None:
            resources.pop(("_stacks", stack.name), None)
        return ()
