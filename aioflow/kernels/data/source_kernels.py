"""Datasets made from tensors: TensorDataset (one element), TensorSliceDataset (the
slices of its components along dimension 0), RangeDataset (tensorflow/core/kernels/
data/tensor_dataset_op.cc, tensor_slice_dataset_op.cc, range_dataset_op.cc).

Their iterators never suspend; a TensorSliceDataset's iterator also hands out a run of
slices at once (`take_slices`), which a batch over it uses instead of one get_next per
element."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel

from .dataset import Dataset, DatasetIterator, scalar_int, shapes_attr, variant


class TensorDataset(Dataset):
    type_string = "Tensor"

    def __init__(self, components: list, shapes):
        super().__init__([c.dtype for c in components], shapes)
        self.components = components

    def cardinality(self) -> int:
        return 1

    def make_iterator(self, ictx, prefix):
        return _TensorIterator(self, ictx, prefix)


class _TensorIterator(DatasetIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.produced = False

    async def get_next(self):
        if self.produced:
            return None
        self.produced = True
        return list(self.dataset.components)

    def save(self, state):
        state[self.key("produced")] = np.array(int(self.produced), np.int64)

    async def restore(self, state):
        self.produced = bool(state[self.key("produced")])


@register_kernel("TensorDataset", "CPU")
class TensorDatasetOp(OpKernel):
    """One element: the inputs."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.shapes = shapes_attr(ctx)

    def compute(self, ctx, inputs):
        return (variant(TensorDataset([np.asarray(v) for v in inputs], self.shapes)),)


class TensorSliceDataset(Dataset):
    type_string = "TensorSlice"

    def __init__(self, components: list, shapes):
        super().__init__([c.dtype for c in components], shapes)
        self.components = components
        self.n = components[0].shape[0]

    def cardinality(self) -> int:
        return self.n

    def make_iterator(self, ictx, prefix):
        return _SliceIterator(self, ictx, prefix)


class _SliceIterator(DatasetIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.i = 0

    async def get_next(self):
        i = self.i
        if i >= self.dataset.n:
            return None
        self.i = i + 1
        return [c[i, ...] for c in self.dataset.components]

    def take_slices(self, n: int) -> list | None:
        """Up to n next elements, stacked (one array per component), or None at the end."""
        i = self.i
        if i >= self.dataset.n:
            return None
        j = min(i + n, self.dataset.n)
        self.i = j
        return [c[i:j] for c in self.dataset.components]

    def save(self, state):
        state[self.key("i")] = np.array(self.i, np.int64)

    async def restore(self, state):
        self.i = int(state[self.key("i")])


@register_kernel("TensorSliceDataset", "CPU")
class TensorSliceDatasetOp(OpKernel):
    """The slices of the inputs along dimension 0 (all of one size)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.shapes = shapes_attr(ctx)

    def compute(self, ctx, inputs):
        components = [np.asarray(v) for v in inputs]
        for c in components:
            if c.ndim == 0:
                raise errors.InvalidArgumentError(
                    None, None, "All components must be at least 1-dimensional")
        n = components[0].shape[0]
        for c in components[1:]:
            if c.shape[0] != n:
                raise errors.InvalidArgumentError(
                    None, None, "All components must have the same size in the 0th "
                                "dimension")
        return (variant(TensorSliceDataset(components, self.shapes)),)


class RangeDataset(Dataset):
    type_string = "Range"

    def __init__(self, start: int, stop: int, step: int, dtype, shapes):
        super().__init__([dtype], shapes)
        self.start, self.stop, self.step = start, stop, step
        self.np_type = dtype.as_numpy_dtype

    def cardinality(self) -> int:
        if self.step > 0:
            return max(0, (self.stop - self.start - 1) // self.step + 1)
        return max(0, (self.start - self.stop - 1) // -self.step + 1)

    def make_iterator(self, ictx, prefix):
        return _RangeIterator(self, ictx, prefix)


class _RangeIterator(DatasetIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.next = dataset.start

    async def get_next(self):
        d = self.dataset
        value = self.next
        if (d.step > 0 and value >= d.stop) or (d.step < 0 and value <= d.stop):
            return None
        self.next = value + d.step
        return [d.np_type(value)]

    def take_slices(self, n: int) -> list | None:
        d = self.dataset
        value = self.next
        if (d.step > 0 and value >= d.stop) or (d.step < 0 and value <= d.stop):
            return None
        end = min(value + n * d.step, d.stop) if d.step > 0 else max(value + n * d.step,
                                                                      d.stop)
        out = np.arange(value, end, d.step, dtype=d.np_type)
        self.next = value + len(out) * d.step
        return [out]

    def save(self, state):
        state[self.key("next")] = np.array(self.next, np.int64)

    async def restore(self, state):
        self.next = int(state[self.key("next")])


@register_kernel("RangeDataset", "CPU")
class RangeDatasetOp(OpKernel):
    """start, start + step, ... before stop (int64 unless output_types says otherwise)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.shapes = shapes_attr(ctx)
        self.dtype = ctx.get_attr("output_types")[0]

    def compute(self, ctx, inputs):
        start, stop, step = (scalar_int(v, what)  # (TF's ParseScalarArgument)
                             for v, what in zip(inputs, ("start", "stop", "step"), strict=True))
        if step == 0:
            raise errors.InvalidArgumentError(None, None, "step must be a non-zero integer.")
        return (variant(RangeDataset(start, stop, step, dtypes.as_dtype(self.dtype),
                                     self.shapes)),)
