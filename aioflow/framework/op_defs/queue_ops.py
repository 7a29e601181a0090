"""OpDefs of TF's queues (tensorflow/core/ops/data_flow_ops.cc): the four queue kinds
(FIFO, padding FIFO, random shuffle, priority) as resource handles, and the ops that
enqueue, dequeue, close and measure them; and TF 1's versions of all of them with a
Ref(string) handle (FIFOQueue, QueueEnqueue, ...), which older GraphDefs carry.

Spelled as TF 2.21's OpDefs (tests/test_queues.py compares them field by field with
tests/data/queues_tf.json, written by TensorFlow). The dequeues' shapes are unknown here:
TF 1's Python sets them from the queue's shapes (aioflow/ops/queue_ops.py does too)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_SHARING = ("container: string = ''", "shared_name: string = ''")


def _ref_handle(op) -> list[TensorShape]:
    return [TensorShape([2])]  # (TF's legacy [container, name] string pair)


def _queue(v2: bool, name: str, *attrs: str) -> None:
    handle = "resource" if v2 else "Ref(string)"
    builder = register_op(name + ("V2" if v2 else "")).output(f"handle: {handle}")
    for spec in attrs + _SHARING:
        builder.attr(spec)
    builder.set_is_stateful().set_shape_fn(cs.scalar if v2 else _ref_handle)


def _user(v2: bool, name: str):
    """An op on a queue: stateful in its V2 form only (as TF's)."""
    handle = "resource" if v2 else "Ref(string)"
    builder = register_op(name + ("V2" if v2 else "")).input(f"handle: {handle}")
    return builder.set_is_stateful() if v2 else builder


for _v2 in (True, False):
    _queue(_v2, "FIFOQueue", "component_types: list(type) >= 1",
           "shapes: list(shape) >= 0 = []", "capacity: int = -1")
    _queue(_v2, "PaddingFIFOQueue", "component_types: list(type) >= 1",
           "shapes: list(shape) >= 0 = []", "capacity: int = -1")
    _queue(_v2, "RandomShuffleQueue", "component_types: list(type) >= 1",
           "shapes: list(shape) >= 0 = []", "capacity: int = -1", "min_after_dequeue: int = 0",
           "seed: int = 0", "seed2: int = 0")
    # (the priority component, int64, is not among component_types: hence no minimum)
    _queue(_v2, "PriorityQueue", "component_types: list(type) >= 0 = []",
           "shapes: list(shape) >= 0", "capacity: int = -1")

    for _name in ("QueueEnqueue", "QueueEnqueueMany"):
        (_user(_v2, _name).input("components: Tcomponents")
            .attr("Tcomponents: list(type) >= 1").attr("timeout_ms: int = -1")
            .set_shape_fn(cs.no_outputs))
    (_user(_v2, "QueueDequeue").output("components: component_types")
        .attr("component_types: list(type) >= 1").attr("timeout_ms: int = -1")
        .set_shape_fn(cs.unknown))
    for _name in ("QueueDequeueMany", "QueueDequeueUpTo"):
        (_user(_v2, _name).input("n: int32").output("components: component_types")
            .attr("component_types: list(type) >= 1").attr("timeout_ms: int = -1")
            .set_shape_fn(cs.unknown))
    (_user(_v2, "QueueClose").attr("cancel_pending_enqueues: bool = false")
        .set_shape_fn(cs.no_outputs))
    _user(_v2, "QueueIsClosed").output("is_closed: bool").set_shape_fn(cs.scalar)
    _user(_v2, "QueueSize").output("size: int32").set_shape_fn(cs.scalar)
