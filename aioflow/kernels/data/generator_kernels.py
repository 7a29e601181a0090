"""GeneratorDataset (tensorflow/core/kernels/data/generator_dataset_op.cc): elements made
by three functions of the library: `init_func` makes a state (from_generator: the id
of a Python generator), `next_func(state)` the next element (OutOfRangeError: the
end), `finalize_func(state)` lets it go. Each iterator calls init_func once.

The functions are awaited like any dataset function: a py_func body runs its Python on
the pool, an async_py_func body (from_async_generator) awaits on the loop."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel

from .dataset import Dataset, DatasetIterator, FunctionFactory, shapes_attr, types_attr, variant


class GeneratorDataset(Dataset):
    type_string = "Generator"

    def __init__(self, init_fn, next_fn, finalize_fn, dtypes_, shapes):
        super().__init__(dtypes_, shapes)
        self.init_fn, self.next_fn, self.finalize_fn = init_fn, next_fn, finalize_fn

    def make_iterator(self, ictx, prefix):
        return _GeneratorIterator(self, ictx, prefix)


class _GeneratorIterator(DatasetIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.state = None
        self.done = False

    async def get_next(self):
        if self.done:
            return None
        d = self.dataset
        if self.state is None:
            self.state = list(await d.init_fn(self.ictx, []))
        try:
            return list(await d.next_fn(self.ictx, self.state))
        except errors.OutOfRangeError:
            self.done = True
            await d.finalize_fn(self.ictx, self.state)
            return None

    def save(self, state):
        raise errors.UnimplementedError(
            None, None, "GeneratorDataset does not support checkpointing (its state is a "
                        "Python generator).")


@register_kernel("GeneratorDataset", "CPU")
class GeneratorDatasetOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.fns = [FunctionFactory(ctx, a) for a in ("init_func", "next_func",
                                                       "finalize_func")]
        self.counts = [len(ctx.get_attr(a, [])) for a in (
            "Tinit_func_args", "Tnext_func_args", "Tfinalize_func_args")]
        self.dtypes = types_attr(ctx)
        self.shapes = shapes_attr(ctx)

    def compute(self, ctx, inputs):
        bound = []
        start = 0
        for fn, n in zip(self.fns, self.counts, strict=True):
            bound.append(fn.bind([np.asarray(v) if not isinstance(v, np.ndarray) else v
                                  for v in inputs[start:start + n]]))
            start += n
        return (variant(GeneratorDataset(*bound, self.dtypes, self.shapes)),)
