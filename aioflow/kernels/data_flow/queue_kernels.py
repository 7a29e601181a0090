"""Kernels of TF's queues: FIFOQueueV2, PaddingFIFOQueueV2, RandomShuffleQueueV2 and
PriorityQueueV2 (the queue lives in the device's ResourceMgr, shared by every run of the
session, and across nodes by shared_name), and the enqueue / dequeue / close / size ops;
each kernel also serves TF 1's op of the same name without "V2" (a Ref(string) handle,
which here carries the queue itself).

A queue works as TF's QueueBase does (queue_base.cc, fifo_queue.cc, ...): enqueues and
dequeues are *attempts* kept in two FIFO lists; every change runs `_flush`, which lets the
front attempt of each list make what progress it can, until neither list moves. An attempt
that cannot finish at once (a dequeue of an empty queue, an enqueue of a full one) waits
in its list: its kernel has returned from `start_async` and the run's executor awaits its
`done` callback, so no thread is held and the event loop keeps running. The attempt ends
when another run's enqueue or dequeue makes room, when the queue is closed, or when its own
run is cancelled (deadline, a failing node, the awaiting task cancelled): its cancellation
callback takes it out of the list, and a dequeue_many that had taken part of its batch
puts those elements back (TF loses them), so a cancelled run takes nothing.

Errors are TF 2.21's, message for message (tests/data/queues_tf.json)."""

from __future__ import annotations

import asyncio
import collections
import heapq
import itertools
import os
import threading
from functools import partial

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import AsyncOpKernel, OpKernel, register_kernel
from aioflow.framework.var import ResourceHandle, handle_value
from aioflow.kernels.random.philox import Philox
from aioflow.kernels.state.resource_variable_kernels import handle_of
from aioflow.kernels.state.variable_kernels import _type_name

QUEUE_TYPE = "Queue"
UNBOUNDED = 2 ** 31 - 1  # TF's kUnbounded (capacity < 0)
_CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
_unique = itertools.count()
# What an attempt's step returns (TF's RunResult).
NO_PROGRESS, PROGRESS, COMPLETE = 0, 1, 2


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def shape_string(shape) -> str:
    """TF's (Partial)TensorShape::DebugString: [2,3], [?,3], [], <unknown>."""
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _types_string(types) -> str:
    return ", ".join(_type_name(t) for t in types)


def _np_dtype(dtype):
    return object if dtype == dtypes.string else dtype.as_numpy_dtype


def _signature_error(have_in, have_out, want_in, want_out) -> errors.InvalidArgumentError:
    def sig(ins, outs):
        return f"{_types_string(ins)}->{_types_string(outs)}"
    return _invalid(f"Signature mismatch, have: {sig(have_in, have_out)} expected: "
                    f"{sig(want_in, want_out)}")


def _deliver(loop, callback, outs, err) -> None:
    """Call a waiting kernel's `done` on its run's loop (at once when that is this thread's)."""
    try:
        here = asyncio.get_running_loop()
    except RuntimeError:
        here = None
    if here is loop:
        callback(outs, err)
    else:
        loop.call_soon_threadsafe(callback, outs, err)


class _Attempt:
    """One enqueue, dequeue or close waiting in a queue's list (TF's QueueBase::Attempt).
    `step(attempt)` makes progress under the queue's lock; when it completes, `outs` or
    `error` holds the result and `callback` (None while the kernel is still starting) is
    called with it; `taken` holds what a dequeue_many has taken so far."""

    __slots__ = ("is_enqueue", "remaining", "step", "callback", "outs", "error", "finished",
                 "loop", "cm", "token", "taken", "batch", "allow_small", "requested")

    def __init__(self, is_enqueue: bool, remaining: int, step):
        self.is_enqueue = is_enqueue
        self.remaining = remaining
        self.requested = remaining
        self.step = step
        self.callback = None
        self.outs = ()
        self.error = None
        self.finished = False
        self.loop = None
        self.cm = None
        self.token = None
        self.taken: list = []
        self.batch = None
        self.allow_small = False


class Queue:
    """A FIFO queue of tuples (TF's FIFOQueue); the other kinds change how elements are
    stored and taken (`_put`, `_take`, `_restore`, `_available`) and how batches are
    shaped (`_batch`). Elements are tuples of NumPy arrays, one per component."""

    kind = "FIFOQueue"
    closed_kind = "FIFOQueue"     # the queue named when an enqueue finds it closed
    single_kind = "FIFOQueue"     # ... and when a single dequeue finds it closed and empty

    def __init__(self, capacity: int, component_dtypes, shapes, name: str):
        self.capacity = UNBOUNDED if capacity < 0 else capacity
        self.dtypes = list(component_dtypes)
        self.shapes = shapes  # [] (unspecified) or one tuple per component (None: unknown)
        self.name = name
        self.closed = False
        self.container = ""
        self.lock = threading.Lock()
        self.enqueues: collections.deque[_Attempt] = collections.deque()
        self.dequeues: collections.deque[_Attempt] = collections.deque()
        self._init_storage()

    def read_ref(self, input_name: str) -> np.ndarray:
        """A TF 1 ref handle read as a value (fetched, say): TF's [container, name]."""
        out = np.empty(2, dtype=object)
        out[:] = [self.container.encode(), self.name.encode()]
        return out

    # -- storage (one per kind) --------------------------------------------------------------
    def _init_storage(self) -> None:
        self.items: collections.deque = collections.deque()

    def size(self) -> int:
        return len(self.items)

    def _put(self, element: tuple) -> None:
        self.items.append(element)

    def _take(self):
        return self.items.popleft()

    def _restore(self, taken: list) -> None:
        """Put back what a dequeue_many took (in its order, at the front)."""
        self.items.extendleft(reversed(taken))

    def _element(self, item) -> tuple:
        return item

    def _available(self) -> int:
        """How many elements a dequeue may take now."""
        return len(self.items)

    # -- checks --------------------------------------------------------------------------------
    @property
    def specified_shapes(self) -> bool:
        return bool(self.shapes)

    def _compatible(self, want, got) -> bool:
        return tuple(want) == tuple(got)

    def validate(self, components: list) -> None:
        """TF's ValidateTuple: each component of the shape given at construction."""
        if self.specified_shapes:
            for i, (want, value) in enumerate(zip(self.shapes, components, strict=True)):
                if not self._compatible(want, np.shape(value)):
                    raise _invalid(f"Shape mismatch in tuple component {i}. Expected "
                                   f"{shape_string(want)}, got {shape_string(np.shape(value))}")

    def validate_many(self, components: list) -> int:
        """TF's ValidateManyTuple: [batch] + each component's shape; the batch size."""
        for i, value in enumerate(components):
            if np.ndim(value) == 0:
                raise _invalid(f"Shape mismatch in tuple component {i}. Expected a batch "
                               f"[n,...] to enqueue many, got []")
        batch = np.shape(components[0])[0]
        if self.specified_shapes:
            for i, (want, value) in enumerate(zip(self.shapes, components, strict=True)):
                expected = (batch, *want)
                if not self._compatible(expected, np.shape(value)):
                    raise _invalid(f"Shape mismatch in tuple component {i}. Expected "
                                   f"{shape_string(expected)}, got "
                                   f"{shape_string(np.shape(value))}")
        else:
            for i in range(1, len(components)):
                if np.shape(components[i])[0] != batch:
                    raise _invalid(f"All input tensors must have the same size in the 0th "
                                   f"dimension. Component {i} has "
                                   f"{np.shape(components[i])[0]}, and should have {batch}")
        return batch

    # -- batches -------------------------------------------------------------------------------
    def _batch(self, elements: list) -> tuple:
        """The outputs of a dequeue_many of `elements` (stacked per component)."""
        outs = []
        for i, (dtype, shape) in enumerate(zip(self.dtypes, self.shapes, strict=True)):
            out = np.empty((len(elements), *shape), dtype=_np_dtype(dtype))
            for j, element in enumerate(elements):
                out[j, ...] = element[i]  # (a 0-d string lands as its bytes, not an array)
            outs.append(out)
        return tuple(outs)

    # -- attempts ------------------------------------------------------------------------------
    def enqueue(self, elements: list, ctx, done):
        """Enqueue `elements` (tuples) in order: () when done at once, else None and
        `done((), error)` later."""
        return self._submit(_Attempt(True, len(elements), partial(self._enqueue_step,
                                                                   elements)), ctx, done)

    def _enqueue_step(self, elements: list, attempt: _Attempt) -> int:
        if self.closed:
            attempt.error = errors.CancelledError(
                None, None, f"{self.closed_kind} '{self.name}' is closed.")
            return COMPLETE
        result = NO_PROGRESS
        while self.size() < self.capacity:
            result = PROGRESS
            self._put(elements[len(elements) - attempt.remaining])
            attempt.remaining -= 1
            if attempt.remaining == 0:
                return COMPLETE
        return result

    def dequeue(self, ctx, done):
        """Dequeue one element: its components when there is one now, else None and
        `done(components, error)` later."""
        return self._submit(_Attempt(False, 1, self._dequeue_step), ctx, done)

    def _dequeue_step(self, attempt: _Attempt) -> int:
        size = self.size()
        if self.closed and size == 0:
            attempt.error = errors.OutOfRangeError(
                None, None, f"{self.single_kind} '{self.name}' is closed and has insufficient "
                            f"elements (requested 1, current size 0)")
            return COMPLETE
        if self._available() > 0:
            attempt.outs = self._element(self._take())
            return COMPLETE
        return NO_PROGRESS

    def dequeue_many(self, n: int, allow_small: bool, ctx, done):
        """Dequeue a batch of `n` (up to `n` once closed with `allow_small`)."""
        if not self.specified_shapes:
            raise _invalid(f"{self.kind}'s DequeueMany and DequeueUpTo require the components "
                           f"to have specified shapes.")
        if n == 0:
            return self._batch([])
        attempt = _Attempt(False, n, self._dequeue_many_step)
        attempt.allow_small = allow_small
        return self._submit(attempt, ctx, done)

    def _dequeue_many_step(self, attempt: _Attempt) -> int:
        size = self.size()
        if self.closed and size < attempt.remaining:
            if attempt.taken:  # not enough will come: give back what was taken
                self._restore(attempt.taken)
                attempt.taken = []
                attempt.remaining = attempt.requested
                size = self.size()
            if attempt.allow_small and size > 0:
                attempt.remaining = size
            else:
                if attempt.allow_small and self.enqueues:
                    return PROGRESS  # a pending enqueue may still add elements
                attempt.error = errors.OutOfRangeError(
                    None, None, f"{self.kind} '{self.name}' is closed and has insufficient "
                                f"elements (requested {attempt.remaining}, current size "
                                f"{size})")
                return COMPLETE
        result = NO_PROGRESS
        for _ in range(self._available()):
            result = PROGRESS
            attempt.taken.append(self._take())
            attempt.remaining -= 1
            if attempt.remaining == 0:
                attempt.outs = self._batch([self._element(t) for t in attempt.taken])
                attempt.taken = []
                return COMPLETE
        return result

    def close(self, cancel_pending_enqueues: bool, ctx, done):
        """Close: at once, cancelling the pending enqueues; or, as TF's, once the enqueues
        already waiting have gone in (an attempt behind them)."""
        if cancel_pending_enqueues:
            self._close_and_cancel()
            return ()
        return self._submit(_Attempt(True, 0, self._close_step), ctx, done)

    def _close_step(self, attempt: _Attempt) -> int:
        if self.closed:
            attempt.error = errors.CancelledError(
                None, None, f"Queue '{self.name}' is already closed.")
        self.closed = True
        return COMPLETE

    def _close_and_cancel(self) -> None:
        calls = []
        with self.lock:
            self.closed = True
            while self.enqueues:
                attempt = self.enqueues.popleft()
                attempt.error = errors.CancelledError(None, None,
                                                      "Enqueue operation was cancelled")
                calls.append(self._finish(attempt))
        self._run_calls(calls)
        self._flush()

    # -- the machinery -------------------------------------------------------------------------
    def _submit(self, attempt: _Attempt, ctx, done):
        cm = ctx.cancellation
        token = cm.register_callback(partial(self.cancel, attempt))
        if token is None:
            what = "Enqueue" if attempt.is_enqueue else "Dequeue"
            raise errors.CancelledError(None, None, f"{what} operation was cancelled")
        attempt.cm, attempt.token = cm, token
        attempt.loop = asyncio.get_running_loop()
        with self.lock:
            (self.enqueues if attempt.is_enqueue else self.dequeues).append(attempt)
        self._flush()
        with self.lock:
            if not attempt.finished:
                attempt.callback = done
                return None
        cm.deregister_callback(token)
        if attempt.error is not None:
            raise attempt.error
        return attempt.outs

    def _finish(self, attempt: _Attempt):
        """Mark `attempt` done (under the lock); what to call once the lock is released."""
        attempt.finished = True
        callback, attempt.callback = attempt.callback, None
        return (attempt, callback) if callback is not None else None

    def _run_calls(self, calls: list) -> None:
        for call in calls:
            if call is None:
                continue
            attempt, callback = call
            attempt.cm.deregister_callback(attempt.token)
            outs, err = attempt.outs, attempt.error
            attempt.outs = attempt.error = None
            _deliver(attempt.loop, callback, outs, err)

    def _try(self, attempts: collections.deque, calls: list) -> bool:
        progress = False
        while attempts:
            attempt = attempts[0]
            result = attempt.step(attempt)
            if result == NO_PROGRESS:
                break
            progress = True
            if result == PROGRESS:
                break
            attempts.popleft()
            calls.append(self._finish(attempt))
        return progress

    def _flush(self) -> None:
        """Let the front attempts progress until neither list moves (TF's FlushUnlocked)."""
        calls: list = []
        with self.lock:
            changed = True
            while changed:
                changed = self._try(self.enqueues, calls)
                changed = self._try(self.dequeues, calls) or changed
        self._run_calls(calls)

    def cancel(self, attempt: _Attempt) -> None:
        """The attempt's run is cancelled: out of its list, its taken elements put back."""
        with self.lock:
            if attempt.finished:
                return
            attempts = self.enqueues if attempt.is_enqueue else self.dequeues
            try:
                attempts.remove(attempt)
            except ValueError:
                return
            if attempt.taken:
                self._restore(attempt.taken)
                attempt.taken = []
            what = "Enqueue" if attempt.is_enqueue else "Dequeue"
            attempt.error = errors.CancelledError(None, None, f"{what} operation was cancelled")
            attempt.outs = None
            call = self._finish(attempt)
        if call is not None:
            _, callback = call
            err, attempt.error = attempt.error, None
            # Reported on the loop's next turn: the run that cancels is still failing its
            # step with the cause (a deadline, another node's error), which must win.
            attempt.loop.call_soon_threadsafe(callback, None, err)
        self._flush()


class PaddingFIFOQueue(Queue):
    """A FIFO queue whose shapes may have unknown dims: dequeue_many pads each component
    to the batch's largest (zeros, or "" for strings)."""

    kind = "PaddingFIFOQueue"

    def _compatible(self, want, got) -> bool:
        return len(want) == len(got) and all(w is None or w == g
                                             for w, g in zip(want, got, strict=True))

    def _batch(self, elements: list) -> tuple:
        outs = []
        for i, (dtype, shape) in enumerate(zip(self.dtypes, self.shapes, strict=True)):
            dims = [d if d is not None else max((np.shape(e[i])[k] for e in elements),
                                                default=0) for k, d in enumerate(shape)]
            fill = b"" if dtype == dtypes.string else 0
            out = np.full((len(elements), *dims), fill, dtype=_np_dtype(dtype))
            for j, element in enumerate(elements):
                value = element[i]
                out[(j, *(slice(0, n) for n in np.shape(value)), Ellipsis)] = value
            outs.append(out)
        return tuple(outs)


class _PhiloxSampler:
    """TF's SingleSampleAdapter<PhiloxRandom>: 32-bit samples one at a time, four per
    Philox block; both seeds 0 means seeds drawn at random (TF's New64)."""

    def __init__(self, seed: int, seed2: int):
        if seed == 0 and seed2 == 0:
            seed, seed2 = (int.from_bytes(os.urandom(8), "little") for _ in range(2))
        self.philox = Philox.from_seeds(seed, seed2)
        self.buffer: list = []

    def __call__(self) -> int:
        if not self.buffer:
            block = self.philox.blocks(np.zeros(1, np.uint64))[0]
            self.philox = self.philox.skipped(1)
            self.buffer = [int(w) for w in reversed(block)]
        return self.buffer.pop()


class RandomShuffleQueue(Queue):
    """Dequeues a random element (TF's order for a seeded queue: index = sample % size,
    the last element moved into its place), and only while more than min_after_dequeue
    elements are left, until closed."""

    kind = closed_kind = single_kind = "RandomShuffleQueue"

    def __init__(self, capacity, component_dtypes, shapes, name, min_after_dequeue: int,
                 seed: int, seed2: int):
        super().__init__(capacity, component_dtypes, shapes, name)
        self.min_after_dequeue = min_after_dequeue
        self.seeds = (seed, seed2)
        self.generator = _PhiloxSampler(seed, seed2)

    def _init_storage(self) -> None:
        self.items: list = []

    def _take(self):
        items = self.items
        index = self.generator() % len(items)
        item = items[index]
        items[index] = items[-1]
        items.pop()
        return item

    def _restore(self, taken: list) -> None:
        self.items.extend(reversed(taken))

    def _available(self) -> int:
        return len(self.items) - (0 if self.closed else self.min_after_dequeue)


class PriorityQueue(Queue):
    """Component 0 is an int64 priority; the smallest comes out first (equal priorities
    in the order they came in)."""

    kind = closed_kind = single_kind = "PriorityQueue"

    def _init_storage(self) -> None:
        self.items: list = []  # a heap of (priority, arrival, element)
        self.arrivals = itertools.count()

    def _put(self, element: tuple) -> None:
        heapq.heappush(self.items, (int(np.asarray(element[0]).reshape(-1)[0]),
                                    next(self.arrivals), element))

    def _take(self):
        return heapq.heappop(self.items)

    def _restore(self, taken: list) -> None:
        for item in taken:
            heapq.heappush(self.items, item)

    def _element(self, item) -> tuple:
        return item[2]

    def dequeue_many(self, n: int, allow_small: bool, ctx, done):
        if not self.specified_shapes:
            raise _invalid("PriorityQueue's DequeueMany requires the components to have "
                           "specified shapes.")
        return super().dequeue_many(n, allow_small, ctx, done)

    def _dequeue_many_step(self, attempt: _Attempt) -> int:
        """A batch comes out sorted, so it is taken whole: the attempt waits until the
        queue holds enough (once closed, dequeue_up_to takes what is left)."""
        size = self.size()
        if self.closed and (size == 0 or (not attempt.allow_small and size < attempt.remaining)):
            attempt.error = errors.OutOfRangeError(
                None, None, f"PriorityQueue '{self.name}' is closed and has insufficient "
                            f"elements (requested {attempt.remaining}, current size {size})")
            return COMPLETE
        if size < attempt.remaining:
            if size == 0 or not (self.closed and attempt.allow_small):
                return NO_PROGRESS
            # TF 2.21 takes these `size` elements, then fails the attempt with OutOfRange
            # (losing them); aioflow returns them, as dequeue_up_to is documented to.
            attempt.remaining = size
        elements = [self._element(self._take()) for _ in range(attempt.remaining)]
        attempt.remaining = 0
        attempt.outs = self._batch(elements)
        return COMPLETE

    def validate(self, components: list) -> None:
        super().validate(components)
        if np.size(components[0]) != 1:
            raise _invalid(f"Expected the priority element to be a scalar, but received "
                           f"shape: {shape_string(np.shape(components[0]))}")


# -- the queue ops -----------------------------------------------------------------------------

class _QueueOp(OpKernel):
    """A queue's handle; the queue made the first time (or found by shared_name, and then
    checked against this node as TF's MatchesNodeDef does). `ref_handle`: TF 1's op, whose
    Ref(string) output carries the queue itself."""

    ref_handle = False

    def __init__(self, ctx):
        super().__init__(ctx)
        self.node_def = ctx.node_def
        self.component_types = [dtypes.as_dtype(t) for t in ctx.get_attr("component_types",
                                                                          [])]
        self.capacity = int(ctx.get_attr("capacity", -1))
        shapes = ctx.get_attr("shapes", [])
        self.shapes = [None if s.rank is None else tuple(s.as_list()) for s in shapes]
        self.container = _text(ctx.get_attr("container", b""))
        self.shared_name = _text(ctx.get_attr("shared_name", b""))
        self.device = ctx.node_def.device or _CPU0
        self._cached = (None, None)
        self.check_attrs()

    def check_attrs(self) -> None:
        if self.shapes and len(self.shapes) != len(self.component_types):
            raise _invalid(f"Different number of component types.  Types: "
                           f"{_types_string(self.component_types)}, Shapes: "
                           f"[{', '.join(shape_string(s) for s in self.shapes)}]")
        for s in self.shapes:
            if s is None or any(d is None for d in s):
                raise _invalid(f"{self.op_type[:-2]} requires fully defined shapes, got "
                               f"{shape_string(s)}")

    def make(self, name: str) -> Queue:
        return Queue(self.capacity, self.component_types, self.shapes, name)

    def compute(self, ctx, inputs):
        mgr, value = self._cached
        if mgr is ctx.resource_mgr:
            return (value,)
        name = self.shared_name or f"_{next(_unique)}_{self.name}"
        queue = ctx.resource_mgr.lookup_or_create(self.container, QUEUE_TYPE, name,
                                                  lambda: self.make(name))
        self.matches(queue)
        queue.container = self.container or ctx.resource_mgr.default_container
        if self.ref_handle:
            self._cached = (ctx.resource_mgr, queue)
            return (queue,)
        value = handle_value(ResourceHandle(self.device, queue.container, name, QUEUE_TYPE))
        value.flags.writeable = False
        self._cached = (ctx.resource_mgr, value)
        return (value,)

    def matches(self, queue: Queue) -> None:
        """TF's MatchesNodeDef: a shared queue must be what this node asks for."""
        prefix = f"Shared queue '{queue.name}' has"
        if type(queue) is not type(self.make(queue.name)):
            raise _invalid(f"Expected {queue.kind}, found {self.op_type}")
        capacity = UNBOUNDED if self.capacity < 0 else self.capacity
        if queue.capacity != capacity:
            raise _invalid(f"{prefix} capacity {queue.capacity} but requested capacity was "
                           f"{capacity}")
        want_types = self.queue_types()
        if queue.dtypes != want_types:
            raise _invalid(f"{prefix} component types {_types_string(queue.dtypes)} but "
                           f"requested component types were {_types_string(want_types)}")
        want_shapes = self.queue_shapes()
        if list(queue.shapes) != want_shapes:
            def shapes(ss):
                return "[" + ", ".join(shape_string(s) for s in ss) + "]"
            raise _invalid(f"{prefix} component shapes {shapes(queue.shapes)} but requested "
                           f"component shapes were {shapes(want_shapes)}")

    def queue_types(self) -> list:
        return self.component_types

    def queue_shapes(self) -> list:
        return list(self.shapes)


@register_kernel("FIFOQueueV2", "CPU")
class FIFOQueueOp(_QueueOp):
    """A FIFO queue's handle."""


@register_kernel("PaddingFIFOQueueV2", "CPU")
class PaddingFIFOQueueOp(_QueueOp):
    """A padding FIFO queue's handle (shapes required; unknown dims allowed)."""

    def check_attrs(self) -> None:
        if len(self.shapes) != len(self.component_types):
            raise _invalid(f"Shapes must be provided for all components, but received "
                           f"{len(self.component_types)} dtypes and {len(self.shapes)} "
                           f"shapes.")
        for s in self.shapes:
            if s is None:
                raise _invalid("PaddingFIFOQueue requires shapes of known rank")

    def make(self, name: str) -> Queue:
        return PaddingFIFOQueue(self.capacity, self.component_types, self.shapes, name)


@register_kernel("RandomShuffleQueueV2", "CPU")
class RandomShuffleQueueOp(_QueueOp):
    """A random shuffle queue's handle."""

    def __init__(self, ctx):
        self.min_after_dequeue = int(ctx.get_attr("min_after_dequeue", 0))
        self.seeds = (int(ctx.get_attr("seed", 0)), int(ctx.get_attr("seed2", 0)))
        super().__init__(ctx)

    def check_attrs(self) -> None:
        super().check_attrs()
        capacity = UNBOUNDED if self.capacity < 0 else self.capacity
        if self.min_after_dequeue >= capacity:
            raise _invalid(f"min_after_dequeue {self.min_after_dequeue} must be < capacity "
                           f"{capacity}")

    def make(self, name: str) -> Queue:
        return RandomShuffleQueue(self.capacity, self.component_types, self.shapes, name,
                                  self.min_after_dequeue, *self.seeds)

    def matches(self, queue) -> None:
        super().matches(queue)
        if queue.min_after_dequeue != self.min_after_dequeue:
            raise _invalid(f"Shared queue '{queue.name}' has min_after_dequeue "
                           f"{queue.min_after_dequeue} but requested min_after_dequeue was "
                           f"{self.min_after_dequeue}")
        if queue.seeds != self.seeds and self.seeds != (0, 0):
            raise _invalid(f"Shared queue '{queue.name}' has random seeds ({queue.seeds[0]}, "
                           f"{queue.seeds[1]}) but requested seeds are ({self.seeds[0]}, "
                           f"{self.seeds[1]})")


@register_kernel("PriorityQueueV2", "CPU")
class PriorityQueueOp(_QueueOp):
    """A priority queue's handle: its components are the int64 priority and
    component_types."""

    def queue_types(self) -> list:
        return [dtypes.int64, *self.component_types]

    def queue_shapes(self) -> list:
        return [(), *self.shapes] if self.shapes else []

    def make(self, name: str) -> Queue:
        return PriorityQueue(self.capacity, self.queue_types(), self.queue_shapes(), name)


for _kind in (FIFOQueueOp, PaddingFIFOQueueOp, RandomShuffleQueueOp, PriorityQueueOp):
    register_kernel(_kind.__name__[:-2], "CPU")(
        type(f"Ref{_kind.__name__}", (_kind,), {"ref_handle": True,
                                                "__doc__": "TF 1's op: a ref handle."}))


def queue_of(ctx, value) -> Queue:
    """The queue an input carries: the queue itself (ref handle) or its resource handle."""
    if isinstance(value, Queue):
        return value
    handle = handle_of(value)
    return ctx.resource_mgr.lookup(handle.container, QUEUE_TYPE, handle.name)


def _register(name: str):
    """Register a kernel for the V2 op `name` and TF 1's ref-handle op."""
    def wrap(cls):
        register_kernel(name, "CPU")(cls)
        register_kernel(name[:-2], "CPU")(cls)
        return cls
    return wrap


class _QueueUser(AsyncOpKernel):
    """An op on a queue given by its handle (input 0). `start_async` is the executor's
    task-free path; `compute_async` (traced runs) awaits the same."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.input_types = [dtypes.as_dtype(t) for t in ctx.input_dtypes]
        self.output_types = [dtypes.as_dtype(t) for t in ctx.output_dtypes]

    def queue(self, ctx, value) -> Queue:
        return queue_of(ctx, value)

    def start_async(self, ctx, inputs, done):
        return self.start(ctx, inputs, done, [])

    def start(self, ctx, inputs, done, started: list):
        raise NotImplementedError

    async def compute_async(self, ctx, inputs):
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def done(outs, err):
            if not future.done():
                if err is not None:
                    future.set_exception(err)
                else:
                    future.set_result(outs)

        started: list = []  # (queue, attempt) of the attempt started, to cancel it
        outs = self.start(ctx, inputs, done, started)
        if outs is not None:
            return outs
        try:
            return await future
        except asyncio.CancelledError:
            for queue in started:
                for attempt in list(queue.enqueues) + list(queue.dequeues):
                    if attempt.callback is done:
                        queue.cancel(attempt)
            raise


@_register("QueueEnqueueV2")
class QueueEnqueueOp(_QueueUser):
    """Enqueue one element; waits while the queue is full."""

    many = False

    def start(self, ctx, inputs, done, started):
        queue = self.queue(ctx, inputs[0])
        started.append(queue)
        want = [self.input_types[0], *queue.dtypes]
        if self.input_types != want:
            raise _signature_error(self.input_types, [], want, [])
        components = [np.asarray(v) for v in inputs[1:]]
        if not self.many:
            queue.validate(components)
            return queue.enqueue([tuple(components)], ctx, done)
        batch = queue.validate_many(components)
        if batch == 0:
            return ()
        elements = [tuple(c[j, ...] for c in components) for j in range(batch)]
        if isinstance(queue, PriorityQueue):
            for element in elements:
                queue.validate(list(element))
        return queue.enqueue(elements, ctx, done)


@_register("QueueEnqueueManyV2")
class QueueEnqueueManyOp(QueueEnqueueOp):
    """Enqueue the slices of a batch along dimension 0, in order."""

    many = True


@_register("QueueDequeueV2")
class QueueDequeueOp(_QueueUser):
    """Dequeue one element; waits while the queue is empty (and open)."""

    def check_signature(self, queue: Queue) -> None:
        want_in = self.input_types
        if self.output_types != queue.dtypes:
            raise _signature_error(self.input_types, self.output_types, want_in, queue.dtypes)

    def start(self, ctx, inputs, done, started):
        queue = self.queue(ctx, inputs[0])
        started.append(queue)
        self.check_signature(queue)
        return queue.dequeue(ctx, done)


@_register("QueueDequeueManyV2")
class QueueDequeueManyOp(QueueDequeueOp):
    """Dequeue a batch of n elements, stacked (padded for a PaddingFIFOQueue)."""

    allow_small = False
    label = "DequeueManyOp"

    def start(self, ctx, inputs, done, started):
        queue = self.queue(ctx, inputs[0])
        started.append(queue)
        self.check_signature(queue)
        n = int(inputs[1])
        if n < 0:
            raise _invalid(f"{self.label} requested {n} < 0 elements")
        return queue.dequeue_many(n, self.allow_small, ctx, done)


@_register("QueueDequeueUpToV2")
class QueueDequeueUpToOp(QueueDequeueManyOp):
    """Like DequeueMany, but once the queue is closed a smaller batch of what is left."""

    allow_small = True
    label = "DequeueUpToOp"


@_register("QueueCloseV2")
class QueueCloseOp(_QueueUser):
    """Close the queue (cancel_pending_enqueues: and cancel the enqueues waiting)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.cancel_pending = bool(ctx.get_attr("cancel_pending_enqueues", False))

    def start(self, ctx, inputs, done, started):
        queue = self.queue(ctx, inputs[0])
        started.append(queue)
        return queue.close(self.cancel_pending, ctx, done)


@_register("QueueSizeV2")
class QueueSizeOp(OpKernel):
    """The number of elements in the queue now (int32)."""

    def compute(self, ctx, inputs):
        queue = queue_of(ctx, inputs[0])
        with queue.lock:
            return (np.array(queue.size(), np.int32),)


@_register("QueueIsClosedV2")
class QueueIsClosedOp(OpKernel):
    """Whether the queue is closed."""

    def compute(self, ctx, inputs):
        return (np.array(queue_of(ctx, inputs[0]).closed),)
