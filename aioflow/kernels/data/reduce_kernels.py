"""Ops that consume a whole dataset in one run: ReduceDataset (the state through
`f(state, element)` over every element) and DatasetToSingleElement
(tensorflow/core/kernels/data/reduce_dataset_op.cc, dataset_ops.cc). Both are async
kernels: they await the dataset's iterator on the loop."""

from __future__ import annotations

from aioflow.framework import errors
from aioflow.framework.op_kernel import AsyncOpKernel, register_kernel

from .dataset import FunctionFactory, IteratorContext, dataset_of


@register_kernel("ReduceDataset", "CPU")
class ReduceDatasetOp(AsyncOpKernel):
    """Inputs: input_dataset, initial_state (Tstate), other_arguments (Targuments)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.fn = FunctionFactory(ctx, "f")
        self.num_state = len(ctx.get_attr("Tstate"))

    async def compute_async(self, ctx, inputs):
        n = self.num_state
        state = list(inputs[1:1 + n])
        fn = self.fn.bind(list(inputs[1 + n:]))
        ictx = IteratorContext(ctx.resource_mgr)
        it = dataset_of(inputs[0]).make_iterator(ictx, "ReduceIterator")
        try:
            while (element := await it.get_next()) is not None:
                state = list(await fn(ictx, state + element))
        finally:
            it.close()
        return state


@register_kernel("DatasetToSingleElement", "CPU")
class DatasetToSingleElementOp(AsyncOpKernel):
    """The dataset's only element."""

    async def compute_async(self, ctx, inputs):
        it = dataset_of(inputs[0]).make_iterator(IteratorContext(ctx.resource_mgr),
                                                 "SingleElementIterator")
        try:
            element = await it.get_next()
            if element is None:
                raise errors.InvalidArgumentError(None, None, "Dataset was empty.")
            if await it.get_next() is not None:
                raise errors.InvalidArgumentError(
                    None, None, "Dataset had more than one element.")
        finally:
            it.close()
        return element
