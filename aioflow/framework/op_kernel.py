"""The kernel API: OpKernel classes, their registry, and creating a kernel for a node.

A kernel is created once per node per executor from the node's attrs. Its
``compute(ctx, inputs)`` takes the step's OpKernelContext (framework/kernel_context.py)
and the node's input values (NumPy arrays or NumPy scalars; None for a dead input,
which only Merge-like kernels ever see) and returns a sequence of output values, one
per output; a None output is not produced (dead), which is how Switch routes its input.

The registry is filled by importing kernel modules; the runtime loads the built-in
library (runtime/kernel_library.py), the framework never imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.attr_value import attr_value_to_python

_NO_DEFAULT = object()


class OpKernelConstruction:
    """What a kernel may read while it is being built: the node, its attrs, its types,
    the device's FunctionLibraryRuntime (`function_library`: what call kernels
    instantiate their functions with; None where the graph is run without one), and an
    accelerator's DeviceContext (`device_context`: its streams and memory; None on a
    CPU)."""

    def __init__(self, node_def, op_def=None, device_type: str = "CPU",
                 input_dtypes: Sequence[dtypes.DType] = (),
                 output_dtypes: Sequence[dtypes.DType] = (), function_library=None,
                 device_context=None):
        self.node_def = node_def
        self.device_context = device_context
        self.function_library = function_library
        self.op_def = op_def
        self.device_type = device_type
        self.input_dtypes = list(input_dtypes)
        self.output_dtypes = list(output_dtypes)

    @property
    def name(self) -> str:
        return self.node_def.name

    @property
    def op_type(self) -> str:
        return self.node_def.op

    def has_attr(self, name: str) -> bool:
        return name in self.node_def.attr

    def get_attr(self, name: str, default: Any = _NO_DEFAULT) -> Any:
        """The attr's Python value; InvalidArgumentError naming the node when missing."""
        attrs = self.node_def.attr
        if name in attrs:
            value = attrs[name]
            if value.WhichOneof("value") == "type":  # (the common case: a kernel's T)
                return dtypes.as_dtype(value.type)
            return attr_value_to_python(value)
        if default is not _NO_DEFAULT:
            return default
        raise errors.InvalidArgumentError(
            self.node_def, None,
            f"NodeDef missing attr '{name}' from Op<name={self.op_type}>; "
            f"NodeDef: {{{{node {self.name}}}}}",
        )


def attr_text(value) -> str:
    """A string attr's bytes as text for a kernel to compare or show: UTF-8, a byte that
    is not shown as \\xNN (an attr holds any bytes: TF compares them as bytes, so such a
    value matches no name and is refused with TF's message naming it, never a
    UnicodeDecodeError)."""
    return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)


def allocate(shape, fill, dtype):
    """An output of `shape` filled with `fill` (zeros from calloc: pages never written
    are never touched); memory that cannot hold it, or more than NumPy can address, is
    TF's OOM (ResourceExhaustedError in TF's words), never a raw MemoryError or
    ValueError."""
    try:
        return np.zeros(shape, dtype) if fill == 0 else np.full(shape, fill, dtype)
    except (MemoryError, ValueError):  # ValueError: "array is too big" for NumPy
        raise oom_error(shape, dtype) from None


def oom_error(shape, dtype) -> errors.ResourceExhaustedError:
    """TF's OOM for an output of `shape` and `dtype` that memory (or NumPy) cannot hold."""
    name = dtypes.as_dtype(np.dtype(dtype)).name
    name = {"float32": "float", "float64": "double"}.get(name, name)
    return errors.ResourceExhaustedError(
        None, None, f"OOM when allocating tensor with shape[{','.join(map(str, shape))}] "
                    f"and type {name} on /job:localhost/replica:0/task:0/device:CPU:0 by "
                    "allocator cpu")


class OpKernel:
    """A synchronous kernel. Subclasses set `expensive` and implement `compute`.

    `expensive` is True (run on the device's thread pool), False (run inline on
    the event loop), or None: then `is_expensive(inputs)` decides per call, so a
    kernel can go to the pool only when its inputs are large.
    """

    expensive: bool | None = False
    is_async = False
    # With expensive None: go to the pool when the first or last input has more elements
    # than this (the executor tests it inline; a kernel may instead override is_expensive).
    pool_above: int | None = None
    # True when compute returns (inputs[0],): the executor then skips the call.
    forwards_input = False
    # True for kernels whose work is multi-threaded BLAS (the device bounds how many run
    # at once so that BLAS threads and pool threads do not oversubscribe the cores).
    uses_blas = False
    # True when compute is a pure function of its inputs (no state, no side effect but
    # the call frame, every output produced): the executor may then run the node inside
    # a compiled segment (runtime/segments.py), and run it again if the segment falls back.
    # A read of state through ctx that changes nothing (ReadVariableOp) qualifies too: a
    # compiled region runs when its inputs are ready, as the node alone would.
    compilable = False
    # For a kernel whose only effect is on the state behind one input, state that can be
    # rolled back (a TensorArray's read or write): that input's index, and
    # `undoable_state(value)` gives the object (with `checkpoint()`, `restore(token)` and
    # `release(token)`, called when the loop finished and will not restore).
    # A compiled while loop (runtime/loop_segments.py) may then run the node when that
    # input is a loop invariant: it checkpoints the state before the loop and restores it
    # before running the loop node by node instead. None: not so.
    undoable_input: int | None = None
    # True when the outputs are the same values every run, whatever the step (Const): a
    # compiled segment computes them once, when it is compiled.
    is_constant = False
    # With expensive None: whether the executor learns this kernel's cost per input
    # element (runtime/kernel_stats.py) to overrule `is_expensive` when it says inline.
    # False for a kernel whose `is_expensive` already measures its work (a convolution's
    # multiply-adds: its input's size does not).
    learns_cost = True
    # True for kernels whose products run BLAS single-threaded in their own sections
    # (intra_op_threads.own_threads): a compiled loop of them holds one section a slice.
    own_blas_threads = False

    def __init__(self, ctx: OpKernelConstruction):
        self.name = ctx.name
        self.op_type = ctx.op_type

    def compute(self, ctx, inputs: list) -> Sequence[Any]:
        raise NotImplementedError

    def is_expensive(self, inputs: list) -> bool:
        """Whether this call should go to the pool (asked only when `expensive` is None)."""
        limit = self.pool_above
        if limit is not None and inputs:
            return inputs[0].size > limit or inputs[-1].size > limit
        return bool(self.expensive)

    def worth_a_thread(self, inputs: list) -> bool:
        """Whether a call that `is_expensive` would run inline is still worth a pool
        thread of its own when other runs wait for the event loop and a thread is free
        (many runs in flight: the loop's work and this call then use two cores). Asked
        only when `expensive` is None and the kernel overrides this."""
        return False

    def compiled_fn(self):
        """For a compilable kernel with one output: a plain function of the input values
        returning that output, which a compiled segment calls instead of `compute` (it
        may raise anything on bad input: the segment then runs `compute` to get TF's
        error). None: segments call `compute`."""
        return None

    def undoable_state(self, value):
        """With `undoable_input` set: the state behind that input's `value`, or None
        when `value` holds none (compute then raises TF's error)."""
        return None


class AsyncOpKernel(OpKernel):
    """A kernel whose work is a coroutine awaited on the event loop (Recv, queues, user
    coroutines, GPU work)."""

    is_async = True
    # Optionally `start_async(ctx, inputs, done) -> outputs | None`: outputs when they are
    # ready at once, else None and `done(outputs, error)` later. The executor then needs
    # no task (TF's RecvAsync); `compute_async` remains for traced runs.
    start_async = None

    async def compute_async(self, ctx, inputs: list) -> Sequence[Any]:
        raise NotImplementedError


class _KernelDef:
    __slots__ = ("cls", "constraints", "host_memory", "priority")

    def __init__(self, cls, constraints, host_memory, priority=0):
        self.cls = cls
        self.constraints = constraints
        self.host_memory = host_memory
        self.priority = priority


_kernels: dict[tuple[str, str], list[_KernelDef]] = {}


def register_kernel(op_type: str, device_type: str = "CPU", host_memory: Sequence[str] = (),
                    priority: int = 0, **type_constraints):
    """Class decorator registering a kernel for (op type, device type); keyword
    arguments constrain type attrs, e.g. ``T=[dtypes.float32, dtypes.float64]``.
    Of the kernels matching a node, the one of highest `priority` is chosen, the first
    registered among equals (TF's KernelDef.priority: an optional backend's kernels,
    aioflow/kernels/onednn/, take precedence over the NumPy ones they fall back to)."""
    constraints = {
        name: frozenset(dtypes.as_dtype(t).as_datatype_enum for t in (
            allowed if isinstance(allowed, (list, tuple, set, frozenset)) else [allowed]))
        for name, allowed in type_constraints.items()
    }

    def wrap(cls):
        kdefs = _kernels.setdefault((op_type, device_type), [])
        at = next((i for i, k in enumerate(kdefs) if k.priority < priority), len(kdefs))
        kdefs.insert(at, _KernelDef(cls, constraints, tuple(host_memory), priority))
        return cls

    return wrap


def _matches(kdef: _KernelDef, node_def) -> bool:
    for name, allowed in kdef.constraints.items():
        if name not in node_def.attr:
            return False
        value = node_def.attr[name]
        if value.WhichOneof("value") == "list":
            if any(t not in allowed for t in value.list.type):
                return False
        elif value.type not in allowed:
            return False
    return True


def find_kernel_class(node_def, device_type: str):
    """The kernel class for this node on this device type, or None."""
    for kdef in _kernels.get((node_def.op, device_type), ()):
        if _matches(kdef, node_def):
            return kdef.cls
    return None


def host_memory_args(node_def, device_type: str) -> tuple[str, ...]:
    """The input and output arg names this node's kernel on `device_type` keeps in host
    memory (TF's KernelDef.host_memory_arg); () without a kernel."""
    for kdef in _kernels.get((node_def.op, device_type), ()):
        if _matches(kdef, node_def):
            return kdef.host_memory
    return ()


def supported_device_types(node_def, device_types: Sequence[str]) -> list[str]:
    """Those of `device_types` that have a kernel for this node (the Placer asks this)."""
    return [d for d in device_types if find_kernel_class(node_def, d) is not None]


def create_kernel(node_def, op_def=None, device_type: str = "CPU",
                  input_dtypes=(), output_dtypes=(), function_library=None,
                  device_context=None) -> OpKernel:
    """Build the node's kernel; errors name the node, as TF's do."""
    cls = find_kernel_class(node_def, device_type)
    if cls is None:
        raise errors.NotFoundError(
            node_def, None,
            f"No registered '{node_def.op}' OpKernel for '{device_type}' devices compatible "
            f"with node {{{{node {node_def.name}}}}}\n\t. Registered: "
            f"{registered_summary(node_def.op)}",
        )
    ctx = OpKernelConstruction(node_def, op_def, device_type, input_dtypes, output_dtypes,
                               function_library, device_context)
    try:
        return cls(ctx)
    except errors.OpError:
        raise
    except (TypeError, ValueError, KeyError) as e:
        raise errors.InvalidArgumentError(
            node_def, None, f"Invalid attrs for node {node_def.name} ({node_def.op}): {e}"
        ) from e


def registered_kernels() -> dict[tuple[str, str], list]:
    """(op type, device type) -> kernel classes registered for it (a copy)."""
    return {key: [k.cls for k in kdefs] for key, kdefs in _kernels.items()}


def registered_summary(op_type: str) -> str:
    devs = sorted({dev for (op, dev) in _kernels if op == op_type})
    return ", ".join(f"device='{d}'" for d in devs) or "<no registered kernels>"
