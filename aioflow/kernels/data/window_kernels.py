"""WindowDataset (tensorflow/core/kernels/data/window_dataset_op.cc): each element is a
window of the input: one dataset per component, holding up to `size` input elements
taken `stride` apart; windows start `shift` elements apart. With drop_remainder, a
window with fewer than `size` elements is not produced."""

from __future__ import annotations

from collections import deque

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel

from .dataset import Dataset, DatasetIterator, dataset_of, scalar_int, variant
from .transform_kernels import UnaryDataset, UnaryIterator


class ElementsDataset(Dataset):
    """A dataset of given values (one window's component)."""

    type_string = "Window"

    def __init__(self, values: list, dtype, shape):
        super().__init__([dtype], [shape])
        self.values = values

    def cardinality(self):
        return len(self.values)

    def make_iterator(self, ictx, prefix):
        return _ElementsIterator(self, ictx, prefix)


class _ElementsIterator(DatasetIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.i = 0

    async def get_next(self):
        if self.i >= len(self.dataset.values):
            return None
        self.i += 1
        return [self.dataset.values[self.i - 1]]

    def save(self, state):
        state[self.key("i")] = np.array(self.i, np.int64)

    async def restore(self, state):
        self.i = int(state[self.key("i")])


class WindowDataset(UnaryDataset):
    type_string = "Window"

    def __init__(self, input_, size: int, shift: int, stride: int, drop_remainder: bool):
        super().__init__(input_, [dtypes.variant] * len(input_.dtypes),
                         [[]] * len(input_.dtypes))
        self.size, self.shift, self.stride = size, shift, stride
        self.drop_remainder = drop_remainder

    def make_iterator(self, ictx, prefix):
        return _WindowIterator(self, ictx, prefix)


class _WindowIterator(UnaryIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.buffer: deque = deque()

    async def get_next(self):
        d = self.dataset
        if self.input is None and not self.buffer:
            return None
        target = (d.size - 1) * d.stride + 1
        while self.input is not None and len(self.buffer) < target:
            element = await self.input.get_next()
            if element is None:
                self.input = None
            else:
                self.buffer.append(element)
        if not self.buffer or (d.drop_remainder and len(self.buffer) < target):
            return None
        count = 1 + (len(self.buffer) - 1) // d.stride
        window = [self.buffer[d.stride * i] for i in range(count)]
        if d.shift >= len(self.buffer):
            for _ in range(len(self.buffer), d.shift):
                if self.input is None or await self.input.get_next() is None:
                    self.input = None
                    break
            self.buffer.clear()
        else:
            for _ in range(d.shift):
                self.buffer.popleft()
        source = d.input
        return [variant(ElementsDataset([e[c] for e in window], source.dtypes[c],
                                        source.shapes[c]))
                for c in range(len(source.dtypes))]


@register_kernel("WindowDataset", "CPU")
class WindowDatasetOp(OpKernel):
    def compute(self, ctx, inputs):
        size = scalar_int(inputs[1], "size")
        shift = scalar_int(inputs[2], "shift")
        stride = scalar_int(inputs[3], "stride")
        for name, value in (("Window size", size), ("Window shift", shift),
                            ("Window stride", stride)):
            if value <= 0:
                raise errors.InvalidArgumentError(
                    None, None, f"{name} must be greater than zero, but got {value}.")
        return (variant(WindowDataset(dataset_of(inputs[0]), size, shift, stride,
                                      bool(inputs[4]))),)
