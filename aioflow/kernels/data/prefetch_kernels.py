"""PrefetchDataset (tensorflow/core/kernels/data/prefetch_dataset_op.cc): a task on the
loop fills a buffer of up to `buffer_size` elements from the input while the consumer
takes them; its CPU work happens where the input's work happens (the pool for
expensive kernels and file reads), never a thread of its own.

Elements and errors come out in order (an error takes its element's place; the
producer goes on after it, as TF's). A consumer cancelled while it waits takes
nothing: the element stays in the buffer for the next get_next."""

from __future__ import annotations

import asyncio
from collections import deque

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel

from .dataset import dataset_of, scalar_int, variant
from .transform_kernels import UnaryDataset, UnaryIterator

#: The buffer of an AUTOTUNE prefetch (TF tunes it; a fixed size serves here).
AUTOTUNE_BUFFER = 16


class PrefetchDataset(UnaryDataset):
    type_string = "Prefetch"

    def __init__(self, input_, buffer_size: int):
        super().__init__(input_)
        self.buffer_size = AUTOTUNE_BUFFER if buffer_size < 0 else buffer_size

    def cardinality(self):
        return self.input.cardinality()

    def make_iterator(self, ictx, prefix):
        if self.buffer_size == 0:
            return _PassIterator(self, ictx, prefix)
        return _PrefetchIterator(self, ictx, prefix)


class _PassIterator(UnaryIterator):
    async def get_next(self):
        return None if self.input is None else await self.input.get_next()


class _PrefetchIterator(UnaryIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.buffer: deque = deque()    # (element or None at the end, error or None)
        self.task: asyncio.Task | None = None
        self.ready = asyncio.Event()    # the buffer has something
        self.ended = False              # the end was taken from the buffer
        self.idle = asyncio.Event()     # the producer is not in the middle of an element
        self.idle.set()

    async def _produce(self):
        """Fill the buffer, then end (get_next starts another task when there is room:
        no task waits on a full buffer, none outlives an iterator nobody reads)."""
        limit = self.dataset.buffer_size
        while len(self.buffer) < limit and self.input is not None:
            self.idle.clear()
            try:
                element = await self.input.get_next()
            except asyncio.CancelledError:
                raise
            except BaseException as e:  # noqa: BLE001 - delivered in its element's place
                self.buffer.append((None, e if isinstance(e, errors.OpError) else
                                    errors.UnknownError(None, None, f"{type(e).__name__}: "
                                                                    f"{e}")))
                self.ready.set()
                continue
            finally:
                self.idle.set()
            self.buffer.append((element, None))
            self.ready.set()
            if element is None:
                self.input = None

    def _start(self):
        """A producer task, unless one runs, the input is done or the buffer is full."""
        if (self.task is None or self.task.done()) and self.input is not None and \
                len(self.buffer) < self.dataset.buffer_size:
            self.task = asyncio.get_running_loop().create_task(self._produce())

    async def get_next(self):
        while not self.buffer:
            if self.ended or (self.input is None and (self.task is None or
                                                      self.task.done())):
                return None
            self._start()
            self.ready.clear()
            await self.ready.wait()
        element, error = self.buffer.popleft()
        self._start()
        if error is not None:
            raise error
        if element is None:
            self.ended = True
        return element

    def close(self):
        if self.task is not None:
            self.task.cancel()
            self.task = None
        self.idle.set()
        super().close()

    async def quiesce(self):
        await self.idle.wait()
        await super().quiesce()

    def save(self, state):
        """The buffered elements and the input behind them (TF's SaveInternal)."""
        state[self.key("buffer_size")] = np.array(
            sum(1 for e, err in self.buffer if e is not None), np.int64)
        i = 0
        for element, _ in self.buffer:
            if element is None:
                continue
            state[self.key(f"buffer[{i}].size")] = np.array(len(element), np.int64)
            for j, value in enumerate(element):
                state[self.key(f"buffer[{i}][{j}]")] = np.asarray(value)
            i += 1
        ended = self.ended or any(e is None and err is None for e, err in self.buffer)
        if ended or self.input is None:
            state[self.key("input_impl_empty")] = np.array(b"", dtype=object)
        else:
            self.input.save(state)

    async def restore(self, state):
        self.close()
        n = int(state[self.key("buffer_size")])
        self.buffer = deque()
        for i in range(n):
            size = int(state[self.key(f"buffer[{i}].size")])
            self.buffer.append(([state[self.key(f"buffer[{i}][{j}]")] for j in range(size)],
                                None))
        if self.key("input_impl_empty") in state:
            self.input = None
            self.buffer.append((None, None))
        else:
            self.input = self.dataset.input.make_iterator(self.ictx, self.prefix)
            await self.input.restore(state)
        self.ended = False


@register_kernel("PrefetchDataset", "CPU")
class PrefetchDatasetOp(OpKernel):
    def compute(self, ctx, inputs):
        n = scalar_int(inputs[1], "buffer_size")
        if n < 0 and n != -1:
            raise errors.InvalidArgumentError(
                None, None, "buffer_size must be >= 0 or set buffer_size to be "
                            "-1 (AUTOTUNE).")
        return (variant(PrefetchDataset(dataset_of(inputs[0]), n)),)
