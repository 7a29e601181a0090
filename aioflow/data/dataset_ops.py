"""af.data.Dataset: TF 1.x's tf.data.Dataset in graph mode (tensorflow/python/data/ops/
dataset_ops.py and its per-transformation modules), building the same ops with the same
names, inputs and attrs, so a pipeline's GraphDef is TF's node for node.

A Dataset holds its variant tensor (the dataset op's output) and its element_spec (a
structure of TensorSpecs: tuples, namedtuples and dicts nest, lists are tensors).
Functions given to map/filter/flat_map/interleave/reduce are traced into the graph's
function library (func_graph.py) and named by the op's `f` attr."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, op_def_registry, ops, random_seed, tensor_shape
from aioflow.framework.constant_value import constant_value
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.tensor_spec import TensorSpec
from aioflow.ops import array_ops, control_flow_ops, math_ops, string_ops
from aioflow.ops.constant_op import constant

from . import generator_ops, iterator_ops, structure
from .func_graph import trace

AUTOTUNE = -1
INFINITE = -1
UNKNOWN = -2


def _int64(value, name: str) -> ops.Tensor:
    return ops.convert_to_tensor(value, dtype=dtypes.int64, name=name)


def _bool(value, name: str) -> ops.Tensor:
    return ops.convert_to_tensor(value, dtype=dtypes.bool, name=name)


def _normalize_element(element) -> list[ops.Tensor]:
    """TF's structure.normalize_element: each leaf a tensor, made in a
    "normalize_element" scope as component_<i>."""
    leaves = structure.flatten(element)
    with ops.name_scope("normalize_element"):
        return [ops.convert_to_tensor(t, name=f"component_{i}") for i, t in enumerate(leaves)]


def _seeds(seed):
    """tf.data's get_seed (python/data/util/random_seed.py): the two int64 seed tensors;
    (0, 0) from the graph rules becomes (0, 2**31 - 1) in the graph, as TF's."""
    seed, seed2 = random_seed.get_seed(seed)
    if seed is None:
        seed_t = constant(0, dtype=dtypes.int64, name="seed")
    else:
        seed_t = _int64(seed, "seed")
    if seed2 is None:
        seed2_t = constant(0, dtype=dtypes.int64, name="seed2")
    else:
        with ops.name_scope("seed2") as scope:
            seed2_t = ops.convert_to_tensor(seed2, dtype=dtypes.int64)
            seed2_t = array_ops.where_v2(
                math_ops.logical_and(math_ops.equal(seed_t, 0), math_ops.equal(seed2_t, 0)),
                constant(2**31 - 1, dtype=dtypes.int64), seed2_t, name=scope)
    return seed_t, seed2_t


def _call_with_structure(input_spec):
    """A `call` for trace(): packs the args as the element, calls fn as TF's wrapper
    does (a plain tuple is unpacked into arguments), and flattens its results (a list
    result is a tuple, leaves become tensors)."""
    def call(fn, args):
        args = [DatasetV1(a, s.element_spec) if isinstance(s, structure.DatasetSpec) else a
                for a, s in zip(args, structure.flatten(input_spec), strict=True)]
        nested = structure.pack_sequence_as(input_spec, args)
        ret = fn(*nested) if type(nested) is tuple else fn(nested)
        if isinstance(ret, list):
            ret = tuple(ret)
        if isinstance(ret, DatasetV1):
            return [ret._variant_tensor], ret
        flat = [t if isinstance(t, ops.Tensor) else ops.convert_to_tensor(t)
                for t in structure.flatten(ret)]
        return flat, ret
    return call


def _trace(what: str, fn, input_spec):
    """(func attr, the output structure of specs, captured tensors)."""
    specs = structure.flatten(input_spec)
    func, flat_out, captured, structured = trace(
        what, fn, specs, _call_with_structure(input_spec), ops.get_default_graph())
    if isinstance(structured, DatasetV1):
        out_spec = structured
    else:
        out_spec = structure.pack_sequence_as(
            structured, [TensorSpec(t.shape, t.dtype) for t in flat_out])
    return func, out_spec, captured


class DatasetV1:
    """A dataset in the graph: its variant tensor and element structure."""

    def __init__(self, variant_tensor: ops.Tensor, element_spec):
        self._variant_tensor = variant_tensor
        self._element_spec = element_spec

    # -- structure ------------------------------------------------------------------------
    @property
    def element_spec(self):
        return self._element_spec

    @property
    def output_types(self):
        return structure.map_structure(lambda s: s.dtype, self._element_spec)

    @property
    def output_shapes(self):
        return structure.map_structure(lambda s: s.shape, self._element_spec)

    @property
    def output_classes(self):
        return structure.map_structure(lambda s: ops.Tensor, self._element_spec)

    def _flat_structure(self) -> dict:
        return {"output_types": structure.flat_types(self._element_spec),
                "output_shapes": structure.flat_shapes(self._element_spec)}

    def _unary(self, op_type: str, element_spec=None, **inputs) -> DatasetV1:
        spec = self._element_spec if element_spec is None else element_spec
        if any(a.name == "output_types" for a in op_def_registry.get(op_type).attr):
            inputs["output_types"] = structure.flat_types(spec)
        variant = apply_op(op_type, input_dataset=self._variant_tensor,
                           output_shapes=structure.flat_shapes(spec), metadata="", **inputs)
        return DatasetV1(variant, spec)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} element_spec={self._element_spec}>"

    # -- sources ----------------------------------------------------------------------------
    @staticmethod
    def from_tensors(tensors) -> DatasetV1:
        components = _normalize_element(tensors)
        spec = structure.pack_sequence_as(
            tensors, [TensorSpec(t.shape, t.dtype) for t in components])
        variant = apply_op("TensorDataset", components=components,
                           output_shapes=[t.shape for t in components], metadata="")
        return DatasetV1(variant, spec)

    @staticmethod
    def from_tensor_slices(tensors, is_files: bool = False) -> DatasetV1:
        components = _normalize_element(tensors)
        for t in components:
            if t.shape.ndims == 0:
                raise ValueError(f"Unbatching a tensor is only supported for rank >= 1, "
                                 f"got {t}")
        spec = structure.pack_sequence_as(
            tensors, [TensorSpec(t.shape[1:], t.dtype) for t in components])
        variant = apply_op("TensorSliceDataset", components=components,
                           output_shapes=structure.flat_shapes(spec), is_files=is_files,
                           metadata="", replicate_on_split=False)
        return DatasetV1(variant, spec)

    @staticmethod
    def range(*args, output_type=dtypes.int64) -> DatasetV1:
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid arguments to RangeDataset: {args}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (
            (args[0], args[1], 1) if len(args) == 2 else args)
        start_t, stop_t, step_t = (_int64(start, "start"), _int64(stop, "stop"),
                                   _int64(step, "step"))
        variant = apply_op("RangeDataset", start=start_t, stop=stop_t, step=step_t,
                           output_types=[output_type], output_shapes=[[]], metadata="",
                           replicate_on_split=False)
        return DatasetV1(variant, TensorSpec([], output_type))

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None) -> DatasetV1:
        """The values `generator(*args)` yields (its next() runs on the pool)."""
        return DatasetV1(*generator_ops.from_generator(
            generator, output_types, output_shapes, args, output_signature))

    @staticmethod
    def from_async_generator(agen_fn, output_signature, args=None) -> DatasetV1:
        """aioflow's: the values an async iterator yields (`agen_fn(*args)`: an async
        generator, a websocket reader, a queue consumer), awaited on the event loop."""
        return DatasetV1(*generator_ops.from_async_generator(agen_fn, output_signature,
                                                             args))

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None) -> DatasetV1:
        """The files matching `file_pattern` (a pattern or patterns), shuffled unless
        shuffle=False (TF's list_files: MatchingFiles, then an Assert that some match)."""
        with ops.name_scope("list_files"):
            if shuffle is None:
                shuffle = True
            file_pattern = ops.convert_to_tensor(file_pattern, dtype=dtypes.string,
                                                 name="file_pattern")
            matching = apply_op("MatchingFiles", pattern=file_pattern)
            condition = math_ops.greater(array_ops.shape(matching)[0], 0,
                                         name="match_not_empty")
            message = math_ops.add(
                "No files matched pattern: ",
                string_ops.reduce_join(file_pattern, separator=", "), name="message")
            assert_not_empty = control_flow_ops.Assert(condition, [message], summarize=1,
                                                       name="assert_not_empty")
            with ops.control_dependencies([assert_not_empty]):
                matching = array_ops.identity(matching)
            dataset = DatasetV1.from_tensor_slices(matching, is_files=True)
            if shuffle:
                count = array_ops.shape(matching, out_type=dtypes.int64)[0]
                buffer_size = math_ops.maximum(count, 1)
                dataset = dataset.shuffle(buffer_size, seed=seed)
            return dataset

    @staticmethod
    def zip(datasets) -> DatasetV1:
        flat = structure.flatten(datasets)
        spec = structure.pack_sequence_as(datasets, [d.element_spec for d in flat])
        variant = apply_op("ZipDataset", input_datasets=[d._variant_tensor for d in flat],
                           output_types=structure.flat_types(spec),
                           output_shapes=structure.flat_shapes(spec), metadata="")
        return DatasetV1(variant, spec)

    # -- transformations --------------------------------------------------------------------
    def concatenate(self, dataset: DatasetV1) -> DatasetV1:
        structure.assert_same_structure(self._element_spec, dataset._element_spec)
        for a, b in zip(structure.flatten(self._element_spec),
                        structure.flatten(dataset._element_spec), strict=True):
            if a.dtype != b.dtype:
                raise TypeError(f"Incompatible dataset elements:\n  {self._element_spec} vs. "
                                f"  {dataset._element_spec}")
        spec = structure.pack_sequence_as(self._element_spec, [
            TensorSpec(structure.most_specific_compatible_shape(a.shape, b.shape), a.dtype)
            for a, b in zip(structure.flatten(self._element_spec),
                            structure.flatten(dataset._element_spec), strict=True)])
        variant = apply_op("ConcatenateDataset", input_dataset=self._variant_tensor,
                           another_dataset=dataset._variant_tensor,
                           output_types=structure.flat_types(spec),
                           output_shapes=structure.flat_shapes(spec), metadata="")
        return DatasetV1(variant, spec)

    def repeat(self, count=None) -> DatasetV1:
        return self._unary("RepeatDataset", count=_int64(-1 if count is None else count,
                                                          "count"))

    def take(self, count) -> DatasetV1:
        return self._unary("TakeDataset", count=_int64(count, "count"))

    def skip(self, count) -> DatasetV1:
        return self._unary("SkipDataset", count=_int64(count, "count"))

    def shard(self, num_shards, index) -> DatasetV1:
        return self._unary("ShardDataset", num_shards=_int64(num_shards, "num_shards"),
                           index=_int64(index, "index"), require_non_empty=False)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None) -> DatasetV1:
        buffer_size_t = _int64(buffer_size, "buffer_size")
        seed_t, seed2_t = _seeds(seed)
        reshuffle = True if reshuffle_each_iteration is None else reshuffle_each_iteration
        return self._unary("ShuffleDataset", buffer_size=buffer_size_t, seed=seed_t,
                           seed2=seed2_t, reshuffle_each_iteration=reshuffle)

    def prefetch(self, buffer_size) -> DatasetV1:
        if buffer_size is None:
            buffer_size = AUTOTUNE
        buffer_size_t = _int64(buffer_size, "buffer_size")
        with ops.colocate_with(self._variant_tensor.op):
            return self._unary("PrefetchDataset", buffer_size=buffer_size_t, slack_period=0,
                               legacy_autotune=buffer_size == AUTOTUNE, buffer_size_min=0)

    def batch(self, batch_size, drop_remainder=False) -> DatasetV1:
        batch_size_t = _int64(batch_size, "batch_size")
        drop_t = _bool(drop_remainder, "drop_remainder")
        static = constant_value(batch_size_t) if drop_remainder else None
        dim = int(static) if static is not None else None
        spec = structure.map_structure(
            lambda s: TensorSpec(tensor_shape.TensorShape([dim]).concatenate(s.shape),
                                 s.dtype), self._element_spec)
        return self._unary("BatchDatasetV2", spec, batch_size=batch_size_t,
                           drop_remainder=drop_t, parallel_copy=False)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False) -> DatasetV1:
        flat_specs = structure.flatten(self._element_spec)
        if padded_shapes is None:
            flat_padded = [s.shape for s in flat_specs]
        else:
            flat_padded = _flatten_up_to(self._element_spec, padded_shapes)
        if padding_values is None:
            flat_values = [None] * len(flat_specs)
        else:
            flat_values = _flatten_up_to(self._element_spec, padding_values)
        batch_size_t = _int64(batch_size, "batch_size")
        shape_tensors = [_padded_shape_tensor(p) for p in flat_padded]
        value_tensors = [_padding_value(v, s.dtype) for v, s in zip(flat_values, flat_specs,
                                                                       strict=True)]
        drop_t = _bool(drop_remainder, "drop_remainder")
        static = constant_value(batch_size_t) if drop_remainder else None
        dim = int(static) if static is not None else None
        spec = structure.pack_sequence_as(self._element_spec, [
            TensorSpec(tensor_shape.TensorShape([dim]).concatenate(_padded_static(p)),
                       s.dtype) for p, s in zip(flat_padded, flat_specs, strict=True)])
        return self._unary("PaddedBatchDatasetV2", spec, batch_size=batch_size_t,
                           padded_shapes=shape_tensors, padding_values=value_tensors,
                           drop_remainder=drop_t, parallel_copy=False)

    def unbatch(self) -> DatasetV1:
        normalized = self.map(normalize)
        spec = structure.map_structure(lambda s: TensorSpec(s.shape[1:], s.dtype),
                                       normalized._element_spec)
        return normalized._unary("UnbatchDataset", spec)

    def map(self, map_func, num_parallel_calls=None, deterministic=None) -> DatasetV1:
        func, out_spec, captured = _trace("Dataset_map", map_func, self._element_spec)
        common = dict(other_arguments=captured, f=func, use_inter_op_parallelism=True,
                      preserve_cardinality=False)
        if num_parallel_calls is None:
            return self._unary("MapDataset", out_spec, force_synchronous=False, **common)
        n = _int64(num_parallel_calls, "num_parallel_calls")
        det = "default" if deterministic is None else ("true" if deterministic else "false")
        return self._unary("ParallelMapDatasetV2", out_spec, num_parallel_calls=n,
                           deterministic=det, use_unbounded_threadpool=False, **common)

    def filter(self, predicate) -> DatasetV1:
        func, out_spec, captured = _trace("Dataset_filter", predicate, self._element_spec)
        flat = structure.flatten(out_spec)
        if len(flat) != 1 or flat[0].dtype != dtypes.bool or flat[0].shape.ndims != 0:
            raise ValueError(f"Invalid `predicate`. `predicate` must return a `tf.bool` "
                             f"scalar tensor, but its return type is {out_spec}.")
        return self._unary("FilterDataset", other_arguments=captured, predicate=func)

    def flat_map(self, map_func) -> DatasetV1:
        func, out, captured = _trace("Dataset_flat_map", map_func, self._element_spec)
        _check_dataset(out, "flat_map")
        return self._unary("FlatMapDataset", out.element_spec, other_arguments=captured,
                           f=func)

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None) -> DatasetV1:
        func, out, captured = _trace("Dataset_interleave", map_func, self._element_spec)
        _check_dataset(out, "interleave")
        cycle = _int64(AUTOTUNE if cycle_length is None else cycle_length, "cycle_length")
        block = _int64(1 if block_length is None else block_length, "block_length")
        if num_parallel_calls is None:
            return self._unary("InterleaveDataset", out.element_spec,
                               other_arguments=captured, cycle_length=cycle,
                               block_length=block, f=func)
        buffer_output = _int64(AUTOTUNE, "buffer_output_elements")
        prefetch_input = _int64(AUTOTUNE, "prefetch_input_elements")
        n = _int64(num_parallel_calls, "num_parallel_calls")
        det = "default" if deterministic is None else ("true" if deterministic else "false")
        return self._unary("ParallelInterleaveDatasetV4", out.element_spec,
                           other_arguments=captured, cycle_length=cycle, block_length=block,
                           buffer_output_elements=buffer_output,
                           prefetch_input_elements=prefetch_input, num_parallel_calls=n,
                           f=func, deterministic=det)

    def _legacy_parallel_interleave(self, map_func, cycle_length, block_length,
                                    sloppy=False, buffer_output_elements=None,
                                    prefetch_input_elements=None) -> DatasetV1:
        """TF 1's tf.data.experimental.parallel_interleave (LegacyParallelInterleave)."""
        func, out, captured = _trace("tf_data_experimental_parallel_interleave", map_func,
                                     self._element_spec)
        _check_dataset(out, "parallel_interleave")
        cycle = _int64(cycle_length, "cycle_length")
        block = _int64(block_length, "block_length")
        buffer_output = _int64(2 * block_length if buffer_output_elements is None
                               else buffer_output_elements, "buffer_output_elements")
        prefetch_input = _int64(2 * cycle_length if prefetch_input_elements is None
                                else prefetch_input_elements, "prefetch_input_elements")
        return self._unary("LegacyParallelInterleaveDatasetV2", out.element_spec,
                           other_arguments=captured, cycle_length=cycle, block_length=block,
                           buffer_output_elements=buffer_output,
                           prefetch_input_elements=prefetch_input, f=func,
                           deterministic="false" if sloppy else "true")

    def window(self, size, shift=None, stride=1, drop_remainder=False) -> DatasetV1:
        """Windows of the elements: per component, a dataset of up to `size` elements."""
        size_t = _int64(size, "size")
        shift_t = _int64(size if shift is None else shift, "shift")
        stride_t = _int64(stride, "stride")
        drop_t = _bool(drop_remainder, "drop_remainder")
        spec = structure.map_structure(structure.DatasetSpec, self._element_spec)
        return self._unary("WindowDataset", spec, size=size_t, shift=shift_t,
                           stride=stride_t, drop_remainder=drop_t)

    def cardinality(self) -> ops.Tensor:
        """The number of elements (-1 infinite, -2 unknown), an int64 scalar tensor."""
        return apply_op("DatasetCardinality", input_dataset=self._variant_tensor,
                        cardinality_options="")

    def _shuffle_and_repeat(self, buffer_size, count=None, seed=None) -> DatasetV1:
        buffer_size_t = _int64(buffer_size, "buffer_size")
        count_t = _int64(-1 if count is None else count, "count")
        seed_t, seed2_t = _seeds(seed)
        return self._unary("ShuffleAndRepeatDataset", buffer_size=buffer_size_t,
                           seed=seed_t, seed2=seed2_t, count=count_t,
                           reshuffle_each_iteration=True)

    def cache(self, filename="") -> DatasetV1:
        filename_t = ops.convert_to_tensor(filename, dtype=dtypes.string, name="filename")
        return self._unary("CacheDataset", filename=filename_t)

    def apply(self, transformation_func) -> DatasetV1:
        dataset = transformation_func(self)
        if not isinstance(dataset, DatasetV1):
            raise TypeError(f"`transformation_func` must return a `tf.data.Dataset` object. "
                            f"Got {type(dataset)}.")
        return dataset

    def reduce(self, initial_state, reduce_func):
        with ops.name_scope("initial_state"):
            state = _normalize_element(initial_state)
        state_spec = structure.pack_sequence_as(
            initial_state, [TensorSpec(t.shape, t.dtype) for t in state])
        arg_spec = (state_spec, self._element_spec)
        func, out_spec, captured = _trace("reduce", reduce_func, arg_spec)
        flat = apply_op("ReduceDataset", input_dataset=self._variant_tensor,
                        initial_state=state, other_arguments=captured, f=func,
                        output_types=structure.flat_types(out_spec),
                        output_shapes=structure.flat_shapes(out_spec),
                        use_inter_op_parallelism=True, metadata="")
        flat = flat if isinstance(flat, list) else [flat]
        return structure.pack_sequence_as(out_spec, flat)

    # -- iterators ------------------------------------------------------------------------
    def make_one_shot_iterator(self) -> iterator_ops.Iterator:
        return iterator_ops.make_one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name=None) -> iterator_ops.Iterator:
        return iterator_ops.make_initializable_iterator(self, shared_name)


Dataset = DatasetV1


def normalize(*args):
    """unbatch's identity map (TF's `normalize`)."""
    return args if len(args) != 1 else args[0]


def _check_dataset(value, what: str) -> None:
    if not isinstance(value, DatasetV1):
        raise TypeError(f"The `map_func` argument of `{what}` must return a `Dataset` "
                        f"object. Got {type(value)}.")


def _flatten_up_to(spec, value) -> list:
    if structure.is_nested(spec):
        if isinstance(spec, dict):
            return [x for k in sorted(spec) for x in _flatten_up_to(spec[k], value[k])]
        return [x for s, v in zip(spec, value, strict=True) for x in _flatten_up_to(s, v)]
    return [value]


def _padded_shape_tensor(shape) -> ops.Tensor:
    if isinstance(shape, ops.Tensor):
        return shape
    dims = tensor_shape.as_shape(shape).as_list() if not isinstance(shape, list) else shape
    dims = [-1 if d is None else int(d) for d in dims]
    return ops.convert_to_tensor(np.array(dims, np.int64), dtype=dtypes.int64)


def _padded_static(shape) -> tensor_shape.TensorShape:
    if isinstance(shape, ops.Tensor):
        value = constant_value(shape)
        if value is None:
            return tensor_shape.TensorShape(None)
        shape = list(value)
    dims = tensor_shape.as_shape(shape).as_list() if not isinstance(shape, list) else shape
    return tensor_shape.TensorShape([None if d is None or d < 0 else int(d) for d in dims])


def _padding_value(value, dtype) -> ops.Tensor:
    if value is None:
        value = b"" if dtype == dtypes.string else 0
    return ops.convert_to_tensor(value, dtype=dtype, name="padding_value")
