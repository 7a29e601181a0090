"""CPU kernels (NumPy) for TensorScatterUpdate/Add/Sub/Max/Min and ScatterNdNonAliasingAdd,
with TF 2.21's checks and messages: a copy of `tensor` with the slices at N-d `indices`
replaced, added, subtracted, maxed or mined, in index order; an index out of range is TF's
error naming it (skipped under bad_indices_policy "IGNORE"). Max/Min keep the tensor's value
when the update is NaN."""

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
