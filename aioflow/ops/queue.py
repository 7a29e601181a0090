"""The `af.queue` namespace: TF's `tf.queue` names (the queue classes of
aioflow/ops/queue_ops.py)."""

from aioflow.ops.queue_ops import (
    FIFOQueue,
    PaddingFIFOQueue,
    PriorityQueue,
    QueueBase,
    RandomShuffleQueue,
)

__all__ = ["FIFOQueue", "PaddingFIFOQueue", "PriorityQueue", "QueueBase",
           "RandomShuffleQueue"]
