"""CacheDataset and CacheDatasetV2 (tensorflow/core/kernels/data/cache_dataset_ops.cc):
the first complete pass over the input is kept, and later iterators read the copy.

filename "" keeps it in memory (with the dataset: re-running the dataset op starts a new
cache, as TF's). A filename keeps it in a file: aioflow writes its elements as TFRecords
of TensorProtos (`<filename>.aioflow-cache`, renamed into place once the pass is
complete; TF writes a tensor bundle there instead, so the two do not share cache
files). An unfinished pass leaves no cache: the next iterator reads the input again.
DummyMemoryCache / AnonymousMemoryCache / DeleteMemoryCache are TF 2's cache resources
(the V2 op's `cache` input); the memory lives with the dataset here."""

from __future__ import annotations

import os
import threading

import numpy as np

from aioflow.framework import errors, tensor_util
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.lib.record_io import RecordWriter, open_reader
from aioflow.proto import tensor_pb2

from .dataset import dataset_of, variant
from .transform_kernels import UnaryDataset, UnaryIterator


class MemoryCache:
    def __init__(self):
        self.lock = threading.Lock()
        self.elements: list | None = None   # set once a pass completed


class CacheDataset(UnaryDataset):
    type_string = "Cache"

    def __init__(self, input_, filename: str):
        super().__init__(input_)
        self.filename = filename
        self.memory = MemoryCache()

    def cardinality(self):
        return self.input.cardinality()

    def make_iterator(self, ictx, prefix):
        if self.filename:
            if os.path.exists(self.filename + _SUFFIX):
                return _FileReadIterator(self, ictx, prefix)
            return _FileWriteIterator(self, ictx, prefix)
        if self.memory.elements is not None:
            return _MemoryReadIterator(self, ictx, prefix)
        return _MemoryWriteIterator(self, ictx, prefix)


_SUFFIX = ".aioflow-cache"


class _MemoryWriteIterator(UnaryIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.seen: list = []

    async def get_next(self):
        if self.input is None:
            return None
        element = await self.input.get_next()
        if element is None:
            self.input = None
            with self.dataset.memory.lock:
                if self.dataset.memory.elements is None:
                    self.dataset.memory.elements = self.seen
            return None
        self.seen.append(element)
        return element


class _MemoryReadIterator(UnaryIterator):
    def __init__(self, dataset, ictx, prefix):
        self.dataset = dataset
        self.ictx = ictx
        self.prefix = f"{prefix}::{dataset.type_string}"
        self.input = None
        self.index = 0

    async def get_next(self):
        elements = self.dataset.memory.elements
        if self.index >= len(elements):
            return None
        self.index += 1
        return list(elements[self.index - 1])

    def save(self, state):
        state[self.key("index")] = np.array(self.index, np.int64)

    async def restore(self, state):
        self.index = int(state[self.key("index")])


def _encode(element) -> list[bytes]:
    return [tensor_util.make_tensor_proto(np.asarray(v)).SerializeToString() for v in element]


class _FileWriteIterator(UnaryIterator):
    """Reads the input and writes each element to the cache file (on the pool)."""

    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.writer = None
        self.temp = f"{dataset.filename}{_SUFFIX}.{os.getpid()}.{id(self)}.tmp"

    async def get_next(self):
        if self.input is None:
            return None
        element = await self.input.get_next()
        if self.writer is None:
            try:
                self.writer = RecordWriter(open(self.temp, "wb"))  # noqa: SIM115
            except OSError as e:
                raise errors.NotFoundError(None, None, f"{self.dataset.filename}: {e}") from e
        if element is None:
            self.input = None
            writer, self.writer = self.writer, None
            await self.ictx.run_blocking(self._finish, writer)
            return None
        n = len(element)
        records = [np.int64(n).tobytes(), *_encode(element)]
        await self.ictx.run_blocking(lambda: [self.writer.write(r) for r in records])
        return element

    def _finish(self, writer):
        writer.close()
        os.replace(self.temp, self.dataset.filename + _SUFFIX)

    def close(self):
        if self.writer is not None:
            self.writer.close()
            self.writer = None
            if os.path.exists(self.temp):
                os.remove(self.temp)
        super().close()


class _FileReadIterator(UnaryIterator):
    def __init__(self, dataset, ictx, prefix):
        self.dataset = dataset
        self.ictx = ictx
        self.prefix = f"{prefix}::{dataset.type_string}"
        self.input = None
        self.reader = None

    def _next(self):
        if self.reader is None:
            self.reader = open_reader(self.dataset.filename + _SUFFIX)
        count = self.reader.read()
        if count is None:
            return None
        out = []
        for _ in range(int(np.frombuffer(count, np.int64)[0])):
            proto = tensor_pb2.TensorProto()
            proto.ParseFromString(self.reader.read())
            out.append(tensor_util.make_ndarray(proto))
        return out

    async def get_next(self):
        return await self.ictx.run_blocking(self._next)

    def close(self):
        if self.reader is not None:
            self.reader.close()
            self.reader = None


@register_kernel("CacheDataset", "CPU")
@register_kernel("CacheDatasetV2", "CPU")
class CacheDatasetOp(OpKernel):
    """Inputs: input_dataset, filename[, cache]."""

    def compute(self, ctx, inputs):
        raw = np.asarray(inputs[1], dtype=object)[()]
        filename = os.fsdecode(raw) if isinstance(raw, bytes) else str(raw)  # (any bytes)
        return (variant(CacheDataset(dataset_of(inputs[0]), filename)),)


@register_kernel("DummyMemoryCache", "CPU")
@register_kernel("AnonymousMemoryCache", "CPU")
class MemoryCacheHandleOp(OpKernel):
    """A cache handle (and for the anonymous one, a deleter): the memory itself lives
    with the dataset."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.n = len(ctx.op_def.output_arg) if ctx.op_def is not None else 1

    def compute(self, ctx, inputs):
        out = np.empty((), dtype=object)
        out[()] = MemoryCache()
        return (out,) * self.n


@register_kernel("DeleteMemoryCache", "CPU")
class DeleteMemoryCacheOp(OpKernel):
    def compute(self, ctx, inputs):
        return ()
