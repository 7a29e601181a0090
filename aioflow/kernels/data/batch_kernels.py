"""Datasets that group or split elements: BatchDatasetV2, PaddedBatchDatasetV2 and
UnbatchDataset (tensorflow/core/kernels/data/batch_dataset_op.cc,
padded_batch_dataset_op.cc, experimental/unbatch_dataset_op.cc).

A batch over an input that can hand out runs of slices at once (a TensorSliceDataset's
or RangeDataset's iterator) takes them in one call: a from_tensor_slices(...).batch(n)
step costs one slice per component, not n element fetches."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel

from .dataset import INFINITE, UNKNOWN, dataset_of, scalar_int, shapes_attr, variant
from .transform_kernels import UnaryDataset, UnaryIterator


def _shape_str(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def stack(elements: list, n_components: int) -> list:
    """Each component of `elements` stacked along a new dimension 0 (TF's batch: every
    element of a component must have the first element's shape)."""
    out = []
    for c in range(n_components):
        values = [np.asarray(e[c]) for e in elements]
        first = values[0].shape
        for i, v in enumerate(values[1:], 1):
            if v.shape != first:
                raise errors.InvalidArgumentError(
                    None, None, f"Cannot batch tensors with different shapes in component "
                                f"{c}. First element had shape {_shape_str(first)} and "
                                f"element {i} had shape {_shape_str(v.shape)}.")
        out.append(np.stack(values))
    return out


class BatchDataset(UnaryDataset):
    type_string = "Batch"

    def __init__(self, input_, batch_size: int, drop_remainder: bool, shapes):
        super().__init__(input_, None, shapes)
        self.batch_size = batch_size
        self.drop_remainder = drop_remainder

    def cardinality(self):
        n = self.input.cardinality()
        if n in (UNKNOWN, INFINITE):
            return n
        return n // self.batch_size + (0 if self.drop_remainder or
                                       n % self.batch_size == 0 else 1)

    def make_iterator(self, ictx, prefix):
        return _BatchIterator(self, ictx, prefix)


class _BatchIterator(UnaryIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.take_slices = getattr(self.input, "take_slices", None)

    async def get_next(self):
        d = self.dataset
        if self.input is None:
            return None
        if self.take_slices is not None:
            out = self.take_slices(d.batch_size)
            if out is None or (d.drop_remainder and len(out[0]) < d.batch_size):
                self.input = None
                return None
            return out
        elements = []
        while len(elements) < d.batch_size:
            element = await self.input.get_next()
            if element is None:
                self.input = None
                break
            elements.append(element)
        if not elements or (d.drop_remainder and len(elements) < d.batch_size):
            return None
        return self.combine(elements)

    def combine(self, elements):
        return stack(elements, len(self.dataset.dtypes))


@register_kernel("BatchDatasetV2", "CPU")
@register_kernel("BatchDataset", "CPU")
class BatchDatasetOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.shapes = shapes_attr(ctx)

    def compute(self, ctx, inputs):
        batch_size = scalar_int(inputs[1], "batch_size")
        if batch_size <= 0:
            raise errors.InvalidArgumentError(
                None, None, "Batch size must be greater than zero.")
        drop = bool(inputs[2]) if len(inputs) > 2 else False
        return (variant(BatchDataset(dataset_of(inputs[0]), batch_size, drop,
                                     self.shapes)),)


class PaddedBatchDataset(BatchDataset):
    type_string = "PaddedBatch"

    def __init__(self, input_, batch_size, drop_remainder, shapes, padded_shapes,
                 padding_values):
        super().__init__(input_, batch_size, drop_remainder, shapes)
        self.padded_shapes = padded_shapes
        self.padding_values = padding_values

    def make_iterator(self, ictx, prefix):
        it = _PaddedBatchIterator(self, ictx, prefix)
        it.take_slices = None
        return it


class _PaddedBatchIterator(_BatchIterator):
    def combine(self, elements):
        d = self.dataset
        out = []
        for c, (padded, pad_value) in enumerate(zip(d.padded_shapes, d.padding_values,
                                                    strict=True)):
            values = [np.asarray(e[c]) for e in elements]
            rank = len(padded)
            shape = []
            for axis in range(rank):
                if padded[axis] >= 0:
                    shape.append(padded[axis])
                else:
                    shape.append(max((v.shape[axis] for v in values), default=0))
            for v in values:
                if v.ndim != rank:
                    raise errors.InvalidArgumentError(
                        None, None, f"All elements in a batch must have the same rank as the "
                                    f"padded shape for component{c}: expected rank {rank} "
                                    f"but got element with rank {v.ndim}")
                for axis in range(rank):
                    if v.shape[axis] > shape[axis]:
                        raise errors.InvalidArgumentError(
                            None, None, "Attempted to pad to a smaller size than the input "
                                        "element.")
            batch = np.empty([len(values), *shape], dtype=values[0].dtype)
            batch[...] = pad_value
            for i, v in enumerate(values):
                batch[(i, *(slice(0, s) for s in v.shape))] = v
            out.append(batch)
        return out


@register_kernel("PaddedBatchDatasetV2", "CPU")
@register_kernel("PaddedBatchDataset", "CPU")
class PaddedBatchDatasetOp(OpKernel):
    """Inputs: input_dataset, batch_size, padded_shapes (N int64 vectors),
    padding_values (N scalars), [drop_remainder]."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.shapes = shapes_attr(ctx)
        self.n = int(ctx.get_attr("N"))
        self.v2 = ctx.op_type.endswith("V2")

    def compute(self, ctx, inputs):
        batch_size = scalar_int(inputs[1], "batch_size")
        if batch_size <= 0:
            raise errors.InvalidArgumentError(
                None, None, "Batch size must be greater than zero.")
        n = self.n
        padded = [[int(x) for x in np.asarray(v).reshape(-1)] for v in inputs[2:2 + n]]
        values = [np.asarray(v) for v in inputs[2 + n:2 + 2 * n]]
        for v in values:
            if v.ndim != 0:
                raise errors.InvalidArgumentError(
                    None, None, "All padding values must be scalars")
        drop = bool(inputs[2 + 2 * n]) if self.v2 else False
        return (variant(PaddedBatchDataset(dataset_of(inputs[0]), batch_size, drop,
                                           self.shapes, padded, values)),)


class UnbatchDataset(UnaryDataset):
    type_string = "Unbatch"

    def make_iterator(self, ictx, prefix):
        return _UnbatchIterator(self, ictx, prefix)


class _UnbatchIterator(UnaryIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.current = None
        self.index = 0
        self.size = 0

    async def get_next(self):
        while self.index >= self.size:
            if self.input is None:
                return None
            element = await self.input.get_next()
            if element is None:
                self.input = None
                return None
            sizes = {np.shape(c)[0] if np.ndim(c) else None for c in element}
            if None in sizes:
                raise errors.InvalidArgumentError(
                    None, None, "Input element must have a non-scalar value in each "
                                "component.")
            if len(sizes) != 1:
                raise errors.InvalidArgumentError(
                    None, None, "Input element must have the same batch size in each "
                                "component.")
            self.current, self.index, self.size = element, 0, sizes.pop()
        i = self.index
        self.index += 1
        return [c[i, ...] for c in self.current]


@register_kernel("UnbatchDataset", "CPU")
class UnbatchDatasetOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.shapes = shapes_attr(ctx)

    def compute(self, ctx, inputs):
        return (variant(UnbatchDataset(dataset_of(inputs[0]), None, self.shapes)),)
