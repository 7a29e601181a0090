"""Datasets that call a function of the library per element: MapDataset,
ParallelMapDatasetV2, FilterDataset, FlatMapDataset, InterleaveDataset and
ParallelInterleaveDatasetV4 (tensorflow/core/kernels/data/map_dataset_op.cc,
parallel_map_dataset_op.cc, filter_dataset_op.cc, flat_map_dataset_op.cc,
interleave_dataset_op.cc, parallel_interleave_dataset_op.cc).

A function runs through the device's FunctionLibraryRuntime (its compiled form when it
has one, else its body as a sub-step). The parallel forms keep up to
`num_parallel_calls` calls in flight as tasks on the loop (a body's pool kernels then
overlap) and deliver results in input order, which is TF's deterministic order; the
interleaves produce TF's interleave order (cycle, then block)."""

from __future__ import annotations

import asyncio
import os
from collections import deque

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel

from .dataset import (
    UNKNOWN,
    FunctionFactory,
    dataset_of,
    scalar_int,
    shapes_attr,
    types_attr,
    variant,
)
from .transform_kernels import UnaryDataset, UnaryIterator


class _FunctionDatasetOp(OpKernel):
    """A dataset kernel with a function attr: input 0 is the input dataset, the
    `other_arguments` (Targuments) are captured by the function, `extra` scalars follow."""

    func_attr = "f"
    extra = 0

    def __init__(self, ctx):
        super().__init__(ctx)
        self.fn = FunctionFactory(ctx, self.func_attr)
        self.dtypes = types_attr(ctx)
        self.shapes = shapes_attr(ctx)
        self.num_captured = len(ctx.get_attr("Targuments", []))
        self.attrs = ctx

    def compute(self, ctx, inputs):
        captured = list(inputs[1:1 + self.num_captured])
        extra = [scalar_int(v, "argument") for v in inputs[1 + self.num_captured:]]
        return (variant(self.make(dataset_of(inputs[0]), self.fn.bind(captured), *extra)),)

    def make(self, input_, fn, *extra):
        raise NotImplementedError


# -- map ------------------------------------------------------------------------------------

class MapDataset(UnaryDataset):
    type_string = "Map"

    def __init__(self, input_, fn, dtypes_, shapes, preserve_cardinality: bool,
                 num_parallel_calls: int = 0):
        super().__init__(input_, dtypes_, shapes)
        self.fn = fn
        self.preserve_cardinality = preserve_cardinality
        self.num_parallel_calls = num_parallel_calls
        if num_parallel_calls:
            self.type_string = "ParallelMap"

    def cardinality(self):
        return self.input.cardinality() if self.preserve_cardinality else UNKNOWN

    def make_iterator(self, ictx, prefix):
        if self.num_parallel_calls:
            return _ParallelMapIterator(self, ictx, prefix)
        return _MapIterator(self, ictx, prefix)


async def _apply(dataset, ictx, element):
    """The function's results for one element; None when it raised OutOfRange (TF: the
    end of the sequence, unless preserve_cardinality, which makes it an error)."""
    out = dataset.fn.call_compiled(ictx, element)
    return out if out is not None else await _apply_step(dataset, ictx, element)


async def _apply_step(dataset, ictx, element):
    """_apply's call as a sub-step (the function has no compiled form, or it failed)."""
    try:
        return await dataset.fn.call_step(ictx, element)
    except errors.OutOfRangeError as e:
        if dataset.preserve_cardinality:
            raise errors.InvalidArgumentError(
                None, None, f"Function invocation produced OutOfRangeError: {e.message}"
            ) from e
        return None


class _MapIterator(UnaryIterator):
    async def get_next(self):
        if self.input is None:
            return None
        element = await self.input.get_next()
        if element is None:
            self.input = None
            return None
        ictx = self.ictx
        out = self.dataset.fn.call_compiled(ictx, element)  # in place: no coroutine
        if out is None:
            out = await _apply_step(self.dataset, ictx, element)
            if out is None:
                self.input = None
        if ictx.due():
            await ictx.pause()
        return out


class _Ready:
    """A parallel map's call that finished in place (a compiled function's results)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _seen(task: asyncio.Task) -> None:
    """A call's error is raised when its element is reached; one past an earlier error
    (or past the iterator's end) is never reached: asyncio must not report it as
    "never retrieved" (from a finalizer, at any point of the program)."""
    if not task.cancelled():
        task.exception()


class _ParallelMapIterator(UnaryIterator):
    """Calls for the next elements run as tasks, up to num_parallel_calls at once;
    results come out in input order. A function with a compiled form is called in place
    as each element arrives (it never waits: a task would only add its own cost, about
    7 µs an element); its results wait in the same queue, in order."""

    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        n = dataset.num_parallel_calls
        self.limit = max(1, os.cpu_count() or 1) if n < 0 else max(1, n)
        self.calls: deque = deque()

    async def get_next(self):
        loop = asyncio.get_running_loop()
        fn, ictx = self.dataset.fn, self.ictx
        while self.input is not None and len(self.calls) < self.limit:
            element = await self.input.get_next()
            if element is None:
                self.input = None
                break
            out = fn.call_compiled(ictx, element)
            if out is None:
                out = loop.create_task(_apply_step(self.dataset, ictx, element))
                out.add_done_callback(_seen)
            else:
                out = _Ready(out)
            self.calls.append(out)
        if not self.calls:
            return None
        call = self.calls[0]
        if type(call) is _Ready:
            self.calls.popleft()
            if ictx.due():
                await ictx.pause()
            return call.value
        try:
            out = await asyncio.shield(call)
        except asyncio.CancelledError:
            if call.cancelled():
                self.calls.popleft()
            raise
        self.calls.popleft()
        if out is None:  # the function ended the sequence: drop what is in flight
            self.close()
            self.input = None
        return out

    def close(self):
        for call in self.calls:
            if type(call) is not _Ready:
                call.cancel()
        self.calls.clear()
        super().close()

    def save(self, state):
        raise errors.UnimplementedError(
            None, None, "ParallelMapDatasetV2 iterators are not saveable here while calls "
                        "are in flight; use map without num_parallel_calls to checkpoint")


@register_kernel("MapDataset", "CPU")
class MapDatasetOp(_FunctionDatasetOp):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.preserve = bool(ctx.get_attr("preserve_cardinality", False))

    def make(self, input_, fn):
        return MapDataset(input_, fn, self.dtypes, self.shapes, self.preserve)


@register_kernel("ParallelMapDatasetV2", "CPU")
@register_kernel("ParallelMapDataset", "CPU")
class ParallelMapDatasetOp(MapDatasetOp):
    extra = 1

    def make(self, input_, fn, num_parallel_calls):
        if num_parallel_calls <= 0 and num_parallel_calls != -1:
            raise errors.InvalidArgumentError(
                None, None, "num_parallel_calls must be greater than zero.")
        return MapDataset(input_, fn, self.dtypes, self.shapes, self.preserve,
                          num_parallel_calls)


# -- filter ---------------------------------------------------------------------------------

class FilterDataset(UnaryDataset):
    type_string = "Filter"

    def __init__(self, input_, predicate):
        super().__init__(input_)
        self.predicate = predicate

    def make_iterator(self, ictx, prefix):
        return _FilterIterator(self, ictx, prefix)


class _FilterIterator(UnaryIterator):
    async def get_next(self):
        while self.input is not None:
            element = await self.input.get_next()
            if element is None:
                self.input = None
                return None
            result = await self.dataset.predicate(self.ictx, element)
            await self.ictx.pause()
            if len(result) != 1 or np.ndim(result[0]) != 0 or \
                    np.asarray(result[0]).dtype != np.bool_:
                raise errors.InvalidArgumentError(
                    None, None, "Filter predicate `predicate` must return a scalar bool.")
            if bool(result[0]):
                return element
        return None


@register_kernel("FilterDataset", "CPU")
class FilterDatasetOp(_FunctionDatasetOp):
    func_attr = "predicate"

    def make(self, input_, fn):
        return FilterDataset(input_, fn)


# -- flat_map and interleave ----------------------------------------------------------------

class InterleaveDataset(UnaryDataset):
    """flat_map is an interleave of cycle 1, block 1."""

    type_string = "Interleave"

    def __init__(self, input_, fn, dtypes_, shapes, cycle_length: int, block_length: int,
                 type_string: str = "Interleave"):
        super().__init__(input_, dtypes_, shapes)
        self.fn = fn
        self.cycle_length = cycle_length
        self.block_length = block_length
        self.type_string = type_string

    def make_iterator(self, ictx, prefix):
        return _InterleaveIterator(self, ictx, prefix)


class _InterleaveIterator(UnaryIterator):
    """TF's interleave order: `cycle_length` open elements visited in turn, up to
    `block_length` results from each; an element that ends frees its slot for the next
    input element, opened when the cycle comes back to the slot."""

    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.current: list = [None] * dataset.cycle_length
        self.args: list = [None] * dataset.cycle_length
        self.cycle_index = 0
        self.block_index = 0
        self.num_open = 0
        self.end_of_input = False

    def _advance_cycle(self):
        self.block_index = 0
        self.cycle_index = (self.cycle_index + 1) % self.dataset.cycle_length

    async def _open(self, element, slot: int):
        result = await self.dataset.fn(self.ictx, element)
        self.args[slot] = element
        return dataset_of(result[0]).make_iterator(self.ictx, f"{self.prefix}[{slot}]")

    def children(self):
        return [self.input, *self.current]

    def save(self, state):
        """TF's: the cycle's position, the input, and per open element the input element
        it was made from (args) and its iterator's state."""
        key = self.key
        for name in ("cycle_index", "block_index", "num_open"):
            state[key(name)] = np.array(getattr(self, name), np.int64)
        if self.end_of_input:
            state[key("end_of_input")] = np.array(b"", dtype=object)
        super().save(state)
        for i, it in enumerate(self.current):
            if it is not None:
                args = self.args[i]
                state[key(f"args_size[{i}]")] = np.array(len(args), np.int64)
                for j, value in enumerate(args):
                    state[key(f"args_list_[{i}][{j}]")] = np.asarray(value)
                it.save(state)

    async def restore(self, state):
        key = self.key
        for name in ("cycle_index", "block_index", "num_open"):
            setattr(self, name, int(state[key(name)]))
        self.end_of_input = key("end_of_input") in state
        await super().restore(state)
        n = self.dataset.cycle_length
        self.current, self.args = [None] * n, [None] * n
        for i in range(n):
            if key(f"args_size[{i}]") not in state:
                continue
            size = int(state[key(f"args_size[{i}]")])
            args = [state[key(f"args_list_[{i}][{j}]")] for j in range(size)]
            self.current[i] = await self._open(args, i)
            await self.current[i].restore(state)

    async def get_next(self):
        while not self.end_of_input or self.num_open:
            it = self.current[self.cycle_index]
            if it is not None:
                out = await it.get_next()
                if out is not None:
                    self.block_index += 1
                    if self.block_index == self.dataset.block_length:
                        self._advance_cycle()
                    return out
                self.current[self.cycle_index] = None
                self.args[self.cycle_index] = None
                self.num_open -= 1
                self._advance_cycle()
            elif not self.end_of_input:
                element = await self.input.get_next()
                if element is None:
                    self.end_of_input = True
                    self.input = None
                else:
                    self.current[self.cycle_index] = await self._open(element,
                                                                      self.cycle_index)
                    self.num_open += 1
            else:
                self._advance_cycle()
        return None

    def close(self):
        for it in self.current:
            if it is not None:
                it.close()
        super().close()


@register_kernel("FlatMapDataset", "CPU")
class FlatMapDatasetOp(_FunctionDatasetOp):
    def make(self, input_, fn):
        return InterleaveDataset(input_, fn, self.dtypes, self.shapes, 1, 1, "FlatMap")


def _cycle_length(n: int) -> int:
    if n == -1:  # AUTOTUNE: TF's port::MaxParallelism()
        return os.cpu_count() or 1
    if n <= 0:
        raise errors.InvalidArgumentError(
            None, None, "cycle_length must be greater than zero.")
    return n


@register_kernel("InterleaveDataset", "CPU")
class InterleaveDatasetOp(_FunctionDatasetOp):
    extra = 2

    def make(self, input_, fn, cycle_length, block_length):
        if block_length <= 0:
            raise errors.InvalidArgumentError(
                None, None, "block_length must be greater than zero.")
        return InterleaveDataset(input_, fn, self.dtypes, self.shapes,
                                 _cycle_length(cycle_length), block_length)


@register_kernel("ParallelInterleaveDatasetV4", "CPU")
class ParallelInterleaveDatasetOp(_FunctionDatasetOp):
    """The deterministic order is the interleave's (TF's ParallelInterleaveDatasetV4
    with deterministic or default): cycle_length, block_length,
    buffer_output_elements, prefetch_input_elements, num_parallel_calls follow."""

    extra = 5

    def make(self, input_, fn, cycle_length, block_length, buffer_output, prefetch_input,
             num_parallel_calls):
        if block_length <= 0:
            raise errors.InvalidArgumentError(
                None, None, "block_length must be greater than zero.")
        return InterleaveDataset(input_, fn, self.dtypes, self.shapes,
                                 _cycle_length(cycle_length), block_length,
                                 "ParallelInterleaveV4")


@register_kernel("LegacyParallelInterleaveDatasetV2", "CPU")
class LegacyParallelInterleaveDatasetOp(_FunctionDatasetOp):
    """TF 1's parallel_interleave (and the file readers' num_parallel_reads): with
    deterministic order ("true"/"default"), the interleave's order; cycle_length,
    block_length, buffer_output_elements, prefetch_input_elements follow."""

    def make(self, input_, fn, cycle_length, block_length, buffer_output, prefetch_input):
        if block_length <= 0:
            raise errors.InvalidArgumentError(
                None, None, "`block_length` must be > 0")
        return InterleaveDataset(input_, fn, self.dtypes, self.shapes,
                                 _cycle_length(cycle_length), block_length,
                                 "LegacyParallelInterleaveV2")


class ScanDataset(UnaryDataset):
    """Elements of `f(state, element) -> (new state, output)`, the state carried along
    (tf.data.experimental.scan; TF 2's `for x in dataset` in a tf.function)."""

    type_string = "Scan"

    def __init__(self, input_, fn, initial_state: list, dtypes_, shapes,
                 preserve_cardinality: bool):
        super().__init__(input_, dtypes_, shapes)
        self.fn = fn
        self.initial_state = initial_state
        self.preserve_cardinality = preserve_cardinality

    def cardinality(self):
        return self.input.cardinality() if self.preserve_cardinality else UNKNOWN

    def make_iterator(self, ictx, prefix):
        return _ScanIterator(self, ictx, prefix)


class _ScanIterator(UnaryIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.state = list(dataset.initial_state)

    async def get_next(self):
        if self.input is None:
            return None
        element = await self.input.get_next()
        if element is None:
            self.input = None
            return None
        try:
            results = await self.dataset.fn(self.ictx, self.state + element)
        except errors.OutOfRangeError:
            self.input = None
            return None
        n = len(self.state)
        self.state = list(results[:n])
        await self.ictx.pause()
        return list(results[n:])

    def save(self, state):
        super().save(state)
        state[self.key("state_size")] = np.array(len(self.state), np.int64)
        for i, value in enumerate(self.state):
            state[self.key(f"state[{i}]")] = np.asarray(value)

    async def restore(self, state):
        await super().restore(state)
        n = int(state[self.key("state_size")])
        self.state = [state[self.key(f"state[{i}]")] for i in range(n)]


@register_kernel("ScanDataset", "CPU")
class ScanDatasetOp(OpKernel):
    """Inputs: input_dataset, initial_state (Tstate), other_arguments (Targuments)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.fn = FunctionFactory(ctx, "f")
        self.num_state = len(ctx.get_attr("Tstate"))
        self.dtypes = types_attr(ctx)
        self.shapes = shapes_attr(ctx)
        self.preserve = bool(ctx.get_attr("preserve_cardinality", False))

    def compute(self, ctx, inputs):
        n = self.num_state
        return (variant(ScanDataset(dataset_of(inputs[0]), self.fn.bind(list(inputs[1 + n:])),
                                    list(inputs[1:1 + n]), self.dtypes, self.shapes,
                                    self.preserve)),)
