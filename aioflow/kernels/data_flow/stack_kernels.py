"""Kernels of the stack ops (StackV2, StackPushV2, StackPopV2, StackCloseV2) with TF's
error messages. A stack lives for one step: StackV2 records it in the step context's
`step_resources`, so it is freed when the step ends, fails or is cancelled (with the
step's context), or earlier by StackCloseV2. While-loop gradients push each iteration's
forward values and pop them in the gradient loop, in reverse.

Push and pop change nothing but their stack, and a stack can be rolled back: a compiled
while loop (runtime/loop_segments.py) runs them when the handle is a loop invariant,
checkpointing the stack before the loop and restoring it before it runs the loop node
by node instead (OpKernel.undoable_input). A checkpoint costs nothing per value: it
keeps the length, and the values popped below it as they go (a gradient loop entered
once per outer iteration does not copy the stack each time)."""

from __future__ import annotations

import itertools
import threading

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, attr_text, register_kernel

_counter = itertools.count()


class _Checkpoint:
    """A stack's state when a compiled loop began: the values below `floor` are still
    the stack's; those from there to the length then were popped, in `popped`."""

    __slots__ = ("floor", "popped", "closed")

    def __init__(self, length: int, closed: bool):
        self.floor = length
        self.popped: list = []
        self.closed = closed


class Stack:
    """A step-local LIFO of tensors of one dtype (max_size < 0: unbounded)."""

    def __init__(self, name: str, elem_type, max_size: int):
        self.name = name
        self.elem_type = elem_type
        self.max_size = max_size
        self.values: list = []
        self.closed = False
        self.lock = threading.Lock()
        self._checkpoints: list[_Checkpoint] = []  # those not restored or released yet

    def _check_open(self) -> None:
        if self.closed:
            raise errors.InvalidArgumentError(
                None, None, f"Stack[{self.name}] has already been closed.")

    def push(self, value) -> None:
        with self.lock:
            if self.closed:
                self._check_open()
            if 0 <= self.max_size <= len(self.values):
                raise errors.InvalidArgumentError(
                    None, None, f"Stack[{self.name}] overflowed its max_size "
                    f"({self.max_size})")
            self.values.append(value)

    def pop(self):
        with self.lock:
            if self.closed:
                self._check_open()
            values = self.values
            if not values:
                raise errors.InvalidArgumentError(
                    None, None, f"Stack[{self.name}] is empty.")
            if self._checkpoints:
                self._keep_below(len(values) - 1)
            return values.pop()

    def close(self) -> None:
        with self.lock:
            if self._checkpoints:
                self._keep_below(0)
            self.closed = True
            self.values = []

    # -- undo for compiled loops (OpKernel.undoable_input) ---------------------------------
    def checkpoint(self) -> _Checkpoint:
        """The stack's state now, for `restore` (or `release` when no longer needed)."""
        with self.lock:
            token = _Checkpoint(len(self.values), self.closed)
            self._checkpoints.append(token)
            return token

    def restore(self, token: _Checkpoint) -> None:
        """Put back the values and the closed flag `token` saw."""
        with self.lock:
            self.values = self.values[:token.floor] + token.popped[::-1]
            self.closed = token.closed
            self._forget(token)

    def release(self, token: _Checkpoint) -> None:
        """The loop finished: `token` is not needed (nor are the values it kept)."""
        with self.lock:
            self._forget(token)

    def _forget(self, token: _Checkpoint) -> None:
        self._checkpoints = [t for t in self._checkpoints if t is not token]

    def _keep_below(self, length: int) -> None:
        """The values from `length` up are leaving: each checkpoint keeps those it saw."""
        values = self.values
        for token in self._checkpoints:
            if length < token.floor:
                token.popped.extend(values[token.floor - 1:length - 1 if length else None:-1])
                token.floor = length


def _stack_of(handle) -> Stack:
    if type(handle) is np.ndarray and handle.dtype == object and handle.size == 1:
        handle = handle[()] if handle.ndim == 0 else handle.reshape(())[()]
    if not isinstance(handle, Stack):
        raise errors.InvalidArgumentError(
            None, None, f"Expected a stack resource handle, got {type(handle).__name__}")
    return handle


class _Checked:
    """A handle a compiled loop's stack kernel passes to `compute` every iteration."""

    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle


class _OnStack(OpKernel):
    """A kernel changing only the stack behind its handle (input 0), which a compiled
    while loop may checkpoint and restore (OpKernel.undoable_input)."""

    undoable_input = 0

    def undoable_state(self, value):
        try:
            return _stack_of(value)
        except errors.InvalidArgumentError:
            return None

    def invariant_fn(self, invariant: tuple):
        """For a compiled loop whose handle input is the same every iteration: (prepare,
        fn), `prepare(handle)` once before the loop (the stack, when the handle needs
        none of compute's checks) and `fn(prepared, ...)` each iteration (compute's path
        otherwise); None when the handle varies."""
        if not invariant[0] or any(invariant[1:]):
            return None
        plain, dtype = self._plain, self._checked_type()

        def prepare(handle):
            return plain(handle, dtype) or _Checked(handle)

        return prepare, self._prepared_fn()

    @staticmethod
    def _plain(handle, dtype) -> Stack | None:
        """The stack behind `handle` when the call needs none of compute's checks (a 0-d
        handle of a stack of `dtype`: what a compiled loop sees every iteration)."""
        if type(handle) is not np.ndarray or handle.shape:
            return None
        stack = handle[()]
        if type(stack) is not Stack or stack.elem_type is not dtype:
            return None
        return stack


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
class StackPushOp(_OnStack):
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

    def _checked_type(self):
        return self.dtype

    def _prepared_fn(self):
        """invariant_fn's per-iteration call: push(stack, elem), its arguments spelled
        out (a push and a pop 0.55 µs against 0.90 through `*args` and a static method;
        350 pairs an LSTM step)."""
        compute = self.compute

        def push(stack, elem):
            if type(stack) is _Checked:
                return compute(None, [stack.handle, elem])[0]
            stack.push(elem)
            return elem
        return push

    def compiled_fn(self):
        dtype = self.dtype

        def push(handle, elem):
            stack = self._plain(handle, dtype)
            if stack is None:
                return self.compute(None, [handle, elem])[0]
            stack.push(elem)
            return elem
        return push


@register_kernel("StackPopV2", "CPU")
class StackPopOp(_OnStack):
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

    def _checked_type(self):
        return self.elem_type

    def _prepared_fn(self):
        """invariant_fn's per-iteration call: pop(stack)."""
        compute = self.compute

        def pop(stack):
            if type(stack) is _Checked:
                return compute(None, [stack.handle])[0]
            return stack.pop()
        return pop

    def compiled_fn(self):
        dtype = self.elem_type

        def pop(handle):
            stack = self._plain(handle, dtype)
            if stack is None:
                return self.compute(None, [handle])[0]
            return stack.pop()
        return pop


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
