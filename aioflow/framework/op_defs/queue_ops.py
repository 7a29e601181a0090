"""OpDefs of TF's queues (tensorflow/core/ops/data_flow_ops.cc): the four queue kinds
(FIFO, padding FIFO, random shuffle, priority) as resource handles, and the ops that
enqueue, dequeue, close and measure them.

Spelled as TF 2.21's OpDefs (tests/test_queues.py compares them field by field with
tests/data/queues_tf.json, written by TensorFlow). The dequeues' shapes are unknown here:
TF 1's Python sets them from the queue's shapes (aioflow/ops/queue_ops.py does too)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op

_SHARING = ("container: string = ''", "shared_name: string = ''")


def _queue(name: str, *attrs: str) -> None:
    builder = register_op(name).output("handle: resource").set_is_stateful()
    for spec in attrs + _SHARING:
        builder.attr(spec)
    builder.set_shape_fn(cs.scalar)


_queue("FIFOQueueV2", "component_types: list(type) >= 1", "shapes: list(shape) >= 0 = []",
       "capacity: int = -1")
_queue("PaddingFIFOQueueV2", "component_types: list(type) >= 1",
       "shapes: list(shape) >= 0 = []", "capacity: int = -1")
_queue("RandomShuffleQueueV2", "component_types: list(type) >= 1",
       "shapes: list(shape) >= 0 = []", "capacity: int = -1", "min_after_dequeue: int = 0",
       "seed: int = 0", "seed2: int = 0")
# (the priority component, int64, is not among component_types: hence no minimum)
_queue("PriorityQueueV2", "component_types: list(type) >= 0 = []", "shapes: list(shape) >= 0",
       "capacity: int = -1")

for _name in ("QueueEnqueueV2", "QueueEnqueueManyV2"):
    (register_op(_name).input("handle: resource").input("components: Tcomponents")
        .attr("Tcomponents: list(type) >= 1").attr("timeout_ms: int = -1")
        .set_is_stateful().set_shape_fn(cs.no_outputs))
(register_op("QueueDequeueV2").input("handle: resource").output("components: component_types")
    .attr("component_types: list(type) >= 1").attr("timeout_ms: int = -1")
    .set_is_stateful().set_shape_fn(cs.unknown))
for _name in ("QueueDequeueManyV2", "QueueDequeueUpToV2"):
    (register_op(_name).input("handle: resource").input("n: int32")
        .output("components: component_types").attr("component_types: list(type) >= 1")
        .attr("timeout_ms: int = -1").set_is_stateful().set_shape_fn(cs.unknown))
(register_op("QueueCloseV2").input("handle: resource")
    .attr("cancel_pending_enqueues: bool = false").set_is_stateful()
    .set_shape_fn(cs.no_outputs))
(register_op("QueueIsClosedV2").input("handle: resource").output("is_closed: bool")
    .set_is_stateful().set_shape_fn(cs.scalar))
(register_op("QueueSizeV2").input("handle: resource").output("size: int32")
    .set_is_stateful().set_shape_fn(cs.scalar))
