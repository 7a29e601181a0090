"""CPU kernels (NumPy) for the array ops a text or embedding model adds: Unique (V2,
WithCounts), BroadcastArgs, ReverseSequence, Bucketize, ClipByValue, TensorScatterUpdate/
Add/Sub/Max/Min and ScatterNdNonAliasingAdd, with TF 2.21's checks and messages.

- Unique keeps first-occurrence order; every NaN is its own value; -0.0 equals 0.0 (the
  first one seen is kept).
- ClipByValue is TF's `min(t, hi)` then `max(., lo)` with Eigen's NaN rules: a NaN `t`
  stays NaN, a NaN bound is ignored.
- Bucketize counts the boundaries <= x (upper bound); the boundaries are float32 (the attr's
  type), compared as TF's C++ compares them (in double for double input, else float).
- TensorScatter*: a copy of `tensor` with the slices at N-d `indices` replaced, added,
  subtracted, maxed or mined, in index order; an index out of range is TF's error naming
  it (skipped under bad_indices_policy "IGNORE"). Max/Min keep the tensor's value when the
  update is NaN.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.array.array_kernels import OUTPUT_POOL_ABOVE
from aioflow.kernels.array.gather_scatter_nd_kernels import (
    _bad_rows,
    _check_scatter_output,
    _check_scatter_shapes,
    _out_of_range,
    _policy,
    _valid_empty,
)
from aioflow.kernels.math.cwise_kernels import _NON_QUANTIZED_NUMBERS, BIG, shape_str

_INDEX = [dtypes.int32, dtypes.int64]


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# -- Unique --------------------------------------------------------------------------------

def _unique_rows(x, axis: int | None):
    """(unique values in first-occurrence order, idx, counts) along `axis` (None: 1-D)."""
    if axis is None:
        flat = x
    else:  # the other dims' size spelled out: reshape(0, -1) is ambiguous
        rest = int(np.prod(x.shape, dtype=np.int64)) // max(1, x.shape[axis])
        flat = np.moveaxis(x, axis, 0).reshape(x.shape[axis], rest)
    n = flat.shape[0]
    if n == 0:
        return np.arange(0), np.zeros(0, np.int64), np.zeros(0, np.int64)
    if flat.ndim == 2 and flat.dtype == object:  # strings: np.unique has no axis for them
        first_of: dict = {}
        inverse = np.array([first_of.setdefault(tuple(row), len(first_of)) for row in flat],
                           np.int64)
        first = np.unique(inverse, return_index=True)[1]  # ids are in first-seen order
        return first, inverse, np.bincount(inverse, minlength=len(first_of))
    if flat.ndim == 1:
        kw = {"equal_nan": False} if flat.dtype.kind in "fc" else {}
        _, first, inverse = np.unique(flat, return_index=True, return_inverse=True, **kw)
    else:
        if flat.shape[1] == 0:
            first, inverse = np.zeros(1, np.int64), np.zeros(n, np.int64)
        else:
            _, first, inverse = np.unique(flat, axis=0, return_index=True,
                                          return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(first, kind="stable")  # unique ids in first-occurrence order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    idx = rank[inverse]
    counts = np.bincount(idx, minlength=order.size)
    return first[order], idx, counts


class _UniqueBase(OpKernel):
    """Unique values of a vector (or slices along an axis) and each element's position."""

    expensive = None
    pool_above = BIG
    with_axis = False
    with_counts = False

    def __init__(self, ctx):
        super().__init__(ctx)
        self._out_idx = ctx.get_attr("out_idx", dtypes.int32).as_numpy_dtype

    def compute(self, ctx, inputs):
        x = np.asarray(inputs[0])
        axis = None
        if self.with_axis:
            axis_t = np.asarray(inputs[1])
            if axis_t.size > 1:
                raise _invalid("axis does not support input tensors larger than 1 elements")
            if axis_t.size == 1:
                axis = int(axis_t.reshape(-1)[0])
                if axis < 0:
                    axis += x.ndim
                if not 0 <= axis < x.ndim:
                    raise _invalid(f"axis has to be between [0, {x.ndim})")
        if axis is None and x.ndim != 1:
            raise _invalid("unique expects a 1D vector.")
        if axis is not None and x.ndim == 1:
            axis = None
        first, idx, counts = _unique_rows(x, axis)
        if axis is None:
            y = x[first] if first.size else x[:0]
        else:
            y = np.take(x, first, axis=axis)
        out = [y, idx.astype(self._out_idx)]
        if self.with_counts:
            out.append(counts.astype(self._out_idx))
        return out


@register_kernel("Unique", "CPU")
class UniqueOp(_UniqueBase):
    pass


@register_kernel("UniqueWithCounts", "CPU")
class UniqueWithCountsOp(_UniqueBase):
    with_counts = True


@register_kernel("UniqueV2", "CPU")
class UniqueV2Op(_UniqueBase):
    with_axis = True


@register_kernel("UniqueWithCountsV2", "CPU")
class UniqueWithCountsV2Op(_UniqueBase):
    with_axis = True
    with_counts = True


# -- BroadcastArgs -------------------------------------------------------------------------

@register_kernel("BroadcastArgs", "CPU", T=_INDEX)
class BroadcastArgsOp(OpKernel):
    """The shape two shapes broadcast to (TF's BCast rules)."""

    compilable = True

    def compute(self, ctx, inputs):
        s0, s1 = np.asarray(inputs[0]), np.asarray(inputs[1])
        for i, s in enumerate((s0, s1)):
            if s.ndim != 1:
                raise _invalid(f"In[{i}] must be a vector.{shape_str(s.shape)}")
        a, b = s0.tolist(), s1.tolist()
        n = max(len(a), len(b))
        a = [1] * (n - len(a)) + a
        b = [1] * (n - len(b)) + b
        out = []
        for x, y in zip(a, b, strict=False):
            if x == y or y == 1:
                out.append(x)
            elif x == 1:
                out.append(y)
            else:
                raise _invalid(f"Incompatible shapes: {shape_str(s0.tolist())} vs. "
                               f"{shape_str(s1.tolist())}")
        return (np.array(out, dtype=s0.dtype),)


# -- ReverseSequence -----------------------------------------------------------------------

@register_kernel("ReverseSequence", "CPU", Tlen=_INDEX)
class ReverseSequenceOp(OpKernel):
    """Reverses the first seq_lengths[b] entries along seq_dim of each slice b of
    batch_dim."""

    expensive = None
    pool_above = OUTPUT_POOL_ABOVE

    def __init__(self, ctx):
        super().__init__(ctx)
        self._seq_dim = ctx.get_attr("seq_dim")
        self._batch_dim = ctx.get_attr("batch_dim", 0)

    def compute(self, ctx, inputs):
        x, lengths = np.asarray(inputs[0]), np.asarray(inputs[1])
        seq_dim, batch_dim = self._seq_dim, self._batch_dim
        if batch_dim < 0:
            raise _invalid(f"Invalid batch_dim {batch_dim}")
        if seq_dim < 0:
            raise _invalid(f"Invalid seq_dim {seq_dim}")
        if batch_dim == seq_dim:
            raise _invalid(f"batch_dim == seq_dim == {seq_dim}")
        if seq_dim >= x.ndim:
            raise _invalid(f"seq_dim must be < input rank ( {seq_dim} vs. {x.ndim})")
        if batch_dim >= x.ndim:
            raise _invalid(f"batch_dim must be < input rank ( {batch_dim} vs. {x.ndim})")
        if lengths.ndim != 1:
            raise _invalid(f"seq_lengths must be 1-dim, not {lengths.ndim}")
        if lengths.shape[0] != x.shape[batch_dim]:
            raise _invalid(f"Length of seq_lengths != input.dims({batch_dim}), "
                           f"({lengths.shape[0]} vs. {x.shape[batch_dim]})")
        seq = x.shape[seq_dim]
        bad = (lengths < 0) | (lengths > seq)
        if bad.any():
            d = int(np.argmax(bad))
            if lengths[d] < 0:
                raise _invalid(f"seq_lens({d}) < 0")
            raise _invalid(f"seq_lens({d}) > input.dims({seq_dim})")
        if x.size == 0:
            return (x.copy(),)
        lens = lengths.astype(np.int64)[:, None]
        pos = np.arange(seq, dtype=np.int64)[None, :]
        src = np.where(pos < lens, lens - 1 - pos, pos)  # [batch, seq]
        # Lay the [batch, seq] index out along (batch_dim, seq_dim) of x.
        shape = [1] * x.ndim
        shape[batch_dim], shape[seq_dim] = src.shape[0], seq
        if batch_dim > seq_dim:
            src = src.T
        index = np.broadcast_to(src.reshape(shape), x.shape)
        return (np.take_along_axis(x, index, axis=seq_dim),)


# -- Bucketize -----------------------------------------------------------------------------

@register_kernel("Bucketize", "CPU", T=[dtypes.int32, dtypes.int64, dtypes.float32,
                                       dtypes.float64])
class BucketizeOp(OpKernel):
    """output[i] = the number of boundaries <= input[i]."""

    expensive = None
    pool_above = BIG
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        bounds = np.asarray(ctx.get_attr("boundaries"), dtype=np.float32)
        if np.any(bounds[1:] < bounds[:-1]):
            raise _invalid("Expected sorted boundaries")
        self._bounds32 = bounds
        self._bounds64 = bounds.astype(np.float64)

    def compute(self, ctx, inputs):
        x = np.asarray(inputs[0])
        if x.dtype == np.float64:
            out = np.searchsorted(self._bounds64, x, side="right")
        else:
            out = np.searchsorted(self._bounds32, x.astype(np.float32, copy=False), side="right")
        return (np.asarray(out, dtype=np.int32).reshape(x.shape),)


# -- ClipByValue ---------------------------------------------------------------------------

@register_kernel("ClipByValue", "CPU", T=_NON_QUANTIZED_NUMBERS)
class ClipByValueOp(OpKernel):
    """max(min(t, clip_value_max), clip_value_min); each bound a scalar or t's shape."""

    expensive = None
    pool_above = BIG
    compilable = True

    def compute(self, ctx, inputs):
        t, lo, hi = (np.asarray(v) for v in inputs)
        for bound in (lo, hi):
            if bound.ndim != 0 and bound.shape != t.shape:
                raise _invalid(
                    "clip_value_min and clip_value_max must be either of the same shape as "
                    f"input, or a scalar. input shape: {shape_str(t.shape)}clip_value_min "
                    f"shape: {shape_str(lo.shape)}clip_value_max shape: {shape_str(hi.shape)}")
        if t.dtype.kind == "c":
            # Eigen orders complex values by their real part.
            upper = np.where(hi.real < t.real, hi, t)
            return (np.where(upper.real < lo.real, lo, upper).astype(t.dtype),)
        upper = np.where(hi < t, hi, t)
        return (np.where(upper < lo, lo, upper).astype(t.dtype, copy=False),)


# -- TensorScatter* ------------------------------------------------------------------------

class _TensorScatterBase(OpKernel):
    """A copy of `tensor` with the update slices applied at N-d indices, in index order."""

    expensive = None
    mode = "update"
    nonaliasing = False

    def __init__(self, ctx):
        super().__init__(ctx)
        self._ignore_bad = _policy(ctx) == "IGNORE"

    def is_expensive(self, inputs: list) -> bool:
        return inputs[0].size > OUTPUT_POOL_ABOVE or inputs[2].size > BIG

    def compute(self, ctx, inputs):
        tensor, indices, updates = (np.asarray(v) for v in inputs)
        if self.nonaliasing:
            dims = list(tensor.shape)
            _check_scatter_output(indices, updates, dims)
            _check_update_shape(indices, updates, dims)
        else:
            self._check(tensor, indices, updates)
        out = tensor.copy()
        if indices.size == 0 or out.size == 0:
            return (out,)
        depth = indices.shape[-1] if indices.ndim > 1 else 1
        flat = indices.reshape(-1, depth).astype(np.int64, copy=False)
        slices = updates.reshape((flat.shape[0],) + out.shape[depth:])
        bad = _bad_rows(flat, out.shape[:depth])
        if bad.any():
            if not self._ignore_bad:
                raise _out_of_range(flat, bad, indices.shape[:-1],
                                    f"does not index into shape {shape_str(out.shape)}")
            flat, slices = flat[~bad], slices[~bad]
        self._apply(out, tuple(flat.T), slices)
        return (out,)

    def _check(self, tensor, indices, updates) -> None:
        """TF's TensorScatterOp checks, in its order."""
        if indices.ndim < 1:
            raise _invalid("Indices shape must have rank at least one. Found:"
                           f"{shape_str(indices.shape)}")
        if updates.ndim < 1:
            raise _invalid("Updates shape must have rank at least one. Found:"
                           f"{shape_str(updates.shape)}")
        if not _valid_empty(tensor.size, indices.size, updates.size):
            raise _invalid("Indices and updates specified for empty output shape")
        outer = indices.ndim - 1
        for i in range(outer):
            if i >= updates.ndim or indices.shape[i] != updates.shape[i]:
                raise _invalid(
                    "Outer dimensions of indices and update must match. Indices shape: "
                    f"{shape_str(indices.shape)}, updates shape:{shape_str(updates.shape)}")
        ix = indices.shape[outer]
        if updates.ndim - outer != tensor.ndim - ix:
            raise _invalid(
                "Inner dimensions of output shape must match inner dimensions of updates "
                f"shape. Output: {shape_str(tensor.shape)} updates: "
                f"{shape_str(updates.shape)}")
        for i in range(updates.ndim - outer):
            if updates.shape[i + outer] != tensor.shape[ix + i]:
                raise _invalid(
                    f"The inner {tensor.ndim - ix} dimensions of output.shape="
                    f"{shape_str(tensor.shape)} must match the inner {updates.ndim - outer} "
                    f"dimensions of updates.shape={shape_str(updates.shape)}")

    def _apply(self, out, index, slices) -> None:
        mode = self.mode
        if mode == "update":
            out[index] = slices  # repeated indices: the last one wins
        elif mode == "add":
            if out.dtype == np.bool_:
                np.logical_or.at(out, index, slices)
            else:
                np.add.at(out, index, slices)
        elif mode == "sub":
            np.subtract.at(out, index, slices)
        else:
            was_nan = np.isnan(out) if out.dtype.kind in "fc" else None
            ufunc = np.fmax if mode == "max" else np.fmin
            if out.dtype.kind not in "fc":
                ufunc = np.maximum if mode == "max" else np.minimum
            ufunc.at(out, index, slices)
            if was_nan is not None and was_nan.any():
                out[was_nan] = np.nan


def _check_update_shape(indices, updates, dims) -> None:
    """ScatterNdNonAliasingAdd's update-shape check: ScatterNd's, except that TF's message
    starts the updates' range at the index depth."""
    try:
        _check_scatter_shapes(indices, updates, dims)
    except errors.InvalidArgumentError as e:
        ix = indices.shape[-1] if indices.ndim > 1 else 1
        if e.message.startswith(f"Dimensions [{ix},"):
            raise _invalid(
                f"Dimensions [{ix},{len(dims)}) of input[shape={shape_str(dims)}] must match "
                f"dimensions [{ix},{updates.ndim}) of updates[shape="
                f"{shape_str(updates.shape)}]") from None
        raise


def _register_scatter(op_type: str, mode: str, indices=_INDEX, nonaliasing: bool = False,
                      **constraints):
    cls = type(op_type + "Op", (_TensorScatterBase,), {
        "mode": mode, "nonaliasing": nonaliasing, "__doc__": f"CPU kernel for {op_type}."})
    register_kernel(op_type, "CPU", Tindices=indices, **constraints)(cls)


_SCATTER_TYPES = _NON_QUANTIZED_NUMBERS + [dtypes.bool, dtypes.string]
_register_scatter("TensorScatterUpdate", "update", T=_SCATTER_TYPES)
_register_scatter("TensorScatterAdd", "add", T=_NON_QUANTIZED_NUMBERS)
_register_scatter("TensorScatterSub", "sub", T=_NON_QUANTIZED_NUMBERS)
_register_scatter("TensorScatterMax", "max",
                  T=[t for t in _NON_QUANTIZED_NUMBERS if not t.is_complex])
_register_scatter("TensorScatterMin", "min",
                  T=[t for t in _NON_QUANTIZED_NUMBERS if not t.is_complex])
_register_scatter("ScatterNdNonAliasingAdd", "add", nonaliasing=True,
                  T=_NON_QUANTIZED_NUMBERS + [dtypes.bool])
