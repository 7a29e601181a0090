"""What every tf.data kernel shares: datasets and their iterators, the variant tensor that
carries a dataset, the context iterators run in, and functions called per element.

A dataset (TF's DatasetBase) is an immutable description made by a dataset kernel from
its inputs and attrs; a scalar variant tensor carries it between kernels. An iterator
(TF's IteratorBase) walks one dataset: `await it.get_next()` is the next element (a
list of arrays, one per component) or None at the end. Iterators are coroutines so that
what waits (a prefetch buffer, a file read on the pool, an async source, a function
body run as a sub-step) waits on the event loop; most of them never suspend, and
`drive` runs such a coroutine to its end without a task.

Iterator state is a flat dict of arrays keyed by TF-like names (TF's
IteratorStateWriter): `save(prefix, state)` and `restore(prefix, state)`.
"""

from __future__ import annotations

import asyncio
import types
from time import perf_counter

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.kernel_context import OpKernelContext

#: How long a pipeline's work runs on the loop before it lets other coroutines run (s).
SLICE_S = 0.001

INFINITE = -1   # TF's kInfiniteCardinality
UNKNOWN = -2    # TF's kUnknownCardinality


class Dataset:
    """A dataset: its element signature and how to make an iterator over it."""

    type_string = "Dataset"

    def __init__(self, dtypes_: list, shapes: list):
        self.dtypes = list(dtypes_)
        self.shapes = list(shapes)

    def make_iterator(self, ictx: IteratorContext, prefix: str) -> DatasetIterator:
        raise NotImplementedError

    def cardinality(self) -> int:
        return UNKNOWN

    def inputs(self) -> list[Dataset]:
        return []

    def __repr__(self) -> str:
        return f"<{self.type_string}>"


class DatasetIterator:
    """One walk over a dataset. `prefix` names its state (TF's iterator prefix)."""

    def __init__(self, dataset: Dataset, ictx: IteratorContext, prefix: str):
        self.dataset = dataset
        self.ictx = ictx
        self.prefix = f"{prefix}::{dataset.type_string}"

    async def get_next(self) -> list | None:
        raise NotImplementedError

    def save(self, state: dict) -> None:
        raise errors.UnimplementedError(
            None, None, f"{self.dataset.type_string} does not support checkpointing.")

    async def restore(self, state: dict) -> None:
        raise errors.UnimplementedError(
            None, None, f"{self.dataset.type_string} does not support checkpointing.")

    def key(self, name: str) -> str:
        return f"{self.prefix}:{name}"

    def children(self) -> list:
        """The iterators this one reads from (their state is part of its state)."""
        return []

    async def quiesce(self) -> None:
        """Wait until no background work of this iterator or its inputs is mid-element,
        so that `save` sees a consistent state (a prefetch task between two elements)."""
        for child in self.children():
            if child is not None:
                await child.quiesce()

    def close(self) -> None:
        """Stop background work (prefetch tasks); the iterator is dropped."""


def save_input(it: DatasetIterator | None, state: dict, flag: str, owner: DatasetIterator):
    """Save an input iterator, or mark it exhausted (TF's SaveInput / an empty flag)."""
    if it is None:
        state[owner.key(flag)] = np.array(b"", dtype=object)
    else:
        it.save(state)


class IteratorContext:
    """What iterators run with (TF's IteratorContext): a kernel context for the function
    calls they make (the session's resources, a cancellation of their own: background
    work outlives the step that started it), and where blocking work goes."""

    def __init__(self, resource_mgr, pool=None):
        self.kernel_ctx = OpKernelContext(0, [], 0, resource_mgr=resource_mgr)
        self.resource_mgr = resource_mgr
        self.pool = pool
        self.ran_since = perf_counter()

    def due(self) -> bool:
        """Whether the pipeline has held the loop for SLICE_S (`pause` would yield): a
        per-element caller asks before awaiting `pause`, saving a coroutine."""
        return perf_counter() - self.ran_since > SLICE_S

    async def pause(self) -> None:
        """Let the loop run when this pipeline has held it for SLICE_S (a chain of
        inline elements, each short, must not starve the loop's other work)."""
        now = perf_counter()
        if now - self.ran_since > SLICE_S:
            await asyncio.sleep(0)
            self.ran_since = perf_counter()

    async def run_blocking(self, fn, *args):
        """`fn(*args)` on the pool (file reads, decompression): the loop never blocks."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def start_blocking(self, fn, *args) -> asyncio.Future:
        """`fn(*args)` started on the pool now, awaited later (a read ahead)."""
        return asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)


def variant(dataset) -> np.ndarray:
    """A scalar variant tensor holding `dataset`."""
    out = np.empty((), dtype=object)
    out[()] = dataset
    return out


def dataset_of(value) -> Dataset:
    """The dataset a variant input carries (TF's GetDatasetFromVariantTensor)."""
    item = value[()] if isinstance(value, np.ndarray) else value
    if not isinstance(item, Dataset):
        raise errors.InvalidArgumentError(
            None, None, "Tensor must be a Dataset object.")
    return item


def shapes_attr(ctx) -> list:
    """The `output_shapes` attr as lists of dims (None: unknown dim; None: unknown rank)."""
    out = []
    for s in ctx.get_attr("output_shapes", []):
        dims = getattr(s, "dims", s)
        out.append(None if dims is None else [getattr(d, "value", d) for d in dims])
    return out


def types_attr(ctx, name: str = "output_types") -> list:
    return [dtypes.as_dtype(t) for t in ctx.get_attr(name, [])]


def scalar_int(value, what: str) -> int:
    arr = np.asarray(value)
    if arr.ndim != 0:
        raise errors.InvalidArgumentError(None, None, f"{what} must be a scalar")
    return int(arr)


def component(value, dtype) -> np.ndarray:
    """An element component as the executor's arrays are (strings as object arrays)."""
    return np.asarray(value, dtype=object if dtype == dtypes.string else None)


# -- running coroutines that rarely suspend -------------------------------------------------

PENDING = object()  # what drive() answers for a coroutine that suspended


def drive(coro):
    """Run `coro` until it first suspends: (result, None) when it finished without
    suspending, else (PENDING, an awaitable finishing it inside a task)."""
    try:
        yielded = coro.send(None)
    except StopIteration as stop:
        return stop.value, None
    return PENDING, _resume(coro, yielded)


@types.coroutine
def _resume(coro, yielded):
    """Continue a coroutine that has yielded `yielded` (a future) to its caller."""
    while True:
        try:
            yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as e:  # noqa: BLE001 - thrown into the coroutine
            try:
                yielded = coro.throw(e)
            except StopIteration as stop:
                return stop.value
            continue
        try:
            yielded = coro.send(None)
        except StopIteration as stop:
            return stop.value


def is_pending(value) -> bool:
    return value is PENDING


# -- functions of the library, called per element -------------------------------------------

class CapturedFunction:
    """A function attr of a dataset node, instantiated once, with the node's captured
    inputs (`other_arguments`) appended to every call (TF's CapturedFunction)."""

    def __init__(self, flr, body, captured: list, node_def):
        self.flr = flr
        self.body = body
        self.captured = list(captured)
        self.node_def = node_def

    @classmethod
    def from_attr(cls, kctx, attr: str, captured: list) -> CapturedFunction:
        """The function of the kernel-construction context's `attr` (a NameAttrList)."""
        flr = kctx.function_library
        if flr is None:
            raise errors.UnimplementedError(
                kctx.node_def, None, f"{kctx.op_type} node {kctx.name} needs a function "
                                     f"library runtime")
        func = kctx.node_def.attr[attr].func
        body = flr.instantiate(func.name, dict(func.attr.items()), kctx.node_def)
        return cls(flr, body, captured, kctx.node_def)

    def with_captured(self, captured: list) -> CapturedFunction:
        return CapturedFunction(self.flr, self.body, captured, self.node_def)

    async def __call__(self, ictx: IteratorContext, args: list) -> list:
        return await self.flr.run(self.body, ictx.kernel_ctx, list(args) + self.captured)

    def call_compiled(self, ictx: IteratorContext, args: list) -> list | None:
        """The results of the function's compiled form, called in place (no coroutine:
        a map's per-element call), or None: it has none, or it failed; then
        `call_step` runs it as a sub-step (which reports a failure, naming the node),
        as `flr.run` does."""
        if self.body.fast is None:
            return None
        with np.errstate(all="ignore"):
            return self.flr.run_compiled(self.body, ictx.kernel_ctx, [*args, *self.captured])

    async def call_step(self, ictx: IteratorContext, args: list) -> list:
        """The function run as a sub-step of the iterator's context, always."""
        return await self.flr.run_step(self.body, ictx.kernel_ctx, [*args, *self.captured])


class FunctionFactory:
    """Built once per kernel: instantiates the function; each run binds the captured
    inputs of that run."""

    def __init__(self, kctx, attr: str):
        self.template = CapturedFunction.from_attr(kctx, attr, [])

    def bind(self, captured: list) -> CapturedFunction:
        return self.template.with_captured(captured)
