"""Refs at executor build: where a non-ref input reads a ref output, and the session's
shared stateful kernels (TF's OpSegment).

A ref output carries the variable (framework/var.py). TF's executor derefs it when a
non-ref input consumes it (PrepareInputs); here the consumer's kernel is wrapped, once,
when the executor is built, so the per-node hot path is untouched: the wrapper reads the
variable's buffer (or raises TF's "Attempting to use uninitialized value v") and calls the
kernel. Only nodes that read a ref through a non-ref input are wrapped.
"""

from __future__ import annotations

import threading

from aioflow.framework import errors, op_kernel
from aioflow.proto import node_def_pb2

_REF_OFFSET = 100


def kernel_for(node, device, function_library=None, share: bool = True, refs: bool = True):
    """The node's kernel on `device`: shared through the device's OpSegment when the op
    is stateful (and `share`: a function body's kernels belong to its instantiation),
    wrapped when a non-ref input of it reads a ref (`refs` False: the graph has no ref
    output, no input to look at)."""
    segment = getattr(device, "op_segment", None) if share else None
    if segment is not None and shares_kernel(node):
        kernel = segment.find_or_create(
            node, lambda: _create(node, device, function_library))
    else:
        kernel = _create(node, device, function_library)
    return wrap_ref_inputs(kernel, node) if refs else kernel


def _create(node, device, function_library):
    return op_kernel.create_kernel(node.def_, node.op_def, device.device_type, node.input_types,
                                   node.output_types, function_library,
                                   getattr(device, "device_context", None))


def ref_input_slots(node) -> tuple:
    """(input index, the input's name) of each non-ref input fed by a ref output."""
    slots = []
    for e in node.in_edges:
        out = e.src_output
        if out >= 0 and e.src.output_types[out] > _REF_OFFSET and \
                node.input_types[e.dst_input] < _REF_OFFSET:
            slots.append((e.dst_input, e.src.name if out == 0 else f"{e.src.name}:{out}"))
    return tuple(sorted(slots)) if slots else ()


def wrap_ref_inputs(kernel, node):
    """`kernel`, or a DerefKernel around it when some non-ref input reads a ref."""
    slots = ref_input_slots(node)
    return DerefKernel(kernel, slots) if slots else kernel


class DerefKernel:
    """A kernel whose listed inputs are refs to read first. Never forwarded without a
    call (the executor then calls `compute`); compiled into a segment when its kernel
    is (`compilable`), where the segment calls `compute` too: a variable's `/read`
    Identity then runs in one segment with the VariableV2 it reads."""

    forwards_input = False
    is_constant = False
    pool_above = None
    start_async = None

    def __init__(self, inner, slots: tuple):
        self.inner = inner
        self.slots = slots

    def __getattr__(self, name):
        return getattr(self.inner, name)

    @property
    def compilable(self) -> bool:
        """As its kernel's: a deref reads the variable's buffer and changes nothing, as
        ReadVariableOp (an uninitialized variable's error makes the segment run node by
        node, naming this node)."""
        return self.inner.compilable

    def deref(self, inputs) -> list:
        args = list(inputs)
        for i, name in self.slots:
            value = args[i]
            if value is not None:
                args[i] = value.read_ref(name)
        return args

    def compute(self, ctx, inputs):
        return self.inner.compute(ctx, self.deref(inputs))

    async def compute_async(self, ctx, inputs):
        return await self.inner.compute_async(ctx, self.deref(inputs))

    def is_expensive(self, inputs) -> bool:
        if self.inner.expensive is not None:
            return bool(self.inner.expensive)
        try:
            return self.inner.is_expensive(self.deref(inputs))
        except errors.OpError:
            return False  # runs inline, where compute raises it

    def compiled_fn(self):
        return None


def shares_kernel(node) -> bool:
    """Whether the session's executors share this node's kernel (TF's ShouldOwnKernel): a
    stateful op, not a runtime-internal one (_Arg, _Retval, _Send, _Recv, ...)."""
    op_def = node.op_def
    return (op_def is not None and op_def.is_stateful and not node.type_string.startswith("_")
            and node.type_string not in ("PartitionedCall", "StatefulPartitionedCall"))


class OpSegment:
    """The stateful kernels of one session's device, by node name (TF's OpSegment): the
    same variable op, random op or queue seen from different fetch signatures is one
    kernel with one state."""

    def __init__(self):
        self._lock = threading.Lock()
        self._kernels: dict[str, tuple] = {}

    def find_or_create(self, node, create):
        """The shared kernel of `node`, made by `create()` the first time; a node of the
        same name with other attrs (another graph) gets a kernel of its own."""
        key = _signature(node.def_)
        name = node.def_.name
        with self._lock:
            found = self._kernels.get(name)
        if found is not None and found[0] == key:
            return found[1]
        kernel = create()
        with self._lock:
            found = self._kernels.get(name)
            if found is not None and found[0] == key:
                return found[1]
            self._kernels[name] = (key, kernel)
        return kernel

    def clear(self) -> None:
        with self._lock:
            self._kernels.clear()


def _signature(node_def) -> bytes:
    """What must agree for two nodes of one name to share a kernel: op and attrs."""
    sig = node_def_pb2.NodeDef(op=node_def.op)
    for key, value in node_def.attr.items():
        sig.attr[key].CopyFrom(value)
    return sig.SerializeToString(deterministic=True)
