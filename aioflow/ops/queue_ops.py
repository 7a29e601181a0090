"""TF 1's queues with TF's names (tf.FIFOQueue, tf.PaddingFIFOQueue, tf.RandomShuffleQueue,
tf.PriorityQueue, tf.QueueBase; also under tf.queue and tf.io), building the graphs TF 1.x
builds (tensorflow/python/ops/data_flow_ops.py): the queue's V2 resource op, and per call
an enqueue, dequeue, close, size or is_closed op named as TF names it.

Running them: a dequeue of an empty queue (or an enqueue of a full one) is an async kernel
that waits on the event loop without holding a thread; another run of the same session
(`await sess.run(enqueue)`, concurrently) wakes it, as does close(); RunOptions'
timeout_in_ms and cancelling the awaiting task end the wait
(aioflow/kernels/data_flow/queue_kernels.py)."""

from __future__ import annotations

import collections.abc
import hashlib

from aioflow.framework import dtypes as _dtypes
from aioflow.framework import ops, random_seed, tensor_shape
from aioflow.framework.constant_value import constant_value
from aioflow.framework.op_def_library import apply_op


def _as_type_list(types) -> list:
    """A DType or a list of them, as a list of DTypes."""
    if isinstance(types, _dtypes.DType):
        return [types]
    return [_dtypes.as_dtype(t) for t in types]


def _as_shape_list(shapes, dtypes, unknown_dim_allowed=False, unknown_rank_allowed=False):
    """TF's _as_shape_list: None, one shape, or a list of shapes, as TensorShapes."""
    del dtypes
    if unknown_dim_allowed:
        if (not isinstance(shapes, collections.abc.Sequence) or not shapes
                or any(shape is None or isinstance(shape, int) for shape in shapes)):
            raise ValueError("When providing partial shapes, a list of shapes must be "
                             "provided.")
    if shapes is None:
        return None
    if isinstance(shapes, tensor_shape.TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (tuple, list)):
        raise TypeError(f"Shapes must be a TensorShape or a list or tuple of TensorShapes, "
                        f"got {type(shapes)} instead.")
    if all(shape is None or isinstance(shape, int) for shape in shapes):
        shapes = [shapes]  # one shape given as a list of dims
    shapes = [tensor_shape.as_shape(shape) for shape in shapes]
    if not unknown_dim_allowed and any(not s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {shapes}")
    if not unknown_rank_allowed and any(s.rank is None for s in shapes):
        raise ValueError(f"All shapes must have a defined rank: {shapes}")
    return shapes


def _as_name_list(names, dtypes):
    if names is None:
        return None
    if not isinstance(names, (list, tuple)):
        names = [names]
    if len(names) != len(dtypes):
        raise ValueError("List of names must have the same length as the list of dtypes")
    return list(names)


class QueueBase:
    """A queue of tuples of tensors (the graph's handle to it, and the ops on it)."""

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = dtypes
        if shapes is not None:
            if len(shapes) != len(dtypes):
                raise ValueError("Queue shapes must have the same length as dtypes")
            self._shapes = [tensor_shape.TensorShape(s) for s in shapes]
        else:
            self._shapes = [tensor_shape.unknown_shape() for _ in self._dtypes]
        if names is not None:
            if len(names) != len(dtypes):
                raise ValueError("Queue names must have the same length as dtypes")
            self._names = names
        else:
            self._names = None
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    @property
    def queue_ref(self):
        return self._queue_ref

    @property
    def name(self) -> str:
        return self._queue_ref.op.name

    @property
    def dtypes(self) -> list:
        return self._dtypes

    @property
    def shapes(self) -> list:
        return self._shapes

    @property
    def names(self):
        return self._names

    def _check_enqueue_dtypes(self, vals) -> list:
        """The components as tensors of the queue's dtypes (a dict by name when the
        queue has names)."""
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names, key=str) != sorted(vals.keys(), key=str):
                raise ValueError(f"Keys in dictionary to enqueue do not match names of Queue.  "
                                 f"Dictionary: ({sorted(vals.keys())}), Queue: "
                                 f"({sorted(self._names)})")
            vals = [vals[k] for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
        return [ops.convert_to_tensor(val, dtype=dtype, name=f"component_{i}")
                for i, (val, dtype) in enumerate(zip(vals, self._dtypes, strict=False))]

    @staticmethod
    def _scope_vals(vals) -> list:
        if isinstance(vals, (list, tuple)):
            return list(vals)
        if isinstance(vals, dict):
            return list(vals.values())
        return [vals]

    def enqueue(self, vals, name=None):
        """Enqueue one element (a tensor, a tuple of them, or a dict by name)."""
        with ops.name_scope(name, f"{self._name}_enqueue", self._scope_vals(vals)) as scope:
            vals = self._check_enqueue_dtypes(vals)
            for val, shape in zip(vals, self._shapes, strict=False):
                val.shape.assert_is_compatible_with(shape)
            return apply_op("QueueEnqueueV2", handle=self._queue_ref, components=vals,
                            name=scope)

    def enqueue_many(self, vals, name=None):
        """Enqueue the slices along dimension 0 of each component, in order."""
        with ops.name_scope(name, f"{self._name}_EnqueueMany",
                            self._scope_vals(vals)) as scope:
            vals = self._check_enqueue_dtypes(vals)
            batch_dim = tensor_shape.Dimension(tensor_shape.dimension_value(
                vals[0].shape.with_rank_at_least(1)[0]))
            for val, shape in zip(vals, self._shapes, strict=False):
                val_batch = tensor_shape.Dimension(tensor_shape.dimension_value(
                    val.shape.with_rank_at_least(1)[0]))
                batch_dim = batch_dim.merge_with(val_batch)
                val.shape[1:].assert_is_compatible_with(shape)
            return apply_op("QueueEnqueueManyV2", handle=self._queue_ref, components=vals,
                            name=scope)

    def _dequeue_return_value(self, tensors):
        if self._names:
            return dict(zip(self._names, tensors, strict=True))
        if len(tensors) == 1:
            return tensors[0]
        return list(tensors)

    def dequeue(self, name=None):
        """Dequeue one element (waits while the queue is empty and open)."""
        if name is None:
            name = f"{self._name}_Dequeue"
        ret = apply_op("QueueDequeueV2", handle=self._queue_ref, component_types=self._dtypes,
                       name=name)
        for output, shape in zip(ret, self._shapes, strict=True):
            output.set_shape(shape)
        return self._dequeue_return_value(ret)

    def dequeue_many(self, n, name=None):
        """Dequeue a batch of `n` elements, stacked along a new dimension 0."""
        if name is None:
            name = f"{self._name}_DequeueMany"
        ret = apply_op("QueueDequeueManyV2", handle=self._queue_ref, n=n,
                       component_types=self._dtypes, name=name)
        n_value = constant_value(ret[0].op.inputs[1])
        batch_dim = tensor_shape.Dimension(None if n_value is None else int(n_value))
        for output, shape in zip(ret, self._shapes, strict=True):
            output.set_shape(tensor_shape.TensorShape([batch_dim]).concatenate(shape))
        return self._dequeue_return_value(ret)

    def dequeue_up_to(self, n, name=None):
        """Like dequeue_many, but once the queue is closed a smaller batch of the rest."""
        if name is None:
            name = f"{self._name}_DequeueUpTo"
        ret = apply_op("QueueDequeueUpToV2", handle=self._queue_ref, n=n,
                       component_types=self._dtypes, name=name)
        for output, shape in zip(ret, self._shapes, strict=True):
            output.set_shape(tensor_shape.TensorShape([None]).concatenate(shape))
        return self._dequeue_return_value(ret)

    def close(self, cancel_pending_enqueues=False, name=None):
        """Close the queue: no more enqueues; dequeues take what is left, then fail with
        OutOfRangeError."""
        if name is None:
            name = f"{self._name}_Close"
        return apply_op("QueueCloseV2", handle=self._queue_ref,
                        cancel_pending_enqueues=cancel_pending_enqueues, name=name)

    def is_closed(self, name=None):
        """A bool tensor: whether the queue is closed."""
        if name is None:
            name = f"{self._name}_Is_Closed"
        return apply_op("QueueIsClosedV2", handle=self._queue_ref, name=name)

    def size(self, name=None):
        """An int32 tensor: the number of elements in the queue."""
        if name is None:
            name = f"{self._name}_Size"
        return apply_op("QueueSizeV2", handle=self._queue_ref, name=name)


def _handle(op_type: str, device=None, **attrs):
    """The queue's resource op, built outside any control dependencies (TF's init_scope)."""
    with ops.control_dependencies(None):
        if device is None:
            return apply_op(op_type, **attrs)
        with ops.device(device):
            return apply_op(op_type, **attrs)


class FIFOQueue(QueueBase):
    """A queue that dequeues in the order of enqueueing."""

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name="fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes)
        names = _as_name_list(names, dtypes)
        queue_ref = _handle("FIFOQueueV2", "CPU", component_types=dtypes,
                            shapes=shapes or [], capacity=capacity,
                            shared_name=shared_name or "", name=name)
        super().__init__(dtypes, shapes, names, queue_ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose shapes may have unknown dims (None); dequeue_many and
    dequeue_up_to pad each component to the largest of the batch."""

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None,
                 name="padding_fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes, unknown_dim_allowed=True)
        names = _as_name_list(names, dtypes)
        if len(dtypes) != len(shapes):
            raise ValueError(f"Shapes must be provided for all components, but received "
                             f"{len(dtypes)} dtypes and {len(shapes)} shapes.")
        queue_ref = _handle("PaddingFIFOQueueV2", component_types=dtypes, shapes=shapes,
                            capacity=capacity, shared_name=shared_name or "", name=name)
        super().__init__(dtypes, shapes, names, queue_ref)


class RandomShuffleQueue(QueueBase):
    """A queue that dequeues elements in a random order, keeping at least
    `min_after_dequeue` elements until it is closed."""

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None,
                 seed=None, shared_name=None, name="random_shuffle_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes)
        names = _as_name_list(names, dtypes)
        seed1, seed2 = random_seed.get_seed(seed)
        if seed1 is None and seed2 is None:
            seed1, seed2 = 0, 0
        elif seed is None and shared_name is not None:
            # A graph seed but no op seed: with a shared_name, seed2 comes from the graph
            # seed and the name only (not from the op count), as TF's.
            digest = hashlib.md5((str(seed1) + shared_name).encode("utf-8")).hexdigest()
            seed2 = int(digest[:8], 16) & 0x7FFFFFFF
        queue_ref = _handle("RandomShuffleQueueV2", component_types=dtypes,
                            shapes=shapes or [], capacity=capacity,
                            min_after_dequeue=min_after_dequeue, seed=seed1, seed2=seed2,
                            shared_name=shared_name or "", name=name)
        super().__init__(dtypes, shapes, names, queue_ref)


class PriorityQueue(QueueBase):
    """A queue whose elements start with an int64 priority (not among `types`); the
    smallest priority is dequeued first."""

    def __init__(self, capacity, types, shapes=None, names=None, shared_name=None,
                 name="priority_queue"):
        types = _as_type_list(types)
        shapes = _as_shape_list(shapes, types)
        queue_ref = _handle("PriorityQueueV2", component_types=types, shapes=shapes or [],
                            capacity=capacity, shared_name=shared_name or "", name=name)
        priority_dtypes = [_dtypes.int64, *types]
        priority_shapes = [tensor_shape.TensorShape([]), *shapes] if shapes else shapes
        super().__init__(priority_dtypes, priority_shapes, names, queue_ref)
