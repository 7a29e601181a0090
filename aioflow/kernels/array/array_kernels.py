"""CPU kernels (NumPy) for the array ops: constants, placeholders, identities, shapes,
reshaping, joining and splitting, slicing, gathering, reversing, padding, Select and Range.

Kernels that only re-view their input (Identity, Reshape, Transpose, slices, splits)
return NumPy views and are cheap; kernels that copy data go to the thread pool when
their input is large, and kernels whose output is not bounded by their input (Fill,
Range, Tile, Pad, BroadcastTo, OneHot, gathers) when the output they will produce is
large, sized from their shape inputs before computing. Errors carry TF's messages.
"""

from __future__ import annotations

import math

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.common_shapes import canonical_axes, strided_slice_spec
from aioflow.framework.op_kernel import OpKernel, attr_text, oom_error, register_kernel
from aioflow.kernels.array.pad_fill import pad_constant
from aioflow.kernels.math.cwise_kernels import (
    BIG,
    incompatible_shapes,
    number_str,
    shape_str,
    tf_type_name,
)


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _scalar_int(value, what: str) -> int:
    """A one-element tensor's value (TF's kernels take a 1-element vector for a scalar)."""
    if np.size(value) != 1:
        raise _invalid(f"{what} must be a scalar, not {shape_str(np.shape(value))}")
    return int(np.ravel(value)[0])


def _rank0_int(value, message: str) -> int:
    """A 0-d tensor's value; TF's `message` (given the shape) when it has another rank."""
    if np.ndim(value) != 0:
        raise _invalid(message.format(shape=shape_str(np.shape(value)), rank=np.ndim(value)))
    return int(value)


def _fill_value(dtype) -> object:
    """The zero of a dtype (b"" for strings)."""
    return b"" if dtype == np.object_ else np.zeros((), dtype)[()]


#: Kernels that write their output at memset speed (Fill, Tile, Pad, BroadcastTo, ...) go
#: to the thread pool above this many output elements: 2**18 float32 take 25-45 us to
#: write, about one pool round trip, so below it running inline is cheaper.
OUTPUT_POOL_ABOVE = 1 << 18


def num_elements(dims) -> int:
    """The product of a shape vector's entries, cheaply (is_expensive asks it per call);
    0 when `dims` is not a vector: compute then raises TF's error, inline."""
    if getattr(dims, "ndim", None) != 1:
        return 0
    n = 1
    for d in dims.tolist():
        n *= d
    return n


def _padded_size(shape, paddings) -> int:
    """The number of elements `shape` padded by `paddings` ([[before, after], ...]) has;
    0 when paddings do not fit (compute raises TF's error, inline)."""
    try:
        n = 1
        for d, (before, after) in zip(shape, paddings.tolist(), strict=True):
            n *= d + before + after
        return n
    except (AttributeError, TypeError, ValueError):
        return 0


class _Copying(OpKernel):
    """A kernel that copies its first input's data: the thread pool takes large ones."""

    expensive = None

    def is_expensive(self, inputs: list) -> bool:
        return inputs[0].size > BIG


# -- constants, placeholders, identities -----------------------------------------------------

@register_kernel("Const", "CPU")
class ConstOp(OpKernel):
    """The `value` attr, made once and read-only (the same array every run)."""

    compilable = True
    is_constant = True

    def __init__(self, ctx):
        super().__init__(ctx)
        value = np.asarray(self._make_value(ctx))
        dtype = ctx.get_attr("dtype", None)
        if dtype is not None and value.dtype != np.dtype(dtype.as_numpy_dtype):
            raise _invalid(
                f"Type mismatch between value ({value.dtype}) and dtype ({dtype.name})")
        value.setflags(write=False)
        # 0-d tensors travel as NumPy scalars: arithmetic on them is ~8x cheaper.
        if value.ndim == 0 and value.dtype != object:
            value = value[()]
        self._value = (value,)

    @staticmethod
    def _make_value(ctx):
        """The `value` attr as an array; as TF's kernel, InvalidArgumentError "Cannot parse
        tensor from proto" when it cannot be built (a bad encoding, an unknown dtype, more
        than memory holds), never a raw MemoryError."""
        try:
            return ctx.get_attr("value")
        except (ValueError, TypeError, MemoryError, errors.ResourceExhaustedError):
            from google.protobuf import text_format

            proto = ctx.node_def.attr["value"].tensor
            head = type(proto)(dtype=proto.dtype, tensor_shape=proto.tensor_shape)
            text = text_format.MessageToString(head, as_one_line=True)
            raise _invalid(f"Cannot parse tensor from proto: {text}") from None

    def compute(self, ctx, inputs):
        return self._value


@register_kernel("Placeholder", "CPU")
class PlaceholderOp(OpKernel):
    """Fails: a placeholder must be fed."""

    def __init__(self, ctx):
        super().__init__(ctx)
        dtype = ctx.get_attr("dtype")
        shape = ctx.get_attr("shape", None)
        msg = (f"You must feed a value for placeholder tensor '{ctx.name}' with dtype "
               f"{tf_type_name(dtype.base_dtype)}")
        if shape is not None and shape.rank is not None:
            msg += " and shape [" + ",".join(
                "?" if d is None else str(d) for d in shape.as_list()) + "]"
        self._message = msg

    def compute(self, ctx, inputs):
        raise _invalid(self._message)


class _Forward(OpKernel):
    """Returns its input itself (no copy)."""

    forwards_input = True
    compilable = True

    def compute(self, ctx, inputs):
        return (inputs[0],)


for _op in ("Identity", "Snapshot", "StopGradient", "PreventGradient",
            "PlaceholderWithDefault"):
    register_kernel(_op, "CPU")(type(_op + "Op", (_Forward,), {"__doc__": f"{_op}: x -> x."}))


@register_kernel("IdentityN", "CPU")
class IdentityNOp(OpKernel):
    """Returns its inputs themselves."""

    compilable = True  # pure (an inlined function's results: part of compiled loops)

    def compute(self, ctx, inputs):
        return inputs


@register_kernel("NoOp", "CPU")
class NoOpOp(OpKernel):
    """Does nothing; a control anchor."""

    compilable = True

    def compute(self, ctx, inputs):
        return ()


# -- shapes ----------------------------------------------------------------------------------

class _OutType(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self._out = ctx.get_attr("out_type", dtypes.int32).as_numpy_dtype


@register_kernel("Shape", "CPU", host_memory=("output",))  # (as TF's)
class ShapeOp(_OutType):
    """The input's shape as a vector of out_type."""

    compilable = True  # pure

    def compute(self, ctx, inputs):
        return (np.array(np.shape(inputs[0]), dtype=self._out),)


@register_kernel("ShapeN", "CPU", host_memory=("output",))  # (as TF's)
class ShapeNOp(_OutType):
    """Each input's shape."""

    compilable = True  # pure

    def compute(self, ctx, inputs):
        out = self._out
        return [np.array(np.shape(x), dtype=out) for x in inputs]


@register_kernel("Size", "CPU", host_memory=("output",))  # (as TF's)
class SizeOp(_OutType):
    """The number of elements, as out_type."""

    compilable = True  # pure

    def compute(self, ctx, inputs):
        return (self._out(np.size(inputs[0])),)


@register_kernel("Rank", "CPU", host_memory=("output",))  # (as TF's)
class RankOp(OpKernel):
    """The number of dimensions, as int32."""

    compilable = True  # pure

    def compute(self, ctx, inputs):
        return (np.int32(np.ndim(inputs[0])),)


# -- reshaping -------------------------------------------------------------------------------

def reshape_target(sizes: list[int], num_elements: int, in_shape) -> tuple[int, ...]:
    """TF's Reshape rules: at most one -1, inferred; zero sizes left out of the product so
    other dims can still be inferred; TF's messages when sizes do not fit."""
    shape, product, unknown, has_zero = [], 1, -1, False
    for d, size in enumerate(sizes):
        if size == -1:
            if unknown != -1:
                raise _invalid(f"Only one input size may be -1, not both {unknown} and {d}")
            unknown = d
            shape.append(1)
        elif size < 0:
            raise _invalid(f"Size {d} must be non-negative, not {size}")
        else:
            if size == 0:
                has_zero = True
            else:
                product *= size
            shape.append(size)
    if unknown != -1:
        known_in, in_has_zero = 1, False
        for d in in_shape:
            if d > 0 or not has_zero:
                known_in *= d
            else:
                in_has_zero = True
        missing = known_in // product if product else 0
        if not in_has_zero and product * missing != known_in:
            raise _invalid(
                f"Input to reshape is a tensor with {known_in} values, but the requested shape "
                f"requires a multiple of {product}")
        shape[unknown] = missing
    total = 1
    for s in shape:
        total *= s
    if total != num_elements:
        raise _invalid(
            f"Input to reshape is a tensor with {num_elements} values, but the requested shape "
            f"has {total}")
    return tuple(shape)


@register_kernel("Reshape", "CPU")
class ReshapeOp(OpKernel):
    """The input with a new shape (a view when possible)."""

    compilable = True  # pure

    def compute(self, ctx, inputs):
        x, sizes = inputs
        if np.ndim(sizes) > 1:  # a scalar is one size, as in TF
            raise _invalid(f"sizes input must be 1-D, not {shape_str(np.shape(sizes))}")
        target = reshape_target(np.ravel(sizes).tolist(), np.size(x), np.shape(x))
        return (np.reshape(x, target),)


@register_kernel("Transpose", "CPU")
class TransposeOp(OpKernel):
    """The input with its dimensions permuted (a view)."""

    compilable = True  # pure

    def compute(self, ctx, inputs):
        x, perm = inputs
        ndim = np.ndim(x)
        if np.ndim(perm) != 1:
            raise _invalid(f"perm must be rank 1, got shape {shape_str(np.shape(perm))}")
        if np.size(perm) != ndim:
            raise _invalid(
                f"transpose expects a vector of size {ndim}. But input(1) is a vector of size "
                f"{np.size(perm)}")
        axes = [p + ndim if p < 0 else p for p in perm.tolist()]
        for p in axes:
            if not 0 <= p < ndim:
                raise _invalid(f"{p} is out of range [0 .. {ndim})")
        if len(set(axes)) != ndim:
            missing = min(set(range(ndim)) - set(axes))
            raise _invalid(f"{missing} is missing from {{{','.join(map(str, axes))}}}.")
        return (np.transpose(x, axes),)


@register_kernel("ExpandDims", "CPU")
class ExpandDimsOp(OpKernel):
    """The input with a 1 inserted at `dim`."""

    compilable = True  # pure

    def compute(self, ctx, inputs):
        x, dim = inputs
        if np.size(dim) != 1:
            raise _invalid("'dim' must be a tensor with a single value")
        axis, ndim = int(np.ravel(dim)[0]), np.ndim(x)
        if not -1 - ndim <= axis <= ndim:
            raise _invalid(f"Tried to expand dim index {axis} for tensor with {ndim} dimensions.")
        return (np.expand_dims(x, axis),)


@register_kernel("Squeeze", "CPU")
class SqueezeOp(OpKernel):
    """The input without the listed size-1 dimensions (all of them if none are listed)."""

    compilable = True  # pure

    def __init__(self, ctx):
        super().__init__(ctx)
        self._dims = list(ctx.get_attr("squeeze_dims", []))

    def compute(self, ctx, inputs):
        x = inputs[0]
        shape, ndim = np.shape(x), np.ndim(x)
        if not self._dims:
            return (np.reshape(x, [d for d in shape if d != 1]),)
        axes = set()
        for a in self._dims:
            if not -ndim <= a < ndim:
                raise _invalid(f"Tried to squeeze dim index {a} for tensor with {ndim} dimensions.")
            a = a + ndim if a < 0 else a
            if shape[a] != 1:
                raise _invalid(
                    f"Can not squeeze dim[{a}], expected a dimension of 1, got {shape[a]}")
            axes.add(a)
        return (np.reshape(x, [d for i, d in enumerate(shape) if i not in axes]),)


# -- filling ---------------------------------------------------------------------------------

def _dims_vector(dims, message: str = "dims must represent a vector, got shape {}",
                 scalar_ok: bool = False) -> list[int]:
    """A shape vector's entries (TF's MakeShape): `message` for another rank (a scalar is
    one dimension where `scalar_ok`), TF's error for a negative size."""
    if not (np.ndim(dims) == 1 or scalar_ok and np.ndim(dims) == 0):
        raise _invalid(message.format(shape_str(np.shape(dims))))
    out = np.ravel(dims).tolist()
    for d in out:
        if d < 0:
            raise _invalid(f"Dimension {d} must be >= 0")
    return out


@register_kernel("Fill", "CPU")
class FillOp(OpKernel):
    """A tensor of shape `dims` filled with the scalar `value`."""

    compilable = True  # pure

    expensive = None

    def is_expensive(self, inputs: list) -> bool:
        dims = inputs[0]
        return num_elements(dims.reshape(-1) if dims.ndim == 0 else dims) > OUTPUT_POOL_ABOVE

    def compute(self, ctx, inputs):
        dims, value = inputs
        shape = _dims_vector(dims, scalar_ok=True)
        if np.ndim(value) > 1 or np.size(value) != 1:
            raise _invalid(
                f"value must represent a scalar, got shape {shape_str(np.shape(value))}")
        value = np.asarray(value)
        try:  # (np.full, not calloc's zeros: a -0.0 fill stays -0.0)
            return (np.full(shape, value.reshape(()), dtype=value.dtype),)
        except (MemoryError, ValueError):  # past memory or NumPy's reach: TF's OOM
            raise oom_error(shape, value.dtype) from None


class _LikeInput(OpKernel):
    """A kernel whose output is its input's size: the executor sends it to the pool by
    that size, without a call."""

    compilable = True  # pure

    expensive = None
    pool_above = OUTPUT_POOL_ABOVE


@register_kernel("ZerosLike", "CPU")
class ZerosLikeOp(_LikeInput):
    """Zeros (empty strings) shaped like the input."""

    def compute(self, ctx, inputs):
        x = np.asarray(inputs[0])
        if x.dtype == object:
            if x.size and hasattr(x.flat[0], "zeros_like"):  # a variant (TensorList)
                out = np.empty(x.shape, dtype=object)
                for i, v in enumerate(x.flat):
                    out.flat[i] = v.zeros_like()
                return (out,)
            return (np.full(x.shape, b"", dtype=object),)
        return (np.zeros(x.shape, dtype=x.dtype),)


@register_kernel("OnesLike", "CPU")
class OnesLikeOp(_LikeInput):
    """Ones shaped like the input."""

    def compute(self, ctx, inputs):
        return (np.ones_like(inputs[0]),)


@register_kernel("BroadcastTo", "CPU")
class BroadcastToOp(OpKernel):
    """The input broadcast to `shape`, materialized as TF's is (a NumPy broadcast view
    would be copied again, on the loop, by whatever needs a writable array: a fetch)."""

    compilable = True  # pure

    expensive = None

    def is_expensive(self, inputs: list) -> bool:
        return num_elements(inputs[1]) > OUTPUT_POOL_ABOVE

    def compute(self, ctx, inputs):
        x, shape = inputs
        target = _dims_vector(shape, "shape must be a vector of {{int32,int64}}, got shape {}")
        in_shape = np.shape(x)
        if len(in_shape) > len(target):
            raise _invalid(
                f"Rank of input ({len(in_shape)}) must be no greater than rank of output shape "
                f"({len(target)}).")
        try:
            out_shape = np.broadcast_shapes(in_shape, tuple(target))
        except ValueError:
            raise _invalid(
                f"Incompatible shapes: {shape_str(in_shape)} vs. {shape_str(target)}") from None
        if list(out_shape) != target:
            raise _invalid(f"Unable to broadcast tensor of shape {shape_str(in_shape)} to tensor "
                           f"of shape {shape_str(target)}")
        if out_shape == in_shape:
            return (x,)
        try:
            return (np.array(np.broadcast_to(x, target), order="C"),)
        except (MemoryError, ValueError):  # ValueError: "array is too big" for NumPy
            raise oom_error(target, np.asarray(x).dtype) from None


@register_kernel("Range", "CPU",
                 Tidx=[dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64,
                       dtypes.int32, dtypes.int64])
class RangeOp(OpKernel):
    """start, start + delta, ... up to (not including) limit."""

    compilable = True  # pure

    def __init__(self, ctx):
        super().__init__(ctx)
        dtype = ctx.get_attr("Tidx", dtypes.int32)
        self._np_type = dtype.as_numpy_dtype
        self._int = np.dtype(self._np_type).kind in "iu"

    expensive = None

    def is_expensive(self, inputs: list) -> bool:
        """Whether the output (|limit - start| / |delta| elements) is large; float ranges
        cost a multiply-add per element, so they go to the pool sooner."""
        start, limit, delta = inputs
        try:
            if start.ndim or limit.ndim or delta.ndim:  # legacy 1-element vectors: inline
                return False
            size = abs((float(limit) - float(start)) / float(delta))
        except (AttributeError, TypeError, ValueError, ZeroDivisionError, OverflowError):
            return False
        return (OUTPUT_POOL_ABOVE if self._int else BIG) < size < math.inf

    def compute(self, ctx, inputs):
        for name, v in zip(("start", "limit", "delta"), inputs, strict=True):
            if np.ndim(v) > 1 or np.size(v) != 1:
                raise _invalid(f"{name} must be a scalar, not shape {shape_str(np.shape(v))}")
        start, limit, delta = (np.ravel(v)[0] for v in inputs)
        size = self._size(start, limit, delta)
        if self._int:
            return (np.arange(start, limit, delta, dtype=self._np_type),)
        # TF computes start + i * delta in T.
        return (np.arange(size).astype(self._np_type) * delta + start,)

    def _size(self, start, limit, delta) -> int:
        """The output's length, after TF's checks in TF's order (NaN fails the comparisons
        as it does in C++)."""
        if delta == 0:
            raise _invalid(f"Requires delta != 0: {number_str(delta)}")
        if delta > 0 and not start <= limit:
            raise _invalid("Requires start <= limit when delta > 0: "
                           f"{number_str(start)}/{number_str(limit)}")
        if not delta > 0 and not start >= limit:
            raise _invalid("Requires start >= limit when delta < 0: "
                           f"{number_str(start)}/{number_str(limit)}")
        if self._int:
            return -(-abs(int(limit) - int(start)) // abs(int(delta)))
        with np.errstate(all="ignore"):  # computed in T, as TF does
            size = float(np.ceil(np.abs((limit - start) / delta)))
        if not size <= float(_INT64_MAX):  # NaN and inf fail it too
            raise _invalid(f"Requires ((limit - start) / delta) <= {_INT64_MAX}")
        return int(size)


_INT64_MAX = 2**63 - 1


# -- joining and splitting -------------------------------------------------------------------

#: Elements a Concat joins from which it goes to the pool whatever else the loop has to do
#: (a copy of ~0.3-1 ms; the convolutions hold the loop as long: onednn/backend.py).
CONCAT_INLINE = 1 << 20


class _ConcatBase(_Copying):
    """ConcatV2 / Concat: TF's checks, NumPy's concatenate.

    Where it runs: above CONCAT_INLINE elements on the pool; above BIG on the pool only
    when the loop has other work (`worth_a_thread`: other runs wait, or another branch
    of the run is ready), else inline: an Inception block's Concat (0.3M elements, ~0.1
    ms) is the one ready node when its last branch ends, and a round trip through a pool
    thread cost it 0.15-0.25 ms more than the copy itself."""

    axis_first = False
    compilable = True  # pure (an LSTM cell's input and its gradient: compiled loops)
    learns_cost = False  # a copy: its size is its cost (a learned rate would send every
    #                      call above ~0.1 ms to the pool, the lone ones too)

    def _joined(self, inputs: list) -> int:
        values = inputs[1:] if self.axis_first else inputs[:-1]
        return sum(v.size for v in values)

    def is_expensive(self, inputs: list) -> bool:
        return self._joined(inputs) > CONCAT_INLINE

    def worth_a_thread(self, inputs: list) -> bool:
        return self._joined(inputs) > BIG

    def compute(self, ctx, inputs):
        if self.axis_first:
            axis_t, values = inputs[0], inputs[1:]
        else:
            axis_t, values = inputs[-1], inputs[:-1]
        if np.ndim(axis_t) > 1 or np.size(axis_t) != 1:
            raise _invalid("axis tensor should be a scalar integer, but got shape "
                           f"{shape_str(np.shape(axis_t))}")
        axis = int(np.ravel(axis_t)[0])
        first = values[0]
        ndim = np.ndim(first)
        if not (-ndim <= axis < ndim or axis == 0):  # axis 0 of scalars: the error below
            raise _invalid(
                f"ConcatOp : Expected concatenating dimensions in the range [{-ndim}, {ndim}), "
                f"but got {axis}")
        if ndim and all(np.ndim(v) == ndim for v in values):
            try:
                return (np.concatenate(values, axis=axis),)
            except ValueError:
                pass
        a = axis + ndim if axis < 0 else axis
        shape0 = np.shape(first)
        for i, v in enumerate(values):
            shape = np.shape(v)
            if not shape:
                raise _invalid("ConcatOp : Can't concatenate scalars (use tf.stack instead)")
            if len(shape) != ndim:
                raise _invalid(
                    f"ConcatOp : Ranks of all input tensors should match: shape[0] = "
                    f"{shape_str(shape0)} vs. shape[{i}] = {shape_str(shape)}") from None
            for d in range(ndim):
                if d != a and shape[d] != shape0[d]:
                    raise _invalid(
                        f"ConcatOp : Dimension {d} in both shapes must be equal: shape[0] = "
                        f"{shape_str(shape0)} vs. shape[{i}] = {shape_str(shape)}") from None
        raise AssertionError("np.concatenate failed on matching shapes")

    def compiled_fn(self):
        """np.concatenate without compute's checks (any error: the segment runs compute,
        which raises TF's)."""
        concatenate = np.concatenate
        if self.axis_first:
            return lambda axis, *values: concatenate(values, axis=axis.item())
        return lambda *args: concatenate(args[:-1], axis=args[-1].item())


@register_kernel("ConcatV2", "CPU")
class ConcatV2Op(_ConcatBase):
    """values joined along `axis` (the last input)."""


@register_kernel("Concat", "CPU")
class ConcatOp(_ConcatBase):
    """values joined along `concat_dim` (the first input)."""

    axis_first = True


@register_kernel("Pack", "CPU")
class PackOp(_Copying):
    """The N same-shaped inputs stacked along a new `axis`."""

    def is_expensive(self, inputs: list) -> bool:
        return inputs[0].size * len(inputs) > BIG

    def __init__(self, ctx):
        super().__init__(ctx)
        self._axis = ctx.get_attr("axis", 0)

    def compute(self, ctx, inputs):
        shape0 = np.shape(inputs[0])
        ndim = len(shape0) + 1
        axis = self._axis
        if not -ndim <= axis < ndim:
            raise _invalid(f"axis = {axis} not in [{-ndim}, {ndim})")
        for i, v in enumerate(inputs[1:], 1):
            if np.shape(v) != shape0:
                raise _invalid(
                    f"Shapes of all inputs must match: values[0].shape = {shape_str(shape0)} != "
                    f"values[{i}].shape = {shape_str(np.shape(v))}")
        return (np.stack(inputs, axis=axis),)


@register_kernel("Unpack", "CPU")
class UnpackOp(OpKernel):
    """The input split into `num` views along `axis`, which is removed."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._num = ctx.get_attr("num")
        self._axis = ctx.get_attr("axis", 0)

    def compute(self, ctx, inputs):
        x = inputs[0]
        shape, ndim = np.shape(x), np.ndim(x)
        axis = self._axis
        if not -ndim <= axis < max(ndim, 1) or ndim == 0:
            raise _invalid(f"axis = {axis} not in [{-ndim}, {ndim})")
        a = axis + ndim if axis < 0 else axis
        if shape[a] != self._num:
            raise _invalid(
                f"Input shape axis {a} must equal {self._num}, got shape {shape_str(shape)}")
        if a:
            x = np.moveaxis(x, a, 0)
        return [x[i] for i in range(self._num)]


@register_kernel("Split", "CPU")
class SplitOp(OpKernel):
    """`value` split into num_split equal views along `split_dim`."""

    compilable = True  # pure, every output produced

    def __init__(self, ctx):
        super().__init__(ctx)
        self._num = ctx.get_attr("num_split")

    def compute(self, ctx, inputs):
        axis_t, x = inputs
        axis = _rank0_int(axis_t, "split_dim must be a scalar but has rank {rank}")
        ndim = np.ndim(x)
        if not -ndim <= axis < ndim:
            raise _invalid(
                f"-input rank(-{ndim}) <= split_dim < input rank ({ndim}), but got {axis}")
        a = axis + ndim if axis < 0 else axis
        size = np.shape(x)[a]
        if size % self._num:
            raise _invalid(
                "Number of ways to split should evenly divide the split dimension, but got "
                f"split_dim {a} (size = {size}) and num_split {self._num}")
        step = size // self._num  # views, as np.split's, without its generic path
        lead = (slice(None),) * a
        return [x[lead + (slice(k, k + step),)] for k in range(0, size, step)] if step \
            else np.split(x, self._num, axis=a)


@register_kernel("SplitV", "CPU")
class SplitVOp(OpKernel):
    """`value` split into views of the given sizes (one may be -1) along `split_dim`.

    With num_split=1 the checks are TF's kernel's: TF's default graph rewriting (grappler)
    replaces such a node by an Identity, so a TF session returns the input even for an
    out-of-range split_dim or a wrong size; aioflow keeps the kernel's errors."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._num = ctx.get_attr("num_split")

    def compute(self, ctx, inputs):
        x, sizes_t, axis_t = inputs
        if np.size(axis_t) != 1:
            raise _invalid("split_dim_tensor must have exactly one element.")
        axis, ndim = int(np.ravel(axis_t)[0]), np.ndim(x)
        if np.ndim(sizes_t) != 1 or np.size(sizes_t) != self._num:
            raise _invalid(
                "size of the split_tensor must be 1-D and have the same elements as outputs got "
                f"{np.ndim(sizes_t)} -D and {np.size(sizes_t)} elements")
        if not -ndim <= axis < ndim:
            raise _invalid(
                f"-input rank(-{ndim}) <= split_dim < input rank ({ndim}), but got {axis}")
        a = axis + ndim if axis < 0 else axis
        sizes = sizes_t.tolist()
        dim = np.shape(x)[a]
        if self._num == 1:
            if sizes[0] != dim:
                raise _invalid("If there is only one output, it must have the same size as the "
                               f"input. Input size: {dim} output size: {sizes[0]}")
            return [x]
        if sizes.count(-1) > 1:
            raise _invalid("There can only be one -1 in the input.")
        known = sum(s for s in sizes if s != -1)
        if -1 in sizes and known <= dim:
            sizes[sizes.index(-1)] = dim - known
        elif known != dim:
            raise _invalid(
                "Determined shape must either match input shape along split_dim exactly if "
                "fully specified, or be less than the size of the input along split_dim if not "
                f"fully specified.  Got: {known}")
        for i, size in enumerate(sizes):
            if size < 0:
                raise _invalid(f"Split size at index {i} must be >= 0. Got: {size}")
        return np.split(x, np.cumsum(sizes[:-1]).tolist(), axis=a)


@register_kernel("Tile", "CPU")
class TileOp(_Copying):
    """The input repeated `multiples[i]` times along each dimension i."""

    def is_expensive(self, inputs: list) -> bool:
        return inputs[0].size * num_elements(inputs[1]) > OUTPUT_POOL_ABOVE

    def compute(self, ctx, inputs):
        x, multiples = inputs
        ndim = np.ndim(x)
        if np.ndim(multiples) != 1:
            raise _invalid("Expected multiples to be 1-D, but got shape "
                           f"{shape_str(np.shape(multiples))}")
        if np.size(multiples) != ndim:
            raise _invalid(
                f"Expected multiples argument to be a vector of length {ndim} but got length "
                f"{np.size(multiples)}")
        reps = multiples.tolist()
        for i, m in enumerate(reps):
            if m < 0:
                raise _invalid(f"Expected multiples[{i}] >= 0, but got {m}")
        return (_tile(np.asarray(x), reps),)


def _tile(x, reps: list[int]):
    """np.tile by one broadcasting copy: np.tile's repeat holds the GIL for the whole
    copy (300 ms for 3e8 elements), which stalls the event loop even from the pool."""
    blocks = [n for pair in zip(reps, x.shape, strict=True) for n in pair]
    try:
        out = np.empty(blocks, dtype=x.dtype)
    except (MemoryError, ValueError):  # past memory or NumPy's reach: TF's OOM
        raise oom_error([m * d for m, d in zip(reps, x.shape, strict=True)], x.dtype) from None
    out[...] = x.reshape([n for d in x.shape for n in (1, d)])
    return out.reshape([m * d for m, d in zip(reps, x.shape, strict=True)])


class _PadBase(_Copying):
    def is_expensive(self, inputs: list) -> bool:
        return _padded_size(np.shape(inputs[0]), inputs[1]) > OUTPUT_POOL_ABOVE

    def pad(self, x, paddings, constant):
        x = np.asarray(x)
        ndim = x.ndim
        if np.ndim(paddings) != 2 or np.shape(paddings)[1] != 2:
            raise _invalid(
                f"paddings must be a matrix with 2 columns: {shape_str(np.shape(paddings))}")
        if np.shape(paddings)[0] != ndim:
            raise _invalid(
                "The first dimension of paddings must be the rank of inputs"
                f"{shape_str(np.shape(paddings))} {shape_str(x.shape)}")
        pads = paddings.tolist()
        for before, after in pads:
            if before < 0 or after < 0:
                raise _invalid(f"Paddings must be non-negative: {before} {after}")
        return pad_constant(x, pads, constant)


@register_kernel("Pad", "CPU")
class PadOp(_PadBase):
    """The input padded with zeros (empty strings)."""

    def compute(self, ctx, inputs):
        x, paddings = inputs
        return (self.pad(x, paddings, _fill_value(np.asarray(x).dtype)),)


@register_kernel("PadV2", "CPU")
class PadV2Op(_PadBase):
    """The input padded with `constant_values`."""

    def compute(self, ctx, inputs):
        x, paddings, constant = inputs
        if np.ndim(constant) != 0:
            raise _invalid(
                f"constant_values must be a scalar. Found: {shape_str(np.shape(constant))}")
        return (self.pad(x, paddings, np.asarray(constant)[()]),)


_MIRROR_MAX_RANK = 5


@register_kernel("MirrorPad", "CPU")
class MirrorPadOp(_Copying):
    """The input padded with its own mirror image: REFLECT leaves the edge out (paddings
    < dim size), SYMMETRIC repeats it (paddings <= dim size)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        mode = ctx.get_attr("mode")
        self._symmetric = attr_text(mode) == "SYMMETRIC"

    def is_expensive(self, inputs: list) -> bool:
        return _padded_size(np.shape(inputs[0]), inputs[1]) > BIG

    def compute(self, ctx, inputs):
        x, paddings = np.asarray(inputs[0]), inputs[1]
        pads = self._checked_pads(x, paddings)
        out_shape = [d + b + a for d, (b, a) in zip(x.shape, pads, strict=True)]
        if int(np.prod(out_shape, dtype=np.int64)) == x.size:
            return (x.reshape(out_shape),)
        return (np.pad(x, pads, mode="symmetric" if self._symmetric else "reflect"),)

    def _checked_pads(self, x, paddings) -> list:
        """The paddings as [[before, after], ...], after TF's checks in TF's order."""
        if x.ndim > _MIRROR_MAX_RANK:
            raise errors.UnimplementedError(
                None, None, f"inputs rank not in [0,{_MIRROR_MAX_RANK}]: {x.ndim}")
        if np.ndim(paddings) != 2 or np.shape(paddings)[1] != 2:
            raise _invalid(
                f"paddings must be a matrix with 2 columns: {shape_str(np.shape(paddings))}")
        if np.shape(paddings)[0] != x.ndim:
            raise _invalid("The first dimension of paddings must be the rank of inputs"
                           f"{shape_str(np.shape(paddings))}, {shape_str(x.shape)}")
        pads = paddings.tolist()
        for dim, (before, after) in zip(x.shape, pads, strict=True):
            self._check_pair(dim, before, after)
        return pads

    def _check_pair(self, dim: int, before: int, after: int) -> None:
        """One dimension's paddings: non-negative, and within what the mode can mirror."""
        if before < 0 or after < 0:
            raise _invalid(f"paddings must be non-negative: {before} {after}")
        if self._symmetric and (before > dim or after > dim):
            raise _invalid("paddings must be no greater than the dimension size: "
                           f"{before}, {after} greater than {dim}")
        if not self._symmetric and (before >= dim or after >= dim):
            raise _invalid("paddings must be less than the dimension size: "
                           f"{before}, {after} not less than {dim}")


# -- reversing -------------------------------------------------------------------------------

_REVERSE_MAX_RANK = 8


@register_kernel("ReverseV2", "CPU")
class ReverseV2Op(OpKernel):
    """The input with the listed axes reversed (a view); scalars and empty tensors pass
    through unchecked, as in TF."""

    def compute(self, ctx, inputs):
        x, axis = inputs
        ndim = np.ndim(x)
        if ndim == 0 or np.size(x) == 0:
            return (x,)
        if np.ndim(axis) != 1:
            raise _invalid(f"'dims' must be 1-dimension, not {np.ndim(axis)}")
        try:
            axes = canonical_axes(axis.tolist(), ndim)
        except ValueError as e:
            raise _invalid(str(e)) from None
        if ndim > _REVERSE_MAX_RANK:
            raise errors.UnimplementedError(
                None, None, "reverse is not implemented for tensors of rank > 8.")
        return (np.flip(x, tuple(axes)) if axes else x,)


# -- slicing ---------------------------------------------------------------------------------

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
#: Valid slice specs a StridedSlice kernel remembers (then it starts over).
_MAX_SPECS = 64


@register_kernel("StridedSlice", "CPU")
class StridedSliceOp(OpKernel):
    """NumPy-style basic slicing with TF's masks (a view, reshaped)."""

    compilable = True  # pure

    def __init__(self, ctx):
        super().__init__(ctx)
        self._masks = {k: ctx.get_attr(k, 0) for k in _MASKS}
        # (input shape, spec) -> (index, final shape) of specs that were valid: a slice in
        # a loop body (a Keras GRU's gates) validates its constant spec once
        self._specs: dict = {}

    def compute(self, ctx, inputs):
        x, begin, end, strides = inputs
        shape = np.shape(x)
        key = (shape, np.shape(begin), np.shape(end), np.shape(strides),
               np.asarray(begin).tobytes(), np.asarray(end).tobytes(),
               np.asarray(strides).tobytes())
        spec = self._specs.get(key)
        if spec is None:
            masks = self._checked_masks(x, begin, end, strides)
            try:
                spec = strided_slice_spec(
                    shape, begin.tolist(), end.tolist(), strides.tolist(), **masks)
            except ValueError as e:
                raise _invalid(str(e)) from None
            if len(self._specs) >= _MAX_SPECS:
                self._specs.clear()
            self._specs[key] = spec
        index, final = spec
        return (np.reshape(x[index], final),)

    def _checked_masks(self, x, begin, end, strides) -> dict:
        """TF's first checks of a slice spec, and the masks without the bits past its
        length (TF ignores them: an ellipsis bit there leaves the implicit one at the end)."""
        n = np.size(strides)
        if (np.ndim(begin) != 1 or np.ndim(end) != 1 or np.ndim(strides) != 1
                or np.size(begin) != n or np.size(end) != n or n >= 32):
            raise _invalid(
                "Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
                f"{shape_str(np.shape(begin))}, {shape_str(np.shape(end))}, and "
                f"{shape_str(np.shape(strides))} instead.")
        ellipsis = self._masks["ellipsis_mask"]
        if ellipsis & (ellipsis - 1):
            raise _invalid("Multiple ellipses in slice spec not allowed")
        masks = {k: v & ((1 << n) - 1) for k, v in self._masks.items()}
        kept = masks["ellipsis_mask"] | masks["new_axis_mask"]
        if np.ndim(x) == 0 and kept != (1 << n) - 1:
            raise _invalid("Attempting to slice scalar input.")
        return masks


@register_kernel("Slice", "CPU")
class SliceOp(OpKernel):
    """input[begin : begin + size] per dimension; size -1 means to the end (a view)."""

    compilable = True  # pure

    def compute(self, ctx, inputs):
        x, begin_t, size_t = inputs
        shape = np.shape(x)
        ndim = len(shape)
        if (np.ndim(begin_t) != 1 or np.ndim(size_t) != 1 or np.size(begin_t) != ndim
                or np.size(size_t) != ndim):
            raise _invalid(
                f"Expected begin and size arguments to be 1-D tensors of size {ndim}, but got "
                f"shapes {shape_str(np.shape(begin_t))} and {shape_str(np.shape(size_t))} "
                "instead.")
        index = []
        for i, (b, s) in enumerate(zip(begin_t.tolist(), size_t.tolist(), strict=True)):
            if s == -1:
                s = shape[i] - b
            if not 0 <= b <= shape[i]:
                raise _invalid(f"Expected begin[{i}] in [0, {shape[i]}], but got {b}")
            if not 0 <= s <= shape[i] - b:
                raise _invalid(f"Expected size[{i}] in [0, {shape[i] - b}], but got {s}")
            index.append(slice(b, b + s))
        return (x[tuple(index)],)


# -- gathering and selection -----------------------------------------------------------------

def _check_indices(indices, limit: int) -> None:
    bad = (indices < 0) | (indices >= limit)
    if bad.any():
        where = np.argwhere(bad)[0].tolist() if np.ndim(indices) else []
        value = indices[tuple(where)] if where else indices
        raise _invalid(
            f"indices[{','.join(map(str, where))}] = {value} is not in [0, {limit})")


def _gathered_size(params, indices, axis) -> int:
    """How many elements gathering `indices` along `axis` of params makes (an upper bound
    under batch_dims); 0 when the axis is not one of params' (compute raises)."""
    try:
        dim = params.shape[axis]
    except (IndexError, TypeError):
        return 0
    return indices.size * (params.size // dim) if dim else 0


def _gather(params, indices, axis: int, batch_dims: int):
    params = np.asarray(params)
    if batch_dims == 0:
        return np.take(params, indices, axis=axis)
    bshape = params.shape[:batch_dims]
    n = int(np.prod(bshape))
    p = params.reshape((n,) + params.shape[batch_dims:])
    ind = np.asarray(indices).reshape((n,) + np.shape(indices)[batch_dims:])
    out_tail = (params.shape[batch_dims:axis] + np.shape(indices)[batch_dims:]
                + params.shape[axis + 1:])
    out = np.empty((n,) + out_tail, dtype=params.dtype)
    for i in range(n):
        out[i] = np.take(p[i], ind[i], axis=axis - batch_dims)
    return out.reshape(bshape + out_tail)


@register_kernel("GatherV2", "CPU")
class GatherV2Op(_Copying):
    """Slices of params along `axis` at `indices` (batch_dims leading dims shared)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._batch_dims = ctx.get_attr("batch_dims", 0)

    def is_expensive(self, inputs: list) -> bool:
        axis = inputs[2]
        if getattr(axis, "ndim", None) != 0:
            return False  # compute reports TF's error
        return _gathered_size(inputs[0], inputs[1], int(axis)) > BIG

    def compute(self, ctx, inputs):
        params, indices, axis_t = inputs
        ndim = np.ndim(params)
        if ndim < 1:
            raise _invalid("params must be at least 1 dimensional")
        axis = _rank0_int(axis_t, "axis must be scalar")
        least = -axis if axis < 0 else axis + 1
        if ndim < least:
            raise _invalid(f"Shape must be at least rank {least} but is rank {ndim}")
        axis = axis + ndim if axis < 0 else axis
        batch_dims = self._batch_dims and self._check_batch_dims(params, indices, axis)
        _check_indices(indices, np.shape(params)[axis])
        return (_gather(params, indices, axis, batch_dims),)

    def _check_batch_dims(self, params, indices, axis: int) -> int:
        """batch_dims made non-negative, after TF's checks in TF's order."""
        batch_dims, rank = self._batch_dims, np.ndim(indices)
        if not -rank <= batch_dims <= rank:
            raise _invalid(f"Expected batch_dims in the range [{-rank}, {rank}], but got "
                           f"{batch_dims}")
        if batch_dims < 0:
            batch_dims += rank
        if batch_dims >= np.ndim(params):
            raise _invalid(f"batch_dims ({batch_dims}) must be less than rank(params) "
                           f"({np.ndim(params)}).")
        if batch_dims > axis:
            raise _invalid(
                f"batch_dims ({batch_dims}) must be less than or equal to axis ({axis}).")
        for i in range(batch_dims):
            if params.shape[i] != indices.shape[i]:
                raise _invalid(f"params.shape[{i}]: {params.shape[i]} should be equal to "
                               f"indices.shape[{i}]: {indices.shape[i]}")
        return batch_dims


@register_kernel("Gather", "CPU")
class GatherOp(_Copying):
    """Rows of params at `indices` (the old, axis-0 Gather)."""

    def is_expensive(self, inputs: list) -> bool:
        return _gathered_size(inputs[0], inputs[1], 0) > BIG

    def compute(self, ctx, inputs):
        params, indices = inputs
        if np.ndim(params) < 1:
            raise _invalid("params must be at least 1 dimensional")
        _check_indices(indices, np.shape(params)[0])
        return (np.take(params, indices, axis=0),)


@register_kernel("Where", "CPU",
                 T=[dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16,
                    dtypes.int8, dtypes.complex64, dtypes.int64, dtypes.bfloat16,
                    dtypes.uint16, dtypes.complex128, dtypes.float16, dtypes.uint32,
                    dtypes.uint64, dtypes.bool])
class WhereOp(_Copying):
    """Coordinates (int64, [num_true, rank]) of the true / non-zero elements."""

    def compute(self, ctx, inputs):
        x = inputs[0]
        if np.ndim(x) == 0:
            raise _invalid("WhereOp : Unhandled input dimensions: 0")
        return (np.argwhere(x).astype(np.int64, copy=False),)


@register_kernel("Select", "CPU")
class SelectOp(_Copying):
    """t where condition else e; condition is t's shape, a scalar, or a vector along t's
    first dimension (t of rank > 1)."""

    def is_expensive(self, inputs: list) -> bool:
        return inputs[1].size > BIG

    def compute(self, ctx, inputs):
        cond, t, e = inputs
        t_shape, e_shape, c_shape = np.shape(t), np.shape(e), np.shape(cond)
        if c_shape == ():
            self._check_same_size(t_shape, e_shape)
        elif len(c_shape) == 1 and len(t_shape) != 1:  # cond picks rows of t and e
            if not t_shape:
                raise _invalid("'then' must be at least a vector, but saw shape: []")
            if c_shape[0] != t_shape[0]:
                raise _invalid("Number of batches of 'then' must match size of 'cond', but "
                               f"saw: {t_shape[0]} vs. {c_shape[0]}")
            self._check_same_size(t_shape, e_shape)
            cond = np.reshape(cond, c_shape + (1,) * (len(t_shape) - 1))
        else:
            for i, shape in ((1, t_shape), (2, e_shape)):
                if shape != c_shape:
                    raise _invalid(
                        f"Inputs to operation {self.name} of type Select must have the same "
                        f"size and shape.  Input 0: {shape_str(c_shape)} != input {i}: "
                        f"{shape_str(shape)}")
        return (np.where(cond, t, e),)

    @staticmethod
    def _check_same_size(t_shape, e_shape) -> None:
        if t_shape != e_shape:
            raise _invalid("'then' and 'else' must have the same size.  but received: "
                           f"{shape_str(t_shape)} vs. {shape_str(e_shape)}")


@register_kernel("SelectV2", "CPU")
class SelectV2Op(_Copying):
    """t where condition else e, all three broadcast together."""

    def is_expensive(self, inputs: list) -> bool:
        """Whether the broadcast output is large (it can be far larger than any input)."""
        cond, t, e = inputs
        if t.size > BIG or e.size > BIG or cond.size > BIG:
            return True
        if cond.shape == t.shape == e.shape:
            return False
        try:
            return math.prod(np.broadcast_shapes(cond.shape, t.shape, e.shape)) > BIG
        except ValueError:
            return False

    def compute(self, ctx, inputs):
        cond, t, e = inputs
        try:
            return (np.where(cond, t, e),)
        except ValueError:
            if incompatible_shapes(cond, t, e) is None:
                raise
            raise _invalid(
                f"condition {shape_str(np.shape(cond))}, then {shape_str(np.shape(t))}, and "
                f"else {shape_str(np.shape(e))} must be broadcastable") from None


@register_kernel("OneHot", "CPU")
class OneHotOp(_Copying):
    """on_value where indices == position along a new `axis` of size depth, else off_value."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._axis = ctx.get_attr("axis", -1)

    def is_expensive(self, inputs: list) -> bool:
        """Whether the output (indices.size * depth elements) is large."""
        depth = inputs[1]
        if getattr(depth, "ndim", None) != 0:
            return False  # compute reports TF's error
        return inputs[0].size * int(depth) > BIG

    def compute(self, ctx, inputs):
        indices, depth_t, on, off = inputs
        ndim = np.ndim(indices)
        axis = self._axis
        if not (axis == -1 or 0 <= axis <= ndim):
            raise _invalid(
                f"Expected axis to be -1 or between [0, {ndim + 1}).  But received: {axis}")
        depth = _rank0_int(depth_t, "depth must be a scalar, but got: {shape}")
        if depth < 0:
            raise _invalid(f"depth must be non-negative, got: {depth}")
        for name, v in (("on_value", on), ("off_value", off)):
            if np.ndim(v) != 0:
                raise _invalid(f"{name} must be a scalar, but got: {shape_str(np.shape(v))}")
        hot = np.expand_dims(indices, -1) == np.arange(depth, dtype=np.asarray(indices).dtype)
        out = np.where(hot, np.asarray(on), np.asarray(off))
        if axis != -1 and axis != ndim:
            out = np.moveaxis(out, -1, axis)
        return (out,)


@register_kernel("EnsureShape", "CPU")
class EnsureShapeOp(OpKernel):
    """The input, when its shape is compatible with the `shape` attr (TF's message)."""

    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        shape = ctx.get_attr("shape")
        self.dims = None if shape.rank is None else [
            -1 if d is None else int(d) for d in shape.as_list()]
        name = ctx.node_def.input[0] if ctx.node_def.input else ""
        self.input_name = name.split(":")[0] if name.endswith(":0") else name

    def compute(self, ctx, inputs):
        value = inputs[0]
        dims = self.dims
        if dims is not None:
            shape = np.shape(value)
            if len(shape) != len(dims) or any(d not in (-1, s) for d, s in zip(
                    dims, shape, strict=True)):
                want = "[" + ",".join("?" if d < 0 else str(d) for d in dims) + "]"
                raise errors.InvalidArgumentError(
                    None, None, f"Shape of tensor {self.input_name} {shape_str(shape)} is "
                                f"not compatible with expected shape {want}.")
        return (value,)


# -- BroadcastArgs -------------------------------------------------------------------------

@register_kernel("BroadcastArgs", "CPU", T=[dtypes.int32, dtypes.int64])
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


# -- LinSpace (sequence_ops.cc, beside Range) -------------------------------------------

@register_kernel("LinSpace", "CPU")
class LinSpaceOp(OpKernel):
    """num evenly spaced values from start to stop, both included."""

    def compute(self, ctx, inputs):
        start, stop, num = (np.asarray(v) for v in inputs)
        for name, v in (("start", start), ("stop", stop), ("num", num)):
            if v.ndim != 0:
                raise _invalid(f"{name} must be a scalar, not shape {shape_str(v.shape)}")
        n = int(num)
        if n <= 0:
            raise _invalid(f"Requires num > 0: {n}")
        t = start.dtype.type
        out = np.empty(n, dtype=start.dtype)
        if n == 1:
            out[0] = start
            return (out,)
        step = t((stop - start) / t(n - 1))
        out[:-1] = start + step * np.arange(n - 1).astype(start.dtype)
        out[-1] = stop
        return (out,)
