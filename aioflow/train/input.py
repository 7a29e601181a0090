"""TF 1's queue-based input pipelines (tf.train.batch, shuffle_batch, limit_epochs,
match_filenames_once, input_producer, string/range/slice_input_producer, batch_join,
shuffle_batch_join and the maybe_* forms), building the graphs TF 1.x builds
(tensorflow/python/training/input.py): a queue, its enqueue ops in a QueueRunner added to
GraphKeys.QUEUE_RUNNERS, a ScalarSummary of how full the queue is, and the dequeue op
named for the helper's scope.

The runners run as asyncio tasks (af.train.start_queue_runners). `num_epochs` counts in a
local variable (`<scope>/limit_epochs/epochs`, int64, initialised by
af.local_variables_initializer()); once it is spent the producer's enqueue fails with
OutOfRangeError, its runner closes the queue, and the consumer's dequeue fails in turn.
SparseTensor inputs (TF stores them in a SparseTensorsMap) are not supported."""

from __future__ import annotations

from aioflow.framework import constant_value as _constant_value
from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.sparse_tensor import SparseTensor
from aioflow.ops import array_ops, control_flow_ops, io_ops, math_ops, random_ops, variables
from aioflow.ops.data_flow_ops import dynamic_partition
from aioflow.ops.queue_ops import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from aioflow.summary import summary_ops
from aioflow.train import queue_runner

_NOT_NULL = "string_input_producer requires a non-null input tensor"


def match_filenames_once(pattern, name=None):
    """A local variable holding the sorted names of the files matching `pattern` (a glob,
    or a vector of them), listed once: when af.local_variables_initializer() runs."""
    with ops.name_scope(name, "matching_filenames", [pattern]) as name:
        return variables.Variable(name=name, initial_value=io_ops.matching_files(pattern),
                                  trainable=False, validate_shape=False,
                                  collections=[variables.GraphKeys.LOCAL_VARIABLES])


def limit_epochs(tensor, num_epochs=None, name=None):
    """`tensor`, `num_epochs` times; then its fetch fails with OutOfRangeError (a local
    int64 counter `epochs` counted up by CountUpTo before each)."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    with ops.name_scope(name, "limit_epochs", [tensor]) as name:
        zero64 = ops.convert_to_tensor(0, dtype=dtypes.int64)
        epochs = variables.Variable(zero64, name="epochs", trainable=False,
                                    collections=[variables.GraphKeys.LOCAL_VARIABLES])
        counter = epochs.count_up_to(num_epochs)
        with ops.control_dependencies([counter]):
            return array_ops.identity(tensor, name=name)


def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True,
                   seed=None, capacity=32, shared_name=None, summary_name=None, name=None,
                   cancel_op=None):
    """A FIFOQueue fed with the rows of `input_tensor` (shuffled per epoch when
    `shuffle`), by a QueueRunner in the QUEUE_RUNNERS collection."""
    with ops.name_scope(name, "input_producer", [input_tensor]):
        input_tensor = ops.convert_to_tensor(input_tensor, name="input_tensor")
        element_shape = input_tensor.shape[1:].merge_with(
            tensor_shape.as_shape(element_shape) if element_shape is not None
            else tensor_shape.unknown_shape())
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape "
                             "or `element_shape` must be specified")
        if shuffle:
            input_tensor = random_ops.random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype.base_dtype],
                      shapes=[element_shape], shared_name=shared_name, name=name)
        enq = q.enqueue_many([input_tensor])
        queue_runner.add_queue_runner(queue_runner.QueueRunner(q, [enq], cancel_op=cancel_op))
        if summary_name is not None:
            summary_ops.scalar(summary_name,
                               math_ops.cast(q.size(), dtypes.float32) * (1. / capacity))
        return q


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None,
                          capacity=32, shared_name=None, name=None, cancel_op=None):
    """input_producer of a 1-D string tensor (file names, say); a run fails with
    InvalidArgumentError when the tensor is empty."""
    if (not isinstance(string_tensor, (ops.Tensor, variables.Variable))
            and not len(string_tensor)):
        raise ValueError(_NOT_NULL)
    with ops.name_scope(name, "input_producer", [string_tensor]) as name:
        string_tensor = ops.convert_to_tensor(string_tensor, dtype=dtypes.string)
        not_empty = math_ops.greater(array_ops.size(string_tensor), 0)
        with ops.control_dependencies([control_flow_ops.Assert(not_empty, [_NOT_NULL])]):
            string_tensor = array_ops.identity(string_tensor)
        return input_producer(
            input_tensor=string_tensor, element_shape=[], num_epochs=num_epochs,
            shuffle=shuffle, seed=seed, capacity=capacity, shared_name=shared_name,
            name=name, summary_name=f"fraction_of_{capacity}_full", cancel_op=cancel_op)


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """input_producer of the integers 0 .. limit - 1."""
    with ops.name_scope(name, "input_producer", [limit]) as name:
        range_tensor = math_ops.range(limit)
        return input_producer(range_tensor, [], num_epochs, shuffle, seed, capacity,
                              shared_name, f"fraction_of_{capacity}_full", name)


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """One row of each tensor of `tensor_list`, the same row of each: a
    range_input_producer's index, gathered."""
    with ops.name_scope(name, "input_producer", list(tensor_list)):
        tensor_list = _convert_list(tensor_list)
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        range_size = array_ops.shape(tensor_list[0])[0]
        queue = range_input_producer(range_size, num_epochs=num_epochs, shuffle=shuffle,
                                     seed=seed, capacity=capacity, shared_name=shared_name)
        index = queue.dequeue()
        return [array_ops.gather(t, index) for t in tensor_list]


# Helpers of the batching functions ------------------------------------------------------

def _convert_list(tensor_list) -> list:
    for t in tensor_list:
        if isinstance(t, SparseTensor):
            raise TypeError(f"SparseTensor inputs to the queue-based input helpers are not "
                            f"supported by aioflow (TF stores them in a SparseTensorsMap): "
                            f"{t}")
    return [ops.convert_to_tensor(t) for t in tensor_list]


def _as_tensor_list(tensors):
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors, key=str)]
    return tensors


def _as_tensor_list_list(tensors_list):
    if not tensors_list:
        raise ValueError("Expected at least one set of tensors")
    if isinstance(tensors_list[0], dict):
        expected_keys = set(tensors_list[0].keys())
        for tensors in tensors_list[1:]:
            if set(tensors.keys()) != expected_keys:
                raise ValueError(f"All dictionaries in tensors_list must have the same keys: "
                                 f"{sorted(expected_keys, key=str)} vs "
                                 f"{sorted(tensors.keys(), key=str)}")
        return [_as_tensor_list(tensors) for tensors in tensors_list]
    return tensors_list


def _as_original_type(original_tensors, tensor_list):
    if isinstance(original_tensors, dict):
        if len(original_tensors) == 1:
            tensor_list = [tensor_list]
        return {k: tensor_list[i] for i, k in enumerate(sorted(original_tensors, key=str))}
    return tensor_list


def _validate(tensor_list) -> list:
    tensor_list = _convert_list(tensor_list)
    if not tensor_list:
        raise ValueError("Expected at least one tensor in batch().")
    return tensor_list


def _validate_join(tensor_list_list) -> list:
    tensor_list_list = [_convert_list(tl) for tl in tensor_list_list]
    if not tensor_list_list:
        raise ValueError("Expected at least one input in batch_join().")
    return tensor_list_list


def _validate_keep_input(keep_input, enqueue_many):
    keep_input = ops.convert_to_tensor(keep_input)
    if keep_input.shape.ndims is None:
        raise ValueError("`keep_input` dimensions must be known at graph construction.")
    if not enqueue_many and keep_input.shape.ndims == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if keep_input.shape.ndims > 1:
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep_input


def _dtypes(tensor_list_list) -> list:
    all_types = [[t.dtype for t in tl] for tl in tensor_list_list]
    types = all_types[0]
    for other_types in all_types[1:]:
        if other_types != types:
            raise TypeError("Expected types to be consistent: {} vs. {}.".format(
                ", ".join(x.name for x in types), ", ".join(x.name for x in other_types)))
    return types


def _merge_shapes(shape_list, enqueue_many) -> list:
    shape_list = [tensor_shape.as_shape(s) for s in shape_list]
    if enqueue_many:  # (the shapes of the rows)
        shape_list = [s.with_rank_at_least(1)[1:] for s in shape_list]
    merged = shape_list[0]
    for s in shape_list[1:]:
        merged.merge_with(s)  # (a check only: TF keeps the first list's shape)
    return merged.as_list()


def _shapes(tensor_list_list, shapes, enqueue_many):
    """`shapes`, or else the merged static shapes of the inputs (each of known rank)."""
    if shapes is None:
        len0 = len(tensor_list_list[0])
        for tl in tensor_list_list:
            for i in range(len0):
                if tl[i].shape.ndims is None:
                    raise ValueError(f"Cannot infer Tensor's rank: {tl[i]}")
        shapes = [_merge_shapes([tl[i].shape.as_list() for tl in tensor_list_list],
                                enqueue_many) for i in range(len0)]
    return shapes


def _smart_cond(pred, true_fn, false_fn):
    """`true_fn()` or `false_fn()` when `pred` is known at graph construction, else a
    cond (TF's layers.utils.smart_cond)."""
    value = _constant_value.constant_value(pred)
    if value is not None:
        return true_fn() if bool(value) else false_fn()
    return control_flow_ops.cond(pred, true_fn, false_fn)


def _select_which_to_enqueue(tensor_list, keep_input) -> list:
    """The rows of each tensor where the vector `keep_input` is true."""
    select_i = math_ops.cast(keep_input, dtypes.int32)
    return [dynamic_partition(x, select_i, num_partitions=2)[1] for x in tensor_list]


def _enqueue_ops(queue, tensor_list, enqueue_many, keep_input):
    enqueue_fn = queue.enqueue_many if enqueue_many else queue.enqueue
    if keep_input.shape.ndims == 1:
        return enqueue_fn(_select_which_to_enqueue(tensor_list, keep_input))
    return _smart_cond(keep_input, lambda: enqueue_fn(tensor_list), control_flow_ops.no_op)


def _enqueue(queue, tensor_list, threads, enqueue_many, keep_input) -> None:
    """One enqueue op, run by `threads` tasks of the queue's runner."""
    enqueue_ops = [_enqueue_ops(queue, tensor_list, enqueue_many, keep_input)] * threads
    queue_runner.add_queue_runner(queue_runner.QueueRunner(queue, enqueue_ops))


def _enqueue_join(queue, tensor_list_list, enqueue_many, keep_input) -> None:
    """One enqueue op per tensor list, each run by a task of the queue's runner."""
    enqueue_ops = [_enqueue_ops(queue, tl, enqueue_many, keep_input)
                   for tl in tensor_list_list]
    queue_runner.add_queue_runner(queue_runner.QueueRunner(queue, enqueue_ops))


def _dequeue(queue, batch_size, allow_smaller_final_batch, name):
    if allow_smaller_final_batch:
        return queue.dequeue_up_to(batch_size, name=name)
    return queue.dequeue_many(batch_size, name=name)


def _fraction_full(queue, capacity) -> None:
    summary_ops.scalar(f"fraction_of_{capacity}_full",
                       math_ops.cast(queue.size(), dtypes.float32) * (1. / capacity))


def _fraction_over_min(queue, capacity, min_after_dequeue) -> None:
    full = (math_ops.cast(math_ops.maximum(0, queue.size() - min_after_dequeue),
                          dtypes.float32) * (1. / (capacity - min_after_dequeue)))
    summary_ops.scalar(f"fraction_over_{min_after_dequeue}_of_"
                       f"{capacity - min_after_dequeue}_full", full)


def _batch(tensors, batch_size, keep_input, num_threads=1, capacity=32, enqueue_many=False,
           shapes=None, dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None,
           name=None):
    tensor_list = _as_tensor_list(tensors)
    with ops.name_scope(name, "batch", list(tensor_list) + [keep_input]) as name:
        tensor_list = _validate(tensor_list)
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        types = _dtypes([tensor_list])
        shapes = _shapes([tensor_list], shapes, enqueue_many)
        queue_class = PaddingFIFOQueue if dynamic_pad else FIFOQueue
        queue = queue_class(capacity=capacity, dtypes=types, shapes=shapes,
                            shared_name=shared_name)
        _enqueue(queue, tensor_list, num_threads, enqueue_many, keep_input)
        _fraction_full(queue, capacity)
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, name)
        return _as_original_type(tensors, dequeued)


def _batch_join(tensors_list, batch_size, keep_input, capacity=32, enqueue_many=False,
                shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                shared_name=None, name=None):
    tensor_list_list = _as_tensor_list_list(tensors_list)
    flat = [t for tl in tensor_list_list for t in tl]
    with ops.name_scope(name, "batch_join", flat + [keep_input]) as name:
        tensor_list_list = _validate_join(tensor_list_list)
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        types = _dtypes(tensor_list_list)
        shapes = _shapes(tensor_list_list, shapes, enqueue_many)
        queue_class = PaddingFIFOQueue if dynamic_pad else FIFOQueue
        queue = queue_class(capacity=capacity, dtypes=types, shapes=shapes,
                            shared_name=shared_name)
        _enqueue_join(queue, tensor_list_list, enqueue_many, keep_input)
        _fraction_full(queue, capacity)
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, name)
        return _as_original_type(tensors_list[0], dequeued)


def _shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                   num_threads=1, seed=None, enqueue_many=False, shapes=None,
                   allow_smaller_final_batch=False, shared_name=None, name=None):
    tensor_list = _as_tensor_list(tensors)
    with ops.name_scope(name, "shuffle_batch", list(tensor_list) + [keep_input]) as name:
        if capacity <= min_after_dequeue:
            raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue "
                             f"{min_after_dequeue}.")
        tensor_list = _validate(tensor_list)
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        types = _dtypes([tensor_list])
        shapes = _shapes([tensor_list], shapes, enqueue_many)
        queue = RandomShuffleQueue(capacity=capacity, min_after_dequeue=min_after_dequeue,
                                   seed=seed, dtypes=types, shapes=shapes,
                                   shared_name=shared_name)
        _enqueue(queue, tensor_list, num_threads, enqueue_many, keep_input)
        _fraction_over_min(queue, capacity, min_after_dequeue)
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, name)
        return _as_original_type(tensors, dequeued)


def _shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, keep_input,
                        seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    tensor_list_list = _as_tensor_list_list(tensors_list)
    flat = [t for tl in tensor_list_list for t in tl]
    with ops.name_scope(name, "shuffle_batch_join", flat + [keep_input]) as name:
        tensor_list_list = _validate_join(tensor_list_list)
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        types = _dtypes(tensor_list_list)
        shapes = _shapes(tensor_list_list, shapes, enqueue_many)
        queue = RandomShuffleQueue(capacity=capacity, min_after_dequeue=min_after_dequeue,
                                   seed=seed, dtypes=types, shapes=shapes,
                                   shared_name=shared_name)
        _enqueue_join(queue, tensor_list_list, enqueue_many, keep_input)
        _fraction_over_min(queue, capacity, min_after_dequeue)
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, name)
        return _as_original_type(tensors_list[0], dequeued)


# The batching functions -----------------------------------------------------------------

def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
          dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of `batch_size` from a FIFOQueue (PaddingFIFOQueue with `dynamic_pad`) fed
    by `num_threads` runner tasks with `tensors` (a list or a dict; with `enqueue_many`,
    each a batch of rows)."""
    return _batch(tensors, batch_size, keep_input=True, num_threads=num_threads,
                  capacity=capacity, enqueue_many=enqueue_many, shapes=shapes,
                  dynamic_pad=dynamic_pad,
                  allow_smaller_final_batch=allow_smaller_final_batch,
                  shared_name=shared_name, name=name)


def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32,
                enqueue_many=False, shapes=None, dynamic_pad=False,
                allow_smaller_final_batch=False, shared_name=None, name=None):
    """batch, enqueueing only what `keep_input` (a bool scalar, or with `enqueue_many` a
    vector per row) keeps."""
    return _batch(tensors, batch_size, keep_input, num_threads=num_threads,
                  capacity=capacity, enqueue_many=enqueue_many, shapes=shapes,
                  dynamic_pad=dynamic_pad,
                  allow_smaller_final_batch=allow_smaller_final_batch,
                  shared_name=shared_name, name=name)


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None,
               dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None,
               name=None):
    """batch of several lists (or dicts) of tensors, one runner task enqueueing each."""
    return _batch_join(tensors_list, batch_size, keep_input=True, capacity=capacity,
                       enqueue_many=enqueue_many, shapes=shapes, dynamic_pad=dynamic_pad,
                       allow_smaller_final_batch=allow_smaller_final_batch,
                       shared_name=shared_name, name=name)


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None,
                  enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                  shared_name=None, name=None):
    """Batches drawn at random from a RandomShuffleQueue that keeps `min_after_dequeue`
    elements (until it is closed) to mix."""
    return _shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input=True,
                          num_threads=num_threads, seed=seed, enqueue_many=enqueue_many,
                          shapes=shapes, allow_smaller_final_batch=allow_smaller_final_batch,
                          shared_name=shared_name, name=name)


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None,
                       enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                       shared_name=None, name=None):
    """shuffle_batch of several lists (or dicts) of tensors, one runner task each."""
    return _shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                               keep_input=True, seed=seed, enqueue_many=enqueue_many,
                               shapes=shapes,
                               allow_smaller_final_batch=allow_smaller_final_batch,
                               shared_name=shared_name, name=name)


def maybe_batch_join(tensors_list, keep_input, batch_size, capacity=32, enqueue_many=False,
                     shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                     shared_name=None, name=None):
    """batch_join, enqueueing only what `keep_input` keeps."""
    return _batch_join(tensors_list, batch_size, keep_input, capacity=capacity,
                       enqueue_many=enqueue_many, shapes=shapes, dynamic_pad=dynamic_pad,
                       allow_smaller_final_batch=allow_smaller_final_batch,
                       shared_name=shared_name, name=name)


def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                        num_threads=1, seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    """shuffle_batch, enqueueing only what `keep_input` keeps."""
    return _shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                          num_threads=num_threads, seed=seed, enqueue_many=enqueue_many,
                          shapes=shapes, allow_smaller_final_batch=allow_smaller_final_batch,
                          shared_name=shared_name, name=name)


def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                             keep_input, seed=None, enqueue_many=False, shapes=None,
                             allow_smaller_final_batch=False, shared_name=None, name=None):
    """shuffle_batch_join, enqueueing only what `keep_input` keeps."""
    return _shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                               keep_input, seed=seed, enqueue_many=enqueue_many,
                               shapes=shapes,
                               allow_smaller_final_batch=allow_smaller_final_batch,
                               shared_name=shared_name, name=name)
