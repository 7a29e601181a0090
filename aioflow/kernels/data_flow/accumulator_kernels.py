"""Kernels of TF's conditional accumulators (conditional_accumulator_base.cc,
conditional_accumulator.h, sparse_conditional_accumulator.h): what SyncReplicasOptimizer
aggregates each variable's gradients with.

An accumulator holds a global step, a count and a running sum. ApplyGradient adds a
gradient whose local step is not behind the global step (a stale one is dropped
silently); TakeGradient waits until `num_required` gradients are in, then returns their
mean (reduction_type MEAN, else the sum), resets the count and advances the global step
by one; SetGlobalStep sets it (a warning when it goes back, as TF's). A take that cannot
finish waits in a FIFO list of attempts: its kernel returned from `start_async` and the
executor awaits `done`, so no thread is held; an apply (from any run, any session sharing
it by shared_name) lets the front attempts finish; a cancelled run's attempt leaves the
list with CancelledError.

The sparse accumulator keeps (indices, rows, a count per row): a new gradient is merged
with the sum by TF's two-pointer walk over both index lists (equal indices add, and
count twice), so TF's order is kept, unsorted input included; the mean divides each row
by its own count. Errors are TF 2.21's, message for message
(tests/data/accumulators_tf.json).

The dense kernels serve the resource ops (ResourceConditionalAccumulator, ...: what TF 2's
Python builds) and TF 1's Ref(string) ones (ConditionalAccumulator, ...), whose handle
carries the accumulator itself, as queue_kernels.py does for queues."""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import threading

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import AsyncOpKernel, OpKernel, register_kernel
from aioflow.framework.var import ResourceHandle, handle_value
from aioflow.kernels.data_flow.queue_kernels import _deliver, _signature_error, _text
from aioflow.kernels.state.resource_variable_kernels import handle_of

ACCUMULATOR_TYPE = "ConditionalAccumulator"
_CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
_unique = itertools.count()
_log = logging.getLogger(__name__)
#: The dtypes TF registers the accumulator kernels for (CPU).
_FLOATS = {"dtype": [dtypes.float16, dtypes.float32, dtypes.float64]}


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _shape_string(dims) -> str:
    """TF's (Partial)TensorShape::DebugString: [2,3], [?,3], <unknown>."""
    if dims is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


class _Take:
    """One TakeGradient waiting for `num_required` gradients (TF's Attempt)."""

    __slots__ = ("num_required", "callback", "outs", "error", "loop", "cm", "token")

    def __init__(self, num_required: int, loop, cm):
        self.num_required = num_required
        self.callback = None
        self.outs = None
        self.error = None
        self.loop = loop
        self.cm = cm
        self.token = None


class Accumulator:
    """A dense conditional accumulator (TF's ConditionalAccumulator<T>)."""

    kind = "ConditionalAccumulator"

    def __init__(self, dtype, shape, reduction_type: str, name: str):
        self.dtype = dtype
        self.shape = shape  # a tuple (None: unknown dims), or None: unknown rank
        self.mean = reduction_type == "MEAN"
        self.name = name
        self.container = ""
        self.lock = threading.Lock()
        self.counter = 0
        self.global_step = 0
        self.takes: collections.deque[_Take] = collections.deque()
        self.sum = None

    def read_ref(self, input_name: str) -> np.ndarray:
        """A TF 1 ref handle read as a value: TF's [container, name]."""
        out = np.empty(2, dtype=object)
        out[:] = [self.container.encode(), self.name.encode()]
        return out

    # -- one kind's gradients --------------------------------------------------------------
    def _compatible(self, dims) -> bool:
        return self.shape is None or (len(self.shape) == len(dims) and all(
            w is None or w == d for w, d in zip(self.shape, dims, strict=True)))

    def validate(self, grad: np.ndarray) -> None:
        dims = grad.shape
        if self.counter > 0 and self.sum.shape != dims:
            raise _invalid(f"Shape mismatch: expected {_shape_string(self.sum.shape)}, got "
                           f"{_shape_string(dims)}")
        if not self._compatible(dims):
            raise _invalid(f"Shape mismatch: expected {_shape_string(self.shape)}, got "
                           f"{_shape_string(dims)}")

    def add(self, grad: np.ndarray) -> None:
        if self.counter == 0:
            self.sum = np.array(grad, dtype=self.dtype.as_numpy_dtype, copy=True)
        else:
            np.add(self.sum, grad, out=self.sum, casting="unsafe")

    def result(self) -> tuple:
        total, self.sum = self.sum, None
        if self.mean:
            total = _divide(total, np.asarray(self.counter))
        return (total,)

    # -- the protocol ------------------------------------------------------------------------
    def apply(self, local_step: int, *grad) -> None:
        """Add a gradient computed at `local_step` (dropped when stale); lets the waiting
        takes finish."""
        with self.lock:
            if local_step < self.global_step:
                return
            self.validate(*grad)
            self.add(*grad)
            self.counter += 1
        self._flush()

    def set_global_step(self, step: int) -> None:
        with self.lock:
            if step < self.global_step:
                _log.warning("Attempt to set current_global_step_ to smaller value: "
                             "current_global_step_ = %d >= %d = new_global_step.",
                             self.global_step, step)
            self.global_step = step

    def num_accumulated(self) -> int:
        with self.lock:
            return self.counter

    def take(self, num_required: int, ctx, done):
        """The aggregate when `num_required` gradients are in, else None and `done(outs,
        err)` once they are (or the run is cancelled)."""
        take = _Take(num_required, asyncio.get_running_loop(), ctx.cancellation)
        take.token = take.cm.register_callback(lambda: self.cancel(take))
        if take.token is None:
            raise errors.CancelledError(None, None, "TakeGrad operation was cancelled")
        with self.lock:
            self.takes.append(take)
        self._flush()
        with self.lock:
            if take.outs is None and take.error is None:
                take.callback = done
                return None
        take.cm.deregister_callback(take.token)
        if take.error is not None:
            raise take.error
        return take.outs

    def _flush(self) -> None:
        """Finish the front takes while enough gradients are in (TF's FlushUnlocked)."""
        finished = []
        with self.lock:
            while self.takes and self.counter >= self.takes[0].num_required:
                take = self.takes.popleft()
                self.global_step += 1
                take.outs = self.result()
                self.counter = 0
                finished.append((take, take.callback))
                take.callback = None
        for take, callback in finished:
            if callback is not None:
                take.cm.deregister_callback(take.token)
                _deliver(take.loop, callback, take.outs, None)

    def cancel(self, take: _Take) -> None:
        with self.lock:
            try:
                self.takes.remove(take)
            except ValueError:
                return  # finished already
            take.error = errors.CancelledError(None, None, "TakeGrad operation was cancelled")
            callback, take.callback = take.callback, None
        if callback is not None:
            # On the loop's next turn: the cause of the cancellation must win.
            take.loop.call_soon_threadsafe(callback, None, take.error)


def _divide(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    """total / count in total's (floating) dtype."""
    return (total / count.astype(total.dtype)).astype(total.dtype, copy=False)


class SparseAccumulator(Accumulator):
    """A sparse conditional accumulator (TF's SparseConditionalAccumulator<T>): its
    gradients are (indices, values, dense shape) triples."""

    kind = "SparseConditionalAccumulator"

    def __init__(self, dtype, shape, reduction_type: str, name: str):
        super().__init__(dtype, shape, reduction_type, name)
        self.indices = self.counts = None

    def validate(self, indices, values, dense_shape) -> None:
        shape = self.shape
        rank = -1 if shape is None else len(shape)
        if indices.ndim != 1:
            raise _invalid(f"Input indices should be vector but received shape: "
                           f"{_shape_string(indices.shape)}")
        if values.ndim == 0:
            raise _invalid("Values cannot be 0-dimensional.")
        if values.shape[0] != indices.shape[0]:
            raise _invalid(f"Expected {indices.shape[0]} non-empty input values, got "
                           f"{values.shape[0]}")
        if dense_shape is not None:
            if rank > dense_shape.size:
                raise _invalid(f"Shape mismatch: expected shape rank at least {rank}, got "
                               f"{dense_shape.size}")
            for i in range(max(rank, 0)):
                if shape[i] is not None and shape[i] != dense_shape[i]:
                    raise _invalid(f"Shape mismatch: expected shape dim {i} to be {shape[i]}"
                                   f", got {dense_shape[i]}")
        if rank > 0 and shape[0] is not None:
            for i, index in enumerate(indices):
                if index >= shape[0]:
                    raise _invalid(f"Shape mismatch: index of slice {i} exceeded limits of "
                                   f"shape; index is {index} exceeded {shape[0]}")
        if self.counter > 0:
            if self.sum.ndim != values.ndim:
                raise _invalid(f"Shape mismatch: expected values rank {self.sum.ndim}, got "
                               f"{values.ndim}")
            for i in range(1, values.ndim):
                if self.sum.shape[i] != values.shape[i]:
                    raise _invalid(f"Shape mismatch: expected values dim {i} to be "
                                   f"{self.sum.shape[i]}, got {values.shape[i]}")
        else:
            if rank > values.ndim:
                raise _invalid(f"Shape mismatch: expected values rank at least {rank}, got "
                               f"{values.ndim}")
            for i in range(1, max(rank, 0)):
                if shape[i] is not None and shape[i] != values.shape[i]:
                    raise _invalid(f"Shape mismatch: expected values dim {i} to be "
                                   f"{shape[i]}, got {values.shape[i]}")

    def add(self, indices, values, dense_shape) -> None:
        values = np.asarray(values, dtype=self.dtype.as_numpy_dtype)
        if self.counter == 0:
            self.indices = np.array(indices, np.int64)
            self.sum = values.copy()
            self.counts = np.ones(len(indices), np.int64)
            return
        self.indices, self.sum, self.counts = _merge(self.indices, self.sum, self.counts,
                                                     np.asarray(indices, np.int64), values)

    def result(self) -> tuple:
        indices, total, counts = self.indices, self.sum, self.counts
        self.indices = self.sum = self.counts = None
        if self.mean:
            shape = (-1,) + (1,) * (total.ndim - 1)
            total = _divide(total, counts.reshape(shape))
        first = self.shape[0] if self.shape and self.shape[0] is not None else -1
        return (indices, total, np.array([first, *total.shape[1:]], np.int64))


def _merge(acc_idx, acc_val, acc_cnt, idx, val):
    """TF's merge of a sparse sum with a gradient: one walk over both index lists in their
    order; equal indices add their rows and counts, the smaller index goes first."""
    picks = []  # (from the sum: row or -1, from the gradient: row or -1)
    i = j = 0
    while i < len(acc_idx) and j < len(idx):
        if acc_idx[i] < idx[j]:
            picks.append((i, -1))
            i += 1
        elif acc_idx[i] == idx[j]:
            picks.append((i, j))
            i += 1
            j += 1
        else:
            picks.append((-1, j))
            j += 1
    picks.extend((k, -1) for k in range(i, len(acc_idx)))
    picks.extend((-1, k) for k in range(j, len(idx)))
    out_idx = np.empty(len(picks), np.int64)
    out_val = np.empty((len(picks), *acc_val.shape[1:]), acc_val.dtype)
    out_cnt = np.empty(len(picks), np.int64)
    for n, (a, g) in enumerate(picks):
        if g < 0:
            out_idx[n], out_val[n], out_cnt[n] = acc_idx[a], acc_val[a], acc_cnt[a]
        elif a < 0:
            out_idx[n], out_val[n], out_cnt[n] = idx[g], val[g], 1
        else:
            out_idx[n], out_cnt[n] = acc_idx[a], acc_cnt[a] + 1
            np.add(acc_val[a], val[g], out=out_val[n], casting="unsafe")
    return out_idx, out_val, out_cnt


# -- the accumulator ops ---------------------------------------------------------------------

class _AccumulatorOp(OpKernel):
    """An accumulator's handle: the accumulator made the first time (or found by
    shared_name). `ref_handle`: TF 1's op, whose Ref(string) output carries it."""

    ref_handle = False
    make = Accumulator

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = dtypes.as_dtype(ctx.get_attr("dtype"))
        shape = ctx.get_attr("shape")
        self.shape = None if shape.rank is None else tuple(shape.as_list())
        self.reduction_type = _text(ctx.get_attr("reduction_type", b"MEAN"))
        self.container = _text(ctx.get_attr("container", b""))
        self.shared_name = _text(ctx.get_attr("shared_name", b""))
        self.device = ctx.node_def.device or _CPU0
        self._cached = (None, None)

    def compute(self, ctx, inputs):
        mgr, value = self._cached
        if mgr is ctx.resource_mgr:
            return (value,)
        name = self.shared_name or f"_{next(_unique)}_{self.name}"
        acc = ctx.resource_mgr.lookup_or_create(
            self.container, ACCUMULATOR_TYPE, name,
            lambda: self.make(self.dtype, self.shape, self.reduction_type, name))
        if type(acc) is not self.make or acc.dtype != self.dtype:
            raise _invalid(f"Shared accumulator '{name}' is a {acc.kind} of "
                           f"{acc.dtype.name}, not the {self.make.kind} of "
                           f"{self.dtype.name} {self.name} asks for")
        acc.container = self.container or ctx.resource_mgr.default_container
        if self.ref_handle:
            value = acc
        else:
            value = handle_value(ResourceHandle(self.device, acc.container, name,
                                                ACCUMULATOR_TYPE))
            value.flags.writeable = False
        self._cached = (ctx.resource_mgr, value)
        return (value,)


@register_kernel("ResourceConditionalAccumulator", "CPU", **_FLOATS)
class ResourceConditionalAccumulatorOp(_AccumulatorOp):
    """A dense accumulator's resource handle."""


@register_kernel("ConditionalAccumulator", "CPU", **_FLOATS)
class ConditionalAccumulatorOp(_AccumulatorOp):
    """TF 1's dense accumulator: a ref handle."""

    ref_handle = True


@register_kernel("SparseConditionalAccumulator", "CPU", **_FLOATS)
class SparseConditionalAccumulatorOp(_AccumulatorOp):
    """A sparse accumulator (a ref handle only, as TF's)."""

    ref_handle = True
    make = SparseAccumulator


def accumulator_of(ctx, value) -> Accumulator:
    """The accumulator an input carries: itself (ref handle) or its resource handle."""
    if isinstance(value, Accumulator):
        return value
    handle = handle_of(value)
    return ctx.resource_mgr.lookup(handle.container, ACCUMULATOR_TYPE, handle.name)


class _AccumulatorUser(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.input_types = [dtypes.as_dtype(t) for t in ctx.input_dtypes]
        self.output_types = [dtypes.as_dtype(t) for t in ctx.output_dtypes]

    def check_signature(self, acc: Accumulator, want_in: list, want_out: list) -> None:
        """TF's MatchSignature against the accumulator's dtype."""
        want_in = [self.input_types[0], *want_in]
        if self.input_types != want_in or self.output_types != want_out:
            raise _signature_error(self.input_types, self.output_types, want_in, want_out)


@register_kernel("AccumulatorApplyGradient", "CPU", **_FLOATS)
@register_kernel("ResourceAccumulatorApplyGradient", "CPU", **_FLOATS)
class AccumulatorApplyGradientOp(_AccumulatorUser):
    """Add a gradient computed at local_step (dropped when stale)."""

    def compute(self, ctx, inputs):
        acc = accumulator_of(ctx, inputs[0])
        self.check_signature(acc, [dtypes.int64, acc.dtype], [])
        acc.apply(int(inputs[1]), np.asarray(inputs[2]))
        return ()


@register_kernel("SparseAccumulatorApplyGradient", "CPU", **_FLOATS)
class SparseAccumulatorApplyGradientOp(_AccumulatorUser):
    """Add a sparse gradient (indices, values, dense shape) computed at local_step."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.has_known_shape = bool(ctx.get_attr("has_known_shape"))

    def compute(self, ctx, inputs):
        acc = accumulator_of(ctx, inputs[0])
        self.check_signature(acc, [dtypes.int64, dtypes.int64, acc.dtype, dtypes.int64], [])
        dense_shape = np.asarray(inputs[4]).reshape(-1) if self.has_known_shape else None
        acc.apply(int(inputs[1]), np.asarray(inputs[2]), np.asarray(inputs[3]), dense_shape)
        return ()


class _TakeGradientOp(_AccumulatorUser, AsyncOpKernel):
    """Wait for num_required gradients, then their aggregate. `start_async` is the
    executor's task-free path; `compute_async` (traced runs) awaits the same."""

    def outputs_of(self, acc: Accumulator) -> list:
        return [acc.dtype]

    def start_async(self, ctx, inputs, done):
        acc = accumulator_of(ctx, inputs[0])
        num_required = int(inputs[1])
        if num_required <= 0:
            raise _invalid(f"Argument num_required must be positive, but was {num_required}")
        self.check_signature(acc, [dtypes.int32], self.outputs_of(acc))
        return acc.take(num_required, ctx, done)

    async def compute_async(self, ctx, inputs):
        future = asyncio.get_running_loop().create_future()

        def done(outs, err):
            if not future.done():
                if err is not None:
                    future.set_exception(err)
                else:
                    future.set_result(outs)

        outs = self.start_async(ctx, inputs, done)
        return outs if outs is not None else await future


@register_kernel("AccumulatorTakeGradient", "CPU", **_FLOATS)
@register_kernel("ResourceAccumulatorTakeGradient", "CPU", **_FLOATS)
class AccumulatorTakeGradientOp(_TakeGradientOp):
    """The mean (or sum) of num_required gradients."""


@register_kernel("SparseAccumulatorTakeGradient", "CPU", **_FLOATS)
class SparseAccumulatorTakeGradientOp(_TakeGradientOp):
    """The mean (or sum) of num_required sparse gradients: indices, values, dense shape."""

    def outputs_of(self, acc: Accumulator) -> list:
        return [dtypes.int64, acc.dtype, dtypes.int64]


@register_kernel("AccumulatorNumAccumulated", "CPU")
@register_kernel("ResourceAccumulatorNumAccumulated", "CPU")
class AccumulatorNumAccumulatedOp(_AccumulatorUser):
    """How many gradients are in now."""

    def compute(self, ctx, inputs):
        return (np.int32(accumulator_of(ctx, inputs[0]).num_accumulated()),)


@register_kernel("AccumulatorSetGlobalStep", "CPU")
@register_kernel("ResourceAccumulatorSetGlobalStep", "CPU")
class AccumulatorSetGlobalStepOp(_AccumulatorUser):
    """Set the accumulator's global step (gradients of earlier steps are dropped)."""

    def compute(self, ctx, inputs):
        accumulator_of(ctx, inputs[0]).set_global_step(int(inputs[1]))
        return ()
