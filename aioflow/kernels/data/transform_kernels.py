"""Datasets that reorder, cut or join their inputs' elements without calling a function:
RepeatDataset, TakeDataset, SkipDataset, ShardDataset, ZipDataset, ConcatenateDataset,
and the pass-through OptimizeDataset(V2)/ModelDataset/OptionsDataset (graph rewrites
and autotuning options that change no element), as tensorflow/core/kernels/data/*_op.cc.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel

from .dataset import (
    INFINITE,
    UNKNOWN,
    Dataset,
    DatasetIterator,
    dataset_of,
    save_input,
    scalar_int,
    variant,
)


class UnaryDataset(Dataset):
    """A dataset over one input with the input's element signature unless told."""

    def __init__(self, input_: Dataset, dtypes_=None, shapes=None):
        super().__init__(input_.dtypes if dtypes_ is None else dtypes_,
                         input_.shapes if shapes is None else shapes)
        self.input = input_

    def inputs(self):
        return [self.input]


class UnaryIterator(DatasetIterator):
    """An iterator over one input iterator (None once exhausted and dropped)."""

    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.input = dataset.input.make_iterator(ictx, self.prefix)

    def children(self):
        return [self.input]

    def save(self, state):
        save_input(self.input, state, "input_impl_empty", self)

    async def restore(self, state):
        if self.key("input_impl_empty") in state:
            self.input = None
        else:
            await self.input.restore(state)

    def close(self):
        if self.input is not None:
            self.input.close()


# -- repeat ---------------------------------------------------------------------------------

class RepeatDataset(UnaryDataset):
    type_string = "Repeat"

    def __init__(self, input_, count: int):
        super().__init__(input_)
        self.count = count

    def cardinality(self):
        n = self.input.cardinality()
        if self.count < 0:
            return 0 if n == 0 else (UNKNOWN if n == UNKNOWN else INFINITE)
        if n < 0:
            return n if self.count else 0
        return n * self.count

    def make_iterator(self, ictx, prefix):
        if self.count == 0:
            return _EmptyIterator(self, ictx, prefix)
        return _RepeatIterator(self, ictx, prefix)


class _EmptyIterator(DatasetIterator):
    async def get_next(self):
        return None

    def save(self, state):
        pass

    async def restore(self, state):
        pass


class _RepeatIterator(UnaryIterator):
    """The input again and again, `count` times (forever when negative); an epoch that
    produces nothing ends it (TF: or it would loop forever)."""

    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.epoch = 0
        self.first_call = True

    async def get_next(self):
        d = self.dataset
        while self.input is not None:
            element = await self.input.get_next()
            if element is not None:
                self.first_call = False
                return element
            if self.first_call and d.count < 0:
                self.input = None
                return None
            self.epoch += 1
            if 0 <= d.count <= self.epoch:
                self.input = None
                return None
            self.first_call = True
            self.input = d.input.make_iterator(self.ictx, self.prefix)
        return None

    def save(self, state):
        state[self.key("i")] = np.array(self.epoch, np.int64)
        super().save(state)

    async def restore(self, state):
        self.epoch = int(state[self.key("i")])
        if self.key("input_impl_empty") not in state:
            self.input = self.dataset.input.make_iterator(self.ictx, self.prefix)
        await super().restore(state)


@register_kernel("RepeatDataset", "CPU")
class RepeatDatasetOp(OpKernel):
    def compute(self, ctx, inputs):
        return (variant(RepeatDataset(dataset_of(inputs[0]), scalar_int(inputs[1], "count"))),)


# -- take, skip, shard ----------------------------------------------------------------------

class TakeDataset(UnaryDataset):
    type_string = "FiniteTake"

    def __init__(self, input_, count: int):
        super().__init__(input_)
        self.count = count

    def cardinality(self):
        n = self.input.cardinality()
        if self.count < 0:
            return n
        if n == UNKNOWN:
            return UNKNOWN
        return self.count if n == INFINITE else min(n, self.count)

    def make_iterator(self, ictx, prefix):
        return _TakeIterator(self, ictx, prefix)


class _TakeIterator(UnaryIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.i = 0

    async def get_next(self):
        count = self.dataset.count
        if self.input is None or (0 <= count <= self.i):
            self.input = None
            return None
        element = await self.input.get_next()
        if element is None:
            self.input = None
            return None
        self.i += 1
        return element

    def save(self, state):
        state[self.key("i")] = np.array(self.i, np.int64)
        super().save(state)

    async def restore(self, state):
        self.i = int(state[self.key("i")])
        await super().restore(state)


@register_kernel("TakeDataset", "CPU")
class TakeDatasetOp(OpKernel):
    def compute(self, ctx, inputs):
        return (variant(TakeDataset(dataset_of(inputs[0]), scalar_int(inputs[1], "count"))),)


class SkipDataset(UnaryDataset):
    type_string = "FiniteSkip"

    def __init__(self, input_, count: int):
        super().__init__(input_)
        self.count = count

    def cardinality(self):
        n = self.input.cardinality()
        if n < 0:
            return n
        return 0 if self.count < 0 else max(0, n - self.count)

    def make_iterator(self, ictx, prefix):
        return _SkipIterator(self, ictx, prefix)


class _SkipIterator(UnaryIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.i = 0

    async def get_next(self):
        if self.input is None:
            return None
        count = self.dataset.count
        while count < 0 or self.i < count:
            if await self.input.get_next() is None:
                self.input = None
                return None
            self.i += 1
        element = await self.input.get_next()
        if element is None:
            self.input = None
        return element

    def save(self, state):
        state[self.key("i")] = np.array(self.i, np.int64)
        super().save(state)

    async def restore(self, state):
        self.i = int(state[self.key("i")])
        await super().restore(state)


@register_kernel("SkipDataset", "CPU")
class SkipDatasetOp(OpKernel):
    def compute(self, ctx, inputs):
        return (variant(SkipDataset(dataset_of(inputs[0]), scalar_int(inputs[1], "count"))),)


class ShardDataset(UnaryDataset):
    type_string = "Shard"

    def __init__(self, input_, num_shards: int, index: int, require_non_empty: bool):
        super().__init__(input_)
        self.num_shards, self.index = num_shards, index
        self.require_non_empty = require_non_empty

    def cardinality(self):
        n = self.input.cardinality()
        if n < 0:
            return n
        return n // self.num_shards + (1 if self.index < n % self.num_shards else 0)

    def make_iterator(self, ictx, prefix):
        return _ShardIterator(self, ictx, prefix)


class _ShardIterator(UnaryIterator):
    """Elements index, index + n, index + 2n, ... of the input."""

    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.next_index = 0

    async def get_next(self):
        d = self.dataset
        while self.input is not None:
            element = await self.input.get_next()
            if element is None:
                self.input = None
                return None
            position = self.next_index
            self.next_index += 1
            if position % d.num_shards == d.index:
                return element
        return None

    def save(self, state):
        state[self.key("next_index")] = np.array(self.next_index, np.int64)
        super().save(state)

    async def restore(self, state):
        self.next_index = int(state[self.key("next_index")])
        await super().restore(state)


@register_kernel("ShardDataset", "CPU")
class ShardDatasetOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.require_non_empty = bool(ctx.get_attr("require_non_empty", False))

    def compute(self, ctx, inputs):
        n = scalar_int(inputs[1], "num_shards")
        index = scalar_int(inputs[2], "index")
        if n <= 0 and n != -1:
            raise errors.InvalidArgumentError(
                None, None, f"Number of shards must be greater than zero (currently "
                            f"num_shards = {n}).")
        if not 0 <= index < n:
            raise errors.InvalidArgumentError(
                None, None, f"Index must be between 0 and {n - 1} (currently index = "
                            f"{index}).")
        return (variant(ShardDataset(dataset_of(inputs[0]), n, index,
                                     self.require_non_empty)),)


# -- zip, concatenate -----------------------------------------------------------------------

class ZipDataset(Dataset):
    type_string = "Zip"

    def __init__(self, inputs: list):
        super().__init__([t for d in inputs for t in d.dtypes],
                         [s for d in inputs for s in d.shapes])
        self.datasets = inputs

    def inputs(self):
        return list(self.datasets)

    def cardinality(self):
        ns = [d.cardinality() for d in self.datasets]
        finite = [n for n in ns if n >= 0]
        if finite:
            return min(finite)
        return UNKNOWN if UNKNOWN in ns else INFINITE

    def make_iterator(self, ictx, prefix):
        return _ZipIterator(self, ictx, prefix)


class _ZipIterator(DatasetIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.inputs = [d.make_iterator(ictx, f"{self.prefix}[{i}]")
                       for i, d in enumerate(dataset.datasets)]

    async def get_next(self):
        if self.inputs is None:
            return None
        out = []
        for it in self.inputs:
            element = await it.get_next()
            if element is None:
                self.inputs = None
                return None
            out.extend(element)
        return out

    def children(self):
        return list(self.inputs or [])

    def save(self, state):
        if self.inputs is None:
            state[self.key("input_impls_empty")] = np.array(b"", dtype=object)
        else:
            for it in self.inputs:
                it.save(state)

    async def restore(self, state):
        if self.key("input_impls_empty") in state:
            self.inputs = None
        else:
            for it in self.inputs:
                await it.restore(state)


@register_kernel("ZipDataset", "CPU")
class ZipDatasetOp(OpKernel):
    def compute(self, ctx, inputs):
        return (variant(ZipDataset([dataset_of(v) for v in inputs])),)


class ConcatenateDataset(Dataset):
    type_string = "Concatenate"

    def __init__(self, first: Dataset, second: Dataset):
        shapes = [a if a == b else None for a, b in zip(first.shapes, second.shapes,
                                                         strict=False)]
        super().__init__(first.dtypes, shapes)
        self.first, self.second = first, second

    def inputs(self):
        return [self.first, self.second]

    def cardinality(self):
        a, b = self.first.cardinality(), self.second.cardinality()
        if INFINITE in (a, b):
            return INFINITE
        if UNKNOWN in (a, b):
            return UNKNOWN
        return a + b

    def make_iterator(self, ictx, prefix):
        return _ConcatenateIterator(self, ictx, prefix)


class _ConcatenateIterator(DatasetIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.i = 0
        self.input = dataset.first.make_iterator(ictx, self.prefix)

    async def get_next(self):
        while self.input is not None:
            element = await self.input.get_next()
            if element is not None:
                return element
            self.i += 1
            self.input = (self.dataset.second.make_iterator(self.ictx, self.prefix)
                          if self.i == 1 else None)
        return None

    def children(self):
        return [self.input]

    def save(self, state):
        state[self.key("i")] = np.array(self.i, np.int64)
        save_input(self.input, state, "input_impl_uninitialized", self)

    async def restore(self, state):
        self.i = int(state[self.key("i")])
        if self.key("input_impl_uninitialized") in state or self.i > 1:
            self.input = None
            return
        source = self.dataset.first if self.i == 0 else self.dataset.second
        self.input = source.make_iterator(self.ictx, self.prefix)
        await self.input.restore(state)


@register_kernel("ConcatenateDataset", "CPU")
class ConcatenateDatasetOp(OpKernel):
    def compute(self, ctx, inputs):
        first, second = dataset_of(inputs[0]), dataset_of(inputs[1])
        if first.dtypes != second.dtypes:
            def names(ts):
                return ", ".join(t.name for t in ts)
            raise errors.InvalidArgumentError(
                None, None, f"input dataset and dataset to concatenate have different "
                            f"types; [{names(first.dtypes)}] vs [{names(second.dtypes)}]")
        return (variant(ConcatenateDataset(first, second)),)


# -- pass-through ---------------------------------------------------------------------------

@register_kernel("OptimizeDataset", "CPU")
@register_kernel("OptimizeDatasetV2", "CPU")
@register_kernel("ModelDataset", "CPU")
@register_kernel("OptionsDataset", "CPU")
class PassThroughDatasetOp(OpKernel):
    """Graph rewrites, autotuning and options: the elements are the input's."""

    def compute(self, ctx, inputs):
        return (variant(dataset_of(inputs[0])),)


@register_kernel("DatasetCardinality", "CPU")
class DatasetCardinalityOp(OpKernel):
    """The number of elements, or -1 (infinite), -2 (unknown)."""

    def compute(self, ctx, inputs):
        return (np.array(dataset_of(inputs[0]).cardinality(), np.int64),)
