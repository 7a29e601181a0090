"""CPU kernels (NumPy) for GatherNd and ScatterNd: slices read from, or summed into, a tensor
at N-d indices.

Checks run in TF's order with TF's messages. An index out of range is an error (the last bad
one is named, as TF's CPU kernels name it) unless bad_indices_policy is "IGNORE": then
GatherNd gives zeros for it and ScatterNd skips it. ScatterNd sums duplicate indices in index
order (bool: logical or; string: concatenation), as TF's CPU kernel does.
"""

from __future__ import annotations

import math

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.array.array_kernels import _fill_value, _invalid
from aioflow.kernels.math.cwise_kernels import _NON_QUANTIZED_NUMBERS, BIG, shape_str

_POLICIES = ("", "DEFAULT", "ERROR", "IGNORE")
_ND_CASES = range(1, 8)  # index depths TF's kernels are compiled for


def _policy(ctx) -> str:
    """The bad_indices_policy attr as a str ("" when absent)."""
    value = ctx.get_attr("bad_indices_policy", b"")
    return value.decode(errors="backslashreplace") if isinstance(value, bytes) else value


def _slice_debug(batch_shape: tuple, flat: int) -> str:
    """TF's SliceDebugString: the multi-index of flat position `flat` in `batch_shape`."""
    if not batch_shape:
        return ""
    return "[" + ",".join(str(int(i)) for i in np.unravel_index(flat, batch_shape)) + "]"


def _bad_rows(flat_indices: np.ndarray, limits) -> np.ndarray:
    """Per row of [n, depth] indices: whether some coordinate is outside [0, limit)."""
    limits = np.asarray(limits, dtype=np.int64)
    return ((flat_indices < 0) | (flat_indices >= limits)).any(axis=1)


def _out_of_range(indices, bad, batch_shape, tail: str) -> errors.InvalidArgumentError:
    """TF's error naming the last bad index: "indices[i,j] = [a, b] <tail>"."""
    last = int(np.flatnonzero(bad)[-1])
    coords = ", ".join(str(int(v)) for v in indices[last])
    return _invalid(f"indices{_slice_debug(batch_shape, last)} = [{coords}] {tail}")


class _NdKernel(OpKernel):
    """Shared by GatherNd/ScatterNd: the bad_indices_policy attr; the thread pool takes
    calls that move many elements (`is_expensive`)."""

    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self._ignore_bad = _policy(ctx) == "IGNORE"


@register_kernel("GatherNd", "CPU")
class GatherNdOp(_NdKernel):
    """output[i..] = params[indices[i..]]: slices of params at N-d indices."""

    def __init__(self, ctx):
        policy = _policy(ctx)
        if policy not in _POLICIES:
            raise errors.NotFoundError(
                None, None,
                f"No registered 'GatherNd' OpKernel for 'CPU' devices compatible with node "
                f"{{{{node {ctx.name}}}}}\n\t. Registered: bad_indices_policy in "
                '["", "DEFAULT", "ERROR", "IGNORE"]')
        super().__init__(ctx)

    def is_expensive(self, inputs: list) -> bool:
        """Many indices, or a large output: indices.size / depth slices of params."""
        params, indices = inputs
        if indices.size > BIG:
            return True
        depth = indices.shape[-1] if indices.ndim else 0
        if not depth or depth > params.ndim:
            return False
        rows = indices.size // depth
        return rows * (params.size // max(1, math.prod(params.shape[:depth]))) > BIG

    def compute(self, ctx, inputs):
        params, indices = np.asarray(inputs[0]), np.asarray(inputs[1])
        self._check(params, indices)
        depth = indices.shape[-1]
        batch_shape = indices.shape[:-1]
        out_shape = batch_shape + params.shape[depth:]
        n = int(np.prod(batch_shape, dtype=np.int64))
        if n == 0:
            return (np.empty(out_shape, dtype=params.dtype),)
        if params.size == 0:
            raise _invalid("Requested more than 0 entries, but params is empty.  Params "
                           f"shape: {shape_str(params.shape)}")
        if depth not in _ND_CASES and depth != 0:
            raise _invalid("Only indices.shape[-1] values between 1 and 7 are currently "
                           f"supported.  Requested rank: {depth}")
        return (self._gather(params, indices.reshape(n, depth), batch_shape, out_shape),)

    def _check(self, params, indices) -> None:
        """TF's checks on the ranks of params and indices."""
        if params.ndim < 1:
            raise _invalid("params must be at least a vector")
        if indices.ndim < 1:
            raise _invalid("indices must be at least a vector")
        if indices.shape[-1] > params.ndim:
            raise _invalid("index innermost dimension length must be <= params rank; saw: "
                           f"{indices.shape[-1]} vs. {params.ndim}")

    def _gather(self, params, flat, batch_shape, out_shape):
        """The gathered slices; TF's error (or zeros, under IGNORE) for bad indices."""
        flat = flat.astype(np.int64, copy=False)
        bad = _bad_rows(flat, params.shape[:flat.shape[1]])
        if bad.any():
            if not self._ignore_bad:
                raise _out_of_range(
                    flat, bad, batch_shape,
                    f"does not index into param shape {shape_str(params.shape)}, node name: "
                    f"{self.name}")
            flat = np.where(bad[:, None], 0, flat)
        out = params[tuple(flat.T)] if flat.shape[1] else np.repeat(
            params[np.newaxis], flat.shape[0], axis=0)
        if bad.any():
            out[bad] = _fill_value(params.dtype)
        return out.reshape(out_shape)


@register_kernel("ScatterNd", "CPU", T=_NON_QUANTIZED_NUMBERS + [dtypes.string, dtypes.bool],
                 Tindices=[dtypes.int32, dtypes.int64])
class ScatterNdOp(_NdKernel):
    """A zero tensor of `shape` with the slices of `updates` summed in at N-d `indices`."""

    def __init__(self, ctx):
        policy = _policy(ctx)
        if policy not in _POLICIES:
            raise _invalid(f"Unknown bad indices handling attribute: {policy}")
        super().__init__(ctx)

    def is_expensive(self, inputs: list) -> bool:
        """Many updates, or a large output to fill."""
        if inputs[1].size > BIG:
            return True
        return np.ndim(inputs[2]) == 1 and int(np.prod(inputs[2], dtype=np.int64)) > BIG

    def compute(self, ctx, inputs):
        indices, updates, shape_t = (np.asarray(v) for v in inputs)
        dims = self._output_dims(indices, updates, shape_t)
        _check_scatter_shapes(indices, updates, dims)
        if shape_t.ndim != 1:
            raise _invalid("Shape must be a vector")
        _check_scatter_output(indices, updates, dims)
        out = np.full(dims, _fill_value(updates.dtype), dtype=updates.dtype)
        if out.size == 0:
            return (out,)
        depth = indices.shape[-1] if indices.ndim > 1 else 1
        if depth not in _ND_CASES:
            raise _invalid("Only indices.shape[-1] values between 1 and 5 are currently "
                           f"supported.  Requested rank: {depth}")
        self._scatter(out, indices.reshape(-1, depth), updates, indices.shape[:-1])
        return (out,)

    def _output_dims(self, indices, updates, shape_t) -> list[int]:
        """The output shape from the `shape` input, after TF's first checks."""
        for name, v in (("Indices", indices), ("Updates", updates)):
            if v.ndim < 1:
                raise _invalid(f"{name} shape must have rank at least one. Found:"
                               f"{shape_str(v.shape)}")
        dims = [int(d) for d in shape_t.ravel()]
        for d in dims:
            if d < 0:
                raise _invalid(f"Dimension {d} must be >= 0")
        if not _valid_empty(shape_t.size, indices.size, updates.size):
            raise _invalid("Indices and updates specified for empty output shape")
        return dims

    def _scatter(self, out, flat, updates, batch_shape) -> None:
        """Sum the update slices into `out`; TF's error (or a skip, under IGNORE) for bad
        indices."""
        flat = flat.astype(np.int64, copy=False)
        depth = flat.shape[1]
        slices = updates.reshape((flat.shape[0],) + out.shape[depth:])
        bad = _bad_rows(flat, out.shape[:depth])
        if bad.any():
            if not self._ignore_bad:
                raise _out_of_range(flat, bad, batch_shape,
                                    f"does not index into shape {shape_str(out.shape)}")
            flat, slices = flat[~bad], slices[~bad]
        np.add.at(out, tuple(flat.T), slices)


def _valid_empty(num_shape: int, num_indices: int, num_updates: int) -> bool:
    """TF's ValidEmptyOutputShape: indices and updates are both empty, or nothing is."""
    if num_indices == 0 and num_updates == 0:
        return True
    return num_shape != 0 and num_indices != 0 and num_updates != 0


def _check_scatter_shapes(indices, updates, dims) -> None:
    """updates.shape must be indices.shape[:-1] + dims[indices.shape[-1]:] (TF's messages)."""
    outer = indices.ndim - 1
    for i in range(outer):
        if i >= updates.ndim or indices.shape[i] != updates.shape[i]:
            raise _invalid(
                f"Dimensions [0,{outer}) of indices[shape={shape_str(indices.shape)}] must "
                f"match dimensions [0,{outer}) of updates[shape={shape_str(updates.shape)}]")
    ix = indices.shape[outer]
    suffix = updates.shape[outer:]
    if len(suffix) != len(dims) - ix or list(suffix) != dims[ix:]:
        raise _invalid(
            f"Dimensions [{ix},{len(dims)}) of input[shape={shape_str(dims)}] must match "
            f"dimensions [{outer},{updates.ndim}) of updates[shape={shape_str(updates.shape)}]")


def _check_scatter_output(indices, updates, dims) -> None:
    """TF's PrepareAndValidateInputs: the output is at least 1-D, empty only when there is
    nothing to scatter, and updates and indices agree on their first dimension."""
    if not dims:
        raise _invalid("Output must be at least 1-D, got shape: []")
    if not _valid_empty(int(np.prod(dims, dtype=np.int64)), indices.size, updates.size):
        raise _invalid("Indices and updates specified for empty output.  indices shape: "
                       f"{shape_str(indices.shape)}")
    # A scalar has no dimension 0: TF reads an undefined size there (its message prints a
    # garbage number); by choice aioflow says "none".
    first_indices = indices.shape[0] if indices.ndim else "none"
    first_updates = updates.shape[0] if updates.ndim else "none"
    if not indices.ndim or not updates.ndim or first_updates != first_indices:
        raise _invalid(
            f"Dimensions [0,1) of indices[shape={shape_str(indices.shape)}] = "
            f"{first_indices} must match dimensions [0,1) of updates[shape="
            f"{shape_str(updates.shape)}] = {first_updates}")
