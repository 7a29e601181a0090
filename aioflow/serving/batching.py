"""Dynamic batching, as TF Serving's --enable_batching (BasicBatchScheduler and
BatchingSession): concurrent requests for one signature are concatenated along dimension
0 into one run and its outputs split back.

State (all touched on the event loop only):
- `_open`: the batch being filled (tasks and their total size) or None; it closes when
  the next task would not fit in max_batch_size, when it is full, or when
  batch_timeout_micros have passed since its first task (at once when that is 0 and a
  run slot is free);
- `_closed`: batches waiting for one of the num_batch_threads run slots;
- `_running`: how many batches are running.
The open batch and the closed ones count against max_enqueued_batches; a task that
needs a new batch when that many wait is refused at once with UNAVAILABLE.

A task whose caller is cancelled (a client that went away) leaves its batch if the batch
has not started; a running batch whose every task was cancelled is cancelled itself.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

import numpy as np

from aioflow.framework import errors


@dataclass(frozen=True)
class BatchingOptions:
    """TF Serving's BatchingParameters, with its defaults."""

    max_batch_size: int = 1000
    batch_timeout_micros: int = 0
    max_enqueued_batches: int = 10
    num_batch_threads: int = os.cpu_count() or 1
    allowed_batch_sizes: tuple[int, ...] = ()
    pad_variable_length_inputs: bool = False

    def __post_init__(self):
        if self.max_batch_size < 1 or self.max_enqueued_batches < 1 or \
                self.num_batch_threads < 1 or self.batch_timeout_micros < 0:
            raise ValueError(f"invalid batching parameters: {self}")
        sizes = self.allowed_batch_sizes
        if sizes:
            if list(sizes) != sorted(set(sizes)) or sizes[0] < 1:
                raise ValueError("allowed_batch_sizes entries must be monotonically "
                                 "increasing")
            if sizes[-1] != self.max_batch_size:
                raise ValueError("Last entry in allowed_batch_sizes must match "
                                 "max_batch_size; last entry was "
                                 f"{sizes[-1]}; expected {self.max_batch_size}")

    @classmethod
    def from_proto(cls, params) -> BatchingOptions:
        """From a BatchingParameters message (unset fields keep TF Serving's defaults)."""
        kwargs = {}
        for name in ("max_batch_size", "batch_timeout_micros", "max_enqueued_batches",
                     "num_batch_threads"):
            if params.HasField(name):
                kwargs[name] = getattr(params, name).value
        kwargs["allowed_batch_sizes"] = tuple(params.allowed_batch_sizes)
        kwargs["pad_variable_length_inputs"] = params.pad_variable_length_inputs
        return cls(**kwargs)


class _Task:
    __slots__ = ("inputs", "size", "future", "batch")

    def __init__(self, inputs, size, future):
        self.inputs = inputs
        self.size = size
        self.future = future
        self.batch = None


class _Batch:
    __slots__ = ("tasks", "size", "timer", "run")

    def __init__(self):
        self.tasks: list[_Task] = []
        self.size = 0
        self.timer = None
        self.run = None  # the asyncio.Task running it, once started


class Batcher:
    """Batches the calls of `run(inputs) -> outputs` (dicts of arrays, dimension 0 the
    batch) for one signature; `observe(batch_size, padded_size, queue_depth)` is told of
    every batch run (metrics)."""

    def __init__(self, run, options: BatchingOptions, observe=None):
        self._run_fn = run
        self.options = options
        self._observe = observe
        self._open: _Batch | None = None
        self._closed: list[_Batch] = []
        self._running = 0
        self._dispatch_scheduled = False
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def queue_depth(self) -> int:
        """Tasks waiting (not yet running)."""
        waiting = sum(len(b.tasks) for b in self._closed)
        return waiting + (len(self._open.tasks) if self._open else 0)

    async def submit(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run `inputs` as part of a batch; its slice of the batch's outputs."""
        size = _batch_size(inputs)
        if size > self.options.max_batch_size:
            raise errors.InvalidArgumentError(
                None, None, f"Task size {size} is larger than maximum input batch size "
                            f"{self.options.max_batch_size}")
        task = _Task(inputs, size, asyncio.get_running_loop().create_future())
        self._enqueue(task)
        try:
            return await task.future
        except asyncio.CancelledError:
            self._abandon(task)
            raise

    def _enqueue(self, task: _Task) -> None:
        opts = self.options
        batch = self._open
        if batch is not None and batch.size + task.size > opts.max_batch_size:
            self._close_open()
            batch = None
        if batch is None:
            if len(self._closed) + 1 > opts.max_enqueued_batches:
                raise errors.UnavailableError(
                    None, None, "The batch scheduling queue to which this task was "
                                "submitted is full")
            batch = self._open = _Batch()
            if opts.batch_timeout_micros > 0:
                batch.timer = asyncio.get_running_loop().call_later(
                    opts.batch_timeout_micros / 1e6, self._timeout, batch)
        batch.tasks.append(task)
        batch.size += task.size
        task.batch = batch
        self._idle.clear()
        if batch.size == opts.max_batch_size:
            self._close_open()
        self._schedule_dispatch()

    def _timeout(self, batch: _Batch) -> None:
        if batch is self._open:
            self._close_open()
            self._dispatch()

    def _close_open(self) -> None:
        batch, self._open = self._open, None
        if batch.timer is not None:
            batch.timer.cancel()
        self._closed.append(batch)

    def _schedule_dispatch(self) -> None:
        # Tasks enqueued in one pass of the loop join the same batch: dispatch after them.
        if not self._dispatch_scheduled:
            self._dispatch_scheduled = True
            asyncio.get_running_loop().call_soon(self._dispatch)

    def _dispatch(self) -> None:
        self._dispatch_scheduled = False
        slots = self.options.num_batch_threads
        if (self._open is not None and self.options.batch_timeout_micros == 0
                and not self._closed and self._running < slots):
            self._close_open()
        while self._closed and self._running < slots:
            batch = self._closed.pop(0)
            if not batch.tasks:
                continue
            self._running += 1
            batch.run = asyncio.get_running_loop().create_task(self._process(batch))
        self._update_idle()

    def _update_idle(self) -> None:
        if not self._running and not self._closed and self._open is None:
            self._idle.set()

    def _abandon(self, task: _Task) -> None:
        """The caller of `task` went away: drop it from a batch not yet started, or
        cancel a running batch that no caller awaits any more."""
        batch = task.batch
        if batch is None:
            return
        if batch.run is None:
            if task in batch.tasks:
                batch.tasks.remove(task)
                batch.size -= task.size
            if not batch.tasks:
                if batch is self._open:
                    self._open = None
                    if batch.timer is not None:
                        batch.timer.cancel()
                elif batch in self._closed:
                    self._closed.remove(batch)
                self._update_idle()
        elif all(t.future.done() for t in batch.tasks):
            batch.run.cancel()

    async def _process(self, batch: _Batch) -> None:
        tasks = list(batch.tasks)
        try:
            inputs, padded = _merge([t.inputs for t in tasks], batch.size, self.options)
            if self._observe is not None:
                self._observe(batch.size, padded, self.queue_depth)
            outputs = await self._run_fn(inputs)
            _split(outputs, tasks, padded)
        except asyncio.CancelledError:
            for t in tasks:
                if not t.future.done():
                    t.future.cancel()
        except Exception as e:  # every caller of the batch gets the run's error
            for t in tasks:
                if not t.future.done():
                    t.future.set_exception(e)
        finally:
            self._running -= 1
            self._dispatch()

    async def drain(self) -> None:
        """Wait until no batch waits or runs."""
        await self._idle.wait()


def _batch_size(inputs: dict[str, np.ndarray]) -> int:
    sizes = {np.shape(v)[0] if np.ndim(v) else None for v in inputs.values()}
    if None in sizes:
        raise errors.InvalidArgumentError(
            None, None, "Batching session Run() input tensors must have at least one "
                        "dimension")
    if len(sizes) != 1:
        raise errors.InvalidArgumentError(
            None, None, "Batching session Run() input tensors must have equal 0th-dimension "
                        "size")
    return sizes.pop()


def _padded_size(size: int, options: BatchingOptions) -> int:
    for allowed in options.allowed_batch_sizes:
        if allowed >= size:
            return allowed
    return size


def _merge(task_inputs: list[dict], size: int, options: BatchingOptions):
    """Concatenate the tasks' inputs along dimension 0, padded to an allowed batch size
    with copies of the first row; with pad_variable_length_inputs, each input's other
    dimensions padded to the batch's largest with its first element (BatchingSession's
    rule). Returns (inputs, padded batch size)."""
    padded = _padded_size(size, options)
    merged = {}
    for key in task_inputs[0]:
        parts = [t[key] for t in task_inputs]
        shapes = {p.shape[1:] for p in parts}
        if len(shapes) > 1:
            if not options.pad_variable_length_inputs:
                raise errors.InvalidArgumentError(
                    None, None, f"Tensors with name '{key}' from different tasks have "
                                "different shapes and padding is turned off. Set "
                                "pad_variable_length_inputs to true, or ensure that all "
                                "tensors with the same name have equal dimensions starting "
                                "with the first dim.")
            parts = _pad_to_max(parts)
        if padded > size:
            first = parts[0][:1]
            parts = [*parts, np.repeat(first, padded - size, axis=0)]
        merged[key] = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)
    return merged, padded


def _pad_to_max(parts: list[np.ndarray]) -> list[np.ndarray]:
    ranks = {p.ndim for p in parts}
    if len(ranks) > 1:
        raise errors.InvalidArgumentError(None, None, "Tensors with the same name from "
                                          "different tasks have different ranks")
    target = tuple(max(p.shape[d] for p in parts) for d in range(1, parts[0].ndim))
    out = []
    for p in parts:
        widths = [(0, 0)] + [(0, t - s) for s, t in zip(p.shape[1:], target, strict=True)]
        if any(w for _, w in widths):
            fill = p.reshape(-1)[0] if p.size else 0
            p = np.pad(p, widths, mode="constant", constant_values=fill)
        out.append(p)
    return out


def _split(outputs: dict, tasks: list[_Task], padded: int) -> None:
    for key, value in outputs.items():
        if np.ndim(value) == 0:
            raise errors.FailedPreconditionError(
                None, None, f"Batched output tensor '{key}' has 0 dimensions")
        if np.shape(value)[0] != padded:
            raise errors.FailedPreconditionError(
                None, None, f"Batched output tensor's 0th dimension does not equal the sum "
                            f"of the 0th dimension sizes of the input tensors ('{key}': "
                            f"{np.shape(value)[0]} != {padded})")
    start = 0
    for t in tasks:
        end = start + t.size
        if not t.future.done():
            t.future.set_result({k: v[start:end] for k, v in outputs.items()})
        start = end
