"""Array builders (placeholder, reshape, concat, slicing, ...) with TF's Python names,
argument names, and the very node names, ops and attrs TF's Python layer produces."""

from __future__ import annotations

import builtins
import numbers
import types

import numpy as np

from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.constant_value import constant_value
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.framework.op_def_library import apply_op
from aioflow.ops.constant_op import constant

newaxis = None

_SLICE_TYPE_ERROR = (
    "Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
    "tf.int32/tf.int64 tensors are valid indices")
_SUPPORTED_SLICE_DTYPES = (dtypes.int16, dtypes.int32, dtypes.int64)


def _lookup(new_name, new_value, old_name, old_value):
    """TF's deprecated_argument_lookup: at most one of two spellings may be given."""
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'.")
        return old_value
    return new_value


# -- conversion functions TF registers for shapes and lists holding tensors ----------------

def _tensor_shape_to_tensor(s, dtype=None, name=None):
    """A fully defined TensorShape as an int32 (int64 if needed) Const "shape_as_tensor"."""
    if not s.is_fully_defined():
        raise ValueError(f"Cannot convert a partially known TensorShape {s} to a Tensor.")
    dims = s.as_list()
    big = any(d >= 2**31 for d in dims)
    if dtype is not None:
        if dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"Cannot convert TensorShape {s} to dtype {dtype}. Allowed dtypes "
                            "are tf.int32 and tf.int64.")
        if dtype == dtypes.int32 and big:
            raise ValueError(f"Cannot convert TensorShape {s} to dtype int32; a dimension is "
                             "too large. Consider using tf.int64.")
    else:
        dtype = dtypes.int64 if big else dtypes.int32
    return constant(dims, dtype=dtype, name=name or "shape_as_tensor")


def _dimension_to_tensor(d, dtype=None, name=None):
    if d.value is None:
        raise ValueError(f"Cannot convert unknown Dimension {d} to a Tensor.")
    if dtype is not None and dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"Cannot convert Dimension {d} to dtype {dtype}. Allowed dtypes are "
                        "tf.int32 and tf.int64.")
    return constant(d.value, dtype=dtype or dtypes.int32, name=name or "shape_as_tensor")


def _dtype_from_nested_lists(values):
    for elem in values:
        if isinstance(elem, ops.Tensor):
            return elem.dtype.base_dtype
        if isinstance(elem, (list, builtins.tuple)):
            found = _dtype_from_nested_lists(elem)
            if found is not None:
                return found
    return None


def _cast_nested(values, dtype):
    out = []
    for elem in values:
        if isinstance(elem, ops.Tensor) and elem.dtype.base_dtype != dtype:
            elem = apply_op("Cast", x=elem, DstT=dtype)
        elif isinstance(elem, (list, builtins.tuple)):
            elem = _cast_nested(elem, dtype)
        out.append(elem)
    return out


def _autopacking_helper(values, dtype, name):
    """Pack a (nested) list holding tensors, as TF's _autopacking_helper."""
    must_pack = False
    converted = []
    with ops.name_scope(name) as scope:
        for i, elem in enumerate(values):
            if isinstance(elem, ops.Tensor):
                if dtype is not None and elem.dtype.base_dtype != dtype:
                    raise TypeError(
                        f"Cannot convert a list containing a tensor of dtype {elem.dtype} to "
                        f"{dtype} (Tensor is: {elem!r})")
                converted.append(elem)
                must_pack = True
            elif isinstance(elem, (list, builtins.tuple)):
                inner = _autopacking_helper(elem, dtype, str(i))
                if isinstance(inner, ops.Tensor):
                    must_pack = True
                converted.append(inner)
            else:
                converted.append(elem)
        if not must_pack:
            return converted
        tensors = [elem if isinstance(elem, ops.Tensor)
                   else constant(elem, dtype=dtype, name=str(i))
                   for i, elem in enumerate(converted)]
        return apply_op("Pack", name=scope, values=tensors)


def _autopacking_conversion(values, dtype=None, name=None):
    """Lists and tuples holding tensors convert to a Pack op (named "packed")."""
    inferred = _dtype_from_nested_lists(values)
    if inferred is None:
        return NotImplemented
    if dtype is None:
        dtype = inferred
    elif dtype != inferred:
        values = _cast_nested(values, dtype)
    return _autopacking_helper(values, dtype, name or "packed")


ops.register_tensor_conversion_function(tensor_shape.TensorShape, _tensor_shape_to_tensor)
ops.register_tensor_conversion_function(tensor_shape.Dimension, _dimension_to_tensor)
ops.register_tensor_conversion_function((list, builtins.tuple), _autopacking_conversion)


# -- placeholders, identity --------------------------------------------------------------

def placeholder(dtype, shape=None, name: str | None = None) -> ops.Tensor:
    """A tensor that must be fed (TF1 `tf.placeholder`); `shape=None` is unknown rank."""
    t = apply_op("Placeholder", name=name, dtype=dtype, shape=shape)
    if shape is not None:
        t.set_shape(shape)
    return t


def placeholder_with_default(input, shape, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """`input` unless fed; the fed value must fit `shape`."""
    t = apply_op("PlaceholderWithDefault", name=name, input=input, shape=shape)
    t.set_shape(shape)
    return t


def identity(input, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """The input, as a new tensor."""
    return apply_op("Identity", name=name, input=input)


def identity_n(input, name: str | None = None) -> list[ops.Tensor]:  # noqa: A002
    """Each input, as new tensors (one IdentityN op)."""
    return apply_op("IdentityN", name=name, input=list(input))


def stop_gradient(input, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """The input; gradients do not flow through it."""
    return apply_op("StopGradient", name=name, input=input)


def check_numerics(tensor, message, name: str | None = None) -> ops.Tensor:
    """The tensor; the run fails if it holds NaN or Inf."""
    return apply_op("CheckNumerics", name=name, tensor=tensor, message=message)


# -- grouping (TF's control_flow_ops.group / tuple) ----------------------------------------

def no_op(name: str | None = None) -> ops.Operation:
    """An op that does nothing (a target for control dependencies)."""
    return apply_op("NoOp", name=name)


def _group_control_deps(dev, deps, name=None):
    with ops.control_dependencies(deps):
        if dev is None:
            return no_op(name=name)
        with ops.device(dev):
            return no_op(name=name)


def group(*inputs, **kwargs) -> ops.Operation:
    """A NoOp that runs after all `inputs` (one NoOp per device, then a root, as TF)."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise ValueError("Unknown keyword arguments: " + ", ".join(kwargs.keys()))
    flat = _flatten(inputs)
    with ops.name_scope(name, "group_deps", flat) as name:
        if not flat:
            return no_op(name=name)
        by_device: dict[str, list] = {}
        for inp in flat:
            if not hasattr(inp, "device"):
                raise TypeError(f"'inputs' should be zero or more (nested) Tensors. Received "
                                f"'{inp}' with type '{type(inp)}'.")
            by_device.setdefault(inp.device, []).append(inp)
        if len(by_device) == 1:
            ((dev, deps),) = by_device.items()
            return _group_control_deps(dev, deps, name=name)
        deps = [_group_control_deps(dev, by_device[dev])
                for dev in sorted(by_device, key=lambda d: d or "")]
        with ops.control_dependencies(deps):
            return no_op(name=name)


def _flatten(values) -> list:
    out = []
    for v in values:
        if isinstance(v, (list, builtins.tuple)):
            out.extend(_flatten(v))
        elif isinstance(v, dict):
            out.extend(_flatten([v[k] for k in sorted(v)]))
        else:
            out.append(v)
    return out


def with_dependencies(dependencies, output_tensor, name: str | None = None) -> ops.Tensor:
    """`output_tensor` through an Identity that runs after `dependencies`."""
    with ops.name_scope(name, "control_dependency",
                        list(dependencies) + [output_tensor]) as name:
        colocate = output_tensor.op if isinstance(output_tensor, IndexedSlices) else output_tensor
        with ops.colocate_with(colocate), ops.control_dependencies(dependencies):
            if isinstance(output_tensor, IndexedSlices):
                return IndexedSlices(identity(output_tensor.values, name=name),
                                     output_tensor.indices, output_tensor.dense_shape)
            output_tensor = ops.convert_to_tensor(output_tensor)
            return identity(output_tensor, name=name)


def tuple(tensors, name: str | None = None, control_inputs=None) -> list:  # noqa: A001
    """The tensors, each gated on all of them (TF1 `tf.tuple`)."""
    with ops.name_scope(name, "tuple", tensors) as name:
        tensors = [t if (isinstance(t, (ops.Operation, ops.Tensor, IndexedSlices)) or t is None)
                   else ops.convert_to_tensor(t) for t in tensors]
        gating = [t if isinstance(t, ops.Operation) else t.op for t in tensors if t is not None]
        for c in control_inputs or ():
            if isinstance(c, ops.Tensor):
                c = c.op
            elif not isinstance(c, ops.Operation):
                raise TypeError(f"'control_inputs' must only contain Operation or Tensor. "
                                f"Received: {c}")
            gating.append(c)
        gating = sorted(set(gating), key=lambda op: op._id)
        if not gating:
            raise ValueError(f"'tensors' must have at least one Tensor. Received: {tensors}.")
        gate = group(*gating)
        out = []
        for t in tensors:
            if isinstance(t, (ops.Tensor, IndexedSlices)):
                out.append(with_dependencies([gate], t))
            elif isinstance(t, ops.Operation):
                with ops.control_dependencies([gate]):
                    out.append(group(t))
            else:
                out.append(None)
        return out


# -- shapes ------------------------------------------------------------------------------

def reshape(tensor, shape, name: str | None = None) -> ops.Tensor:
    """`tensor` with a new shape (one -1 dimension is inferred)."""
    return apply_op("Reshape", name=name, tensor=tensor, shape=shape)


def shape(input, name: str | None = None, out_type=None) -> ops.Tensor:  # noqa: A002
    """The shape of `input`: a Const when it is fully known, else a Shape op (as TF)."""
    out_type = dtypes.int32 if out_type is None else dtypes.as_dtype(out_type)
    with ops.name_scope(name, "Shape", [input]) as name:
        input = ops.convert_to_tensor(input)  # noqa: A001
        if input.shape.is_fully_defined():
            return constant(input.shape.as_list(), out_type, name=name)
        return apply_op("Shape", name=name, input=input, out_type=out_type)


def shape_n(input, out_type=dtypes.int32, name: str | None = None) -> list[ops.Tensor]:  # noqa: A002
    """The shapes of several tensors (one ShapeN op)."""
    return apply_op("ShapeN", name=name, input=list(input), out_type=out_type)


def size(input, name: str | None = None, out_type=dtypes.int32) -> ops.Tensor:  # noqa: A002
    """The number of elements: a Const when the shape is known, else a Size op."""
    with ops.name_scope(name, "Size", [input]) as name:
        input = ops.convert_to_tensor(input)  # noqa: A001
        s = input.shape
        if s.is_fully_defined():
            return constant(s.num_elements(), out_type, name=name)
        if s.dims and any(d.value == 0 for d in s.dims):
            return constant(0, out_type, name=name)
        return apply_op("Size", name=name, input=input, out_type=out_type)


def rank(input, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """The rank: a Const when it is known, else a Rank op."""
    with ops.name_scope(name, "Rank", [input]) as name:
        input = ops.convert_to_tensor(input)  # noqa: A001
        if input.shape.rank is not None:
            return constant(input.shape.rank, dtypes.int32, name=name)
        return apply_op("Rank", name=name, input=input)


def expand_dims(input, axis=None, name: str | None = None, dim=None) -> ops.Tensor:  # noqa: A002
    """Insert a dimension of size 1 at `axis`."""
    axis = _lookup("axis", axis, "dim", dim)
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return apply_op("ExpandDims", name=name, input=input, dim=axis)


def squeeze(input, axis=None, name: str | None = None, squeeze_dims=None) -> ops.Tensor:  # noqa: A002
    """Remove dimensions of size 1 (those in `axis`, or all)."""
    axis = _lookup("axis", axis, "squeeze_dims", squeeze_dims)
    if np.isscalar(axis):
        axis = [axis]
    return apply_op("Squeeze", name=name, input=input,
                    squeeze_dims=[] if axis is None else list(axis))


def transpose(a, perm=None, name: str = "transpose", conjugate: bool = False) -> ops.Tensor:
    """Permute dimensions; `perm=None` reverses them (a Const perm when the rank is known)."""
    with ops.name_scope(name, "transpose", [a]) as name:
        if not isinstance(a, ops.Tensor):
            a = ops.convert_to_tensor(a, name="a")
        op_type = "ConjugateTranspose" if conjugate and a.dtype.is_complex else "Transpose"
        if perm is None:
            r = a.shape.rank
            if r is None:
                perm = apply_op("Range", start=apply_op("Rank", input=a) - 1, limit=-1,
                                delta=-1)
            else:
                perm = np.arange(r - 1, -1, -1, dtype=np.int32)
        return apply_op(op_type, name=name, x=a, perm=perm)


def matrix_transpose(a, name: str = "matrix_transpose", conjugate: bool = False) -> ops.Tensor:
    """Swap the last two dimensions."""
    with ops.name_scope(name, values=[a]):
        a = ops.convert_to_tensor(a, name="a")
        r = a.shape.rank
        if r is not None:
            perm = list(builtins.range(r - 2)) + [r - 1, r - 2]
        else:
            from aioflow.ops import math_ops

            a_rank = rank(a)
            perm = concat((math_ops.range(a_rank - 2), [a_rank - 1, a_rank - 2]), 0)
        return transpose(a, perm=perm, conjugate=conjugate)


def concat(values, axis, name: str = "concat") -> ops.Tensor:
    """Join tensors along `axis` (ConcatV2); one tensor gives an Identity, as TF."""
    if not isinstance(values, (list, builtins.tuple)):
        values = [values]
    if len(values) == 1:
        with ops.name_scope(name):
            t = ops.convert_to_tensor(axis, name="concat_dim", dtype=dtypes.int32)
            if t.shape.rank not in (None, 0):
                raise ValueError(f"Shape {t.shape} must have rank 0")
            return identity(values[0], name=name)
    return apply_op("ConcatV2", name=name, values=list(values), axis=axis)


def stack(values, axis: int = 0, name: str = "stack") -> ops.Tensor:
    """Stack rank-R tensors into one rank-(R+1) tensor (Pack; a Const when all constant)."""
    if axis == 0:
        try:
            return ops.convert_to_tensor(values, name=name)
        except (TypeError, ValueError, NotImplementedError):
            pass
    first = ops.convert_to_tensor(values[0], name=name)
    if first.shape.rank is not None:
        expanded = first.shape.rank + 1
        if axis < -expanded or axis >= expanded:
            raise ValueError(f"Argument `axis` = {axis} not in range [{-expanded}, {expanded})")
    return apply_op("Pack", name=name, values=list(values), axis=axis)


def unstack(value, num=None, axis: int = 0, name: str = "unstack") -> list[ops.Tensor]:
    """Split along `axis` into `num` tensors (num inferred from the static shape)."""
    if num is None:
        value = ops.convert_to_tensor(value)
        s = value.shape
        if s.rank is not None:
            if axis < -s.rank or axis >= s.rank:
                raise ValueError(f"Argument `axis` = {axis} not in range "
                                 f"[{-s.rank}, {s.rank})")
            num = s.dims[axis].value
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {s}")
    return apply_op("Unpack", name=name, value=value, num=num, axis=axis)


def split(value, num_or_size_splits, axis=0, num=None, name: str = "split") -> list[ops.Tensor]:
    """Split into equal parts (Split) or parts of given sizes (SplitV)."""
    if isinstance(num_or_size_splits, (numbers.Integral, tensor_shape.Dimension)):
        return apply_op("Split", name=name, split_dim=axis, value=value,
                        num_split=int(num_or_size_splits))
    size_splits = ops.convert_to_tensor(num_or_size_splits)
    if size_splits.shape.rank == 0:
        raise ValueError("Rank-0 tensors are not supported as the num_or_size_splits argument "
                         f"to split. Argument provided: {num_or_size_splits}")
    if num is None:
        if size_splits.shape.rank is not None:
            num = size_splits.shape.dims[0].value
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {size_splits.shape}")
    return apply_op("SplitV", name=name, value=value, size_splits=size_splits, split_dim=axis,
                    num_split=num)


def fill(dims, value, name: str | None = None) -> ops.Tensor:
    """A tensor of shape `dims` filled with the scalar `value`."""
    return apply_op("Fill", name=name, dims=dims, value=value)


def _zero_of(dtype):
    if dtype == dtypes.bool:
        return False
    if dtype == dtypes.string:
        return ""
    return 0


def _one_of(dtype):
    return True if dtype == dtypes.bool else 1


def _filled(shape, value, dtype, name, default_name):
    """TF's zeros()/ones(): a Const when the shape is static and small, else Fill."""
    with ops.name_scope(name, default_name, [shape]) as name:
        if not isinstance(shape, ops.Tensor):
            try:
                dims = _static_dims(shape)
                if dims is not None and int(np.prod(dims, dtype=np.int64)) < 1000:
                    return constant(value, dtype=dtype, shape=dims, name=name)
                shape = _tensor_shape_to_tensor(tensor_shape.TensorShape(shape))
            except (TypeError, ValueError):
                shape = ops.convert_to_tensor(shape, dtype=dtypes.int32)
        if shape.shape.rank in (None, 0):
            shape = reshape(shape, [-1])
        return fill(shape, constant(value, dtype=dtype), name=name)


def _static_dims(shape):
    if isinstance(shape, tensor_shape.TensorShape):
        return shape.as_list() if shape.is_fully_defined() else None
    if isinstance(shape, (list, builtins.tuple)):
        if any(isinstance(d, (ops.Tensor, list, builtins.tuple)) for d in shape):
            return None
        return [int(tensor_shape.dimension_value(d)) for d in shape]
    if isinstance(shape, np.ndarray):
        return [int(d) for d in shape.reshape(-1)]
    if isinstance(shape, numbers.Integral):
        return [int(shape)]
    return None


def zeros(shape, dtype=dtypes.float32, name: str | None = None) -> ops.Tensor:
    """All zeros of `shape` (a Const when small and static, else Fill)."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    return _filled(shape, _zero_of(dtype), dtype, name, "zeros")


def ones(shape, dtype=dtypes.float32, name: str | None = None) -> ops.Tensor:
    """All ones of `shape` (a Const when small and static, else Fill)."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    return _filled(shape, _one_of(dtype), dtype, name, "ones")


def zeros_like(tensor, dtype=None, name: str | None = None, optimize: bool = True) -> ops.Tensor:
    """Zeros with the shape of `tensor` (a Const when its shape is known, as TF)."""
    with ops.name_scope(name, "zeros_like", [tensor]) as name:
        if not isinstance(tensor, ops.Tensor):
            tensor = ops.convert_to_tensor(tensor, name="tensor")
        if optimize and tensor.shape.is_fully_defined() and tensor.dtype != dtypes.variant:
            return zeros(tensor.shape, dtype=dtype or tensor.dtype, name=name)
        if dtype is not None and dtypes.as_dtype(dtype) != tensor.dtype and \
                dtypes.as_dtype(dtype) != dtypes.variant:
            return zeros(shape(tensor) if optimize else apply_op("Shape", input=tensor),
                         dtype=dtype, name=name)
        return apply_op("ZerosLike", name=name, x=tensor)


def _shape_without_out_type(tensor, optimize: bool) -> ops.Tensor:
    """TF's shape_internal(tensor, optimize) without an out_type: a known shape is the
    Const "Shape/shape_as_tensor" (int64 only for a dim >= 2**31), else a Shape op."""
    with ops.name_scope(None, "Shape", [tensor]) as name:
        if optimize and tensor.shape.is_fully_defined():
            dims = tensor.shape.as_list()
            dtype = dtypes.int64 if any(d >= 2**31 for d in dims) else dtypes.int32
            return constant(dims, dtype=dtype, name="shape_as_tensor")
        return apply_op("Shape", name=name, input=tensor, out_type=dtypes.int32)


def ones_like(tensor, dtype=None, name: str | None = None, optimize: bool = True) -> ops.Tensor:
    """Ones with the shape of `tensor` (Shape, then Fill, as TF)."""
    with ops.name_scope(name, "ones_like", [tensor]) as name:
        tensor = ops.convert_to_tensor(tensor, name="tensor")
        ones_shape = _shape_without_out_type(tensor, optimize)
        ret = ones(ones_shape, dtype=dtype or tensor.dtype, name=name)
        ret.set_shape(tensor.shape)
        return ret


def ones_like_v2(input, dtype=None, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """TF 2's tf.ones_like (what Keras layers call): a known shape gives a Const of ones
    (TF's array_like_impl), else Shape and Fill, or an OnesLike op."""
    with ops.name_scope(name, "ones_like", [input]) as name:
        tensor = ops.convert_to_tensor(input, name="tensor")
        if tensor.shape.is_fully_defined() and tensor.dtype != dtypes.variant:
            return ones(tensor.shape, dtype=dtype or tensor.dtype, name=name)
        if dtype is not None and dtypes.as_dtype(dtype) != tensor.dtype:
            return ones(_shape_without_out_type(tensor, True), dtype=dtype, name=name)
        return apply_op("OnesLike", name=name, x=tensor)


def tile(input, multiples, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """Repeat `input` `multiples[i]` times along dimension i."""
    return apply_op("Tile", name=name, input=input, multiples=multiples)


def slice(input_, begin, size, name: str | None = None) -> ops.Tensor:  # noqa: A001
    """The block starting at `begin` of extent `size` (-1: to the end)."""
    return apply_op("Slice", name=name, input=input_, begin=begin, size=size)


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None,
                  name: str | None = None) -> ops.Tensor:
    """Python-style slicing with masks (StridedSlice)."""
    if strides is None:
        strides = ones_like(begin)
    return apply_op("StridedSlice", name=name, input=input_, begin=begin, end=end,
                    strides=strides, begin_mask=begin_mask, end_mask=end_mask,
                    ellipsis_mask=ellipsis_mask, new_axis_mask=new_axis_mask,
                    shrink_axis_mask=shrink_axis_mask)


def gather(params, indices, validate_indices=None, name: str | None = None, axis=None,
           batch_dims: int = 0) -> ops.Tensor:
    """Slices of `params` at `indices` along `axis` (GatherV2)."""
    del validate_indices
    if axis is None:
        axis = batch_dims
    return apply_op("GatherV2", name=name, params=params, indices=indices, axis=axis,
                    batch_dims=batch_dims)


def gather_nd(params, indices, name: str | None = None, batch_dims: int = 0) -> ops.Tensor:
    """Slices of `params` at N-d `indices` (GatherNd)."""
    if batch_dims != 0:
        raise NotImplementedError("gather_nd with batch_dims != 0 is not supported")
    return apply_op("GatherNd", name=name, params=params, indices=indices)


def scatter_nd(indices, updates, shape, name: str | None = None) -> ops.Tensor:
    """A zero tensor of `shape` with `updates` summed in at N-d `indices` (ScatterNd)."""
    return apply_op("ScatterNd", name=name, indices=indices, updates=updates, shape=shape)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None,
            name: str | None = None) -> ops.Tensor:
    """One-hot vectors of length `depth` (float32 1/0 unless told otherwise)."""
    with ops.name_scope(name, "one_hot",
                        [indices, depth, on_value, off_value, axis, dtype]) as name:
        dtype = None if dtype is None else dtypes.as_dtype(dtype)
        on_exists = on_value is not None
        off_exists = off_value is not None
        if on_exists:
            on_value = ops.convert_to_tensor(on_value, preferred_dtype=dtype)
        if off_exists:
            off_value = ops.convert_to_tensor(off_value, preferred_dtype=dtype)
        on_dtype = on_value.dtype.base_dtype if on_exists else None
        off_dtype = off_value.dtype.base_dtype if off_exists else None
        if on_exists or off_exists:
            if dtype is not None:
                if on_exists and on_dtype != dtype:
                    raise TypeError(f"dtype {on_dtype} of on_value does not match dtype "
                                    f"parameter {dtype}")
                if off_exists and off_dtype != dtype:
                    raise TypeError(f"dtype {off_dtype} of off_value does not match dtype "
                                    f"parameter {dtype}")
            else:
                dtype = on_dtype if on_exists else off_dtype
        elif dtype is None:
            dtype = dtypes.float32
        if not on_exists:
            on_value = ops.convert_to_tensor(1, dtype, name="on_value")
            on_dtype = dtype
        if not off_exists:
            off_value = ops.convert_to_tensor(0, dtype, name="off_value")
            off_dtype = dtype
        if on_dtype != off_dtype:
            raise TypeError(f"dtype {on_dtype} of on_value does not match dtype {off_dtype} "
                            "of off_value")
        return apply_op("OneHot", name=name, indices=indices, depth=depth, on_value=on_value,
                        off_value=off_value, axis=axis)


def pad(tensor, paddings, mode: str = "CONSTANT", name: str | None = None,
        constant_values=0) -> ops.Tensor:
    """Pad with `constant_values` (Pad / PadV2) or by mirroring (MirrorPad)."""
    mode = mode.upper()
    if mode == "CONSTANT":
        if not isinstance(constant_values, ops.Tensor) and np.ndim(constant_values) == 0 \
                and constant_values == np.zeros_like(constant_values):
            return apply_op("Pad", name=name, input=tensor, paddings=paddings)
        return apply_op("PadV2", name=name, input=tensor, paddings=paddings,
                        constant_values=constant_values)
    if mode in ("REFLECT", "SYMMETRIC"):
        return apply_op("MirrorPad", name=name, input=tensor, paddings=paddings, mode=mode)
    raise ValueError("Value of argument `mode` expected to be one of \"CONSTANT\", "
                     f"\"REFLECT\", or \"SYMMETRIC\". Received `mode` = {mode}")


def broadcast_to(input, shape, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """`input` broadcast to `shape`."""
    return apply_op("BroadcastTo", name=name, input=input, shape=shape)


def reverse(tensor, axis, name: str | None = None) -> ops.Tensor:
    """Reverse the given dimensions (ReverseV2)."""
    return apply_op("ReverseV2", name=name, tensor=tensor, axis=axis)


def where(condition, x=None, y=None, name: str | None = None) -> ops.Tensor:
    """TF1 where: Select(condition, x, y), or the coordinates of true elements (Where)."""
    if x is None and y is None:
        with ops.name_scope(name, "Where", [condition]) as name:
            condition = ops.convert_to_tensor(condition, preferred_dtype=dtypes.bool,
                                              name="condition")
            return apply_op("Where", name=name, input=condition)
    if x is not None and y is not None:
        return apply_op("Select", name=name, condition=condition, t=x, e=y)
    raise ValueError("x and y must both be non-None or both be None.")


def where_v2(condition, x=None, y=None, name: str | None = None) -> ops.Tensor:
    """TF2 where: SelectV2 (broadcasting), or the coordinates of true elements (Where)."""
    if x is None and y is None:
        with ops.name_scope(name, "Where", [condition]) as name:
            condition = ops.convert_to_tensor(condition, preferred_dtype=dtypes.bool,
                                              name="condition")
            return apply_op("Where", name=name, input=condition)
    if x is not None and y is not None:
        return apply_op("SelectV2", name=name, condition=condition, t=x, e=y)
    raise ValueError("x and y must both be non-None or both be None.")


def boolean_mask(tensor, mask, name: str = "boolean_mask", axis=None) -> ops.Tensor:
    """The elements of `tensor` where `mask` is true (flattening the masked dims)."""
    with ops.name_scope(name, values=[tensor, mask]):
        tensor = ops.convert_to_tensor(tensor, name="tensor")
        mask = ops.convert_to_tensor(mask, name="mask")
        ndims_mask = mask.shape.rank
        if ndims_mask == 0:
            raise ValueError("mask cannot be scalar.")
        if ndims_mask is None:
            raise ValueError("Number of mask dimensions must be specified, even if some "
                             "dimensions are None.  E.g. shape=[None] is ok, but shape=None "
                             "is not.")
        axis = 0 if axis is None else axis
        axis_value = constant_value(axis) if isinstance(axis, ops.Tensor) else axis
        if axis_value is not None:
            axis = int(axis_value)
        leading_size = apply_op("Prod", input=shape(tensor)[axis:axis + ndims_mask],
                                reduction_indices=[0])
        tensor = reshape(tensor, concat([shape(tensor)[:axis], [leading_size],
                                         shape(tensor)[axis + ndims_mask:]], 0))
        mask = reshape(mask, [-1])
        indices = squeeze(where(mask), axis=[1])
        return gather(tensor, indices, axis=axis)


# -- indexing: Tensor.__getitem__ ----------------------------------------------------------

def _check_index(idx) -> None:
    if isinstance(idx, (numbers.Integral, tensor_shape.Dimension)):
        return
    dtype = getattr(idx, "dtype", None)
    if dtype is None or dtypes.as_dtype(dtype).base_dtype not in _SUPPORTED_SLICE_DTYPES or \
            (isinstance(idx, ops.Tensor) and idx.shape.rank == 1) or \
            (isinstance(idx, np.ndarray) and idx.ndim == 1):
        raise TypeError(_SLICE_TYPE_ERROR + f", got {idx!r}")


def _is_undefined_dimension(d) -> bool:
    return isinstance(d, tensor_shape.Dimension) and d.value is None



def _slice_part(value, default: int, dtype, out: list) -> bool:
    """Append one part of a Python slice to begin/end/strides; False when it was left out
    (then `default`, as a tensor of `dtype` when the other parts are tensors)."""
    if value is not None and not _is_undefined_dimension(value):
        _check_index(value)
        out.append(value)
        return True
    out.append(default if dtype is None else constant(default, dtype=dtype))
    return False

def _slice_helper(tensor, slice_spec, var=None):
    """`tensor[slice_spec]` as TF builds it: a StridedSlice with TF's masks and its
    begin/end/strides packed under the "strided_slice" scope."""
    tensor = ops.convert_to_tensor(tensor)
    if isinstance(slice_spec, bool) or \
            (isinstance(slice_spec, ops.Tensor) and slice_spec.dtype == dtypes.bool) or \
            (isinstance(slice_spec, np.ndarray) and slice_spec.dtype == bool):
        return boolean_mask(tensor=tensor, mask=slice_spec)
    if not isinstance(slice_spec, (list, builtins.tuple)):
        slice_spec = [slice_spec]
    begin, end, strides = [], [], []
    new_axis_mask = shrink_axis_mask = begin_mask = end_mask = ellipsis_mask = 0
    for index, s in enumerate(slice_spec):
        if isinstance(s, builtins.slice):
            dtype = None
            for t in (s.start, s.stop, s.step):
                if not isinstance(t, ops.Tensor):
                    continue
                if t.dtype == dtypes.int64:
                    dtype = dtypes.int64
                elif t.dtype == dtypes.int32 and dtype != dtypes.int64:
                    dtype = dtypes.int32
                elif t.dtype == dtypes.int16 and dtype is None:
                    dtype = dtypes.int16
            given = [_slice_part(v, default, dtype, out) for v, default, out in
                     ((s.start, 0, begin), (s.stop, 0, end), (s.step, 1, strides))]
            if not given[0]:
                begin_mask |= 1 << index
            if not given[1]:
                end_mask |= 1 << index
        elif s is Ellipsis:
            begin.append(0)
            end.append(0)
            strides.append(1)
            ellipsis_mask |= 1 << index
        elif s is newaxis:
            begin.append(0)
            end.append(0)
            strides.append(1)
            new_axis_mask |= 1 << index
        else:
            _check_index(s)
            begin.append(s)
            end.append(s + 1)
            if isinstance(s, ops.Tensor) and s.dtype in (dtypes.int16, dtypes.int64):
                strides.append(constant(1, dtype=s.dtype))
            else:
                strides.append(1)
            shrink_axis_mask |= 1 << index
    with ops.name_scope(None, "strided_slice", [tensor] + begin + end + strides) as name:
        if begin:
            packed_begin, packed_end, packed_strides = stack(begin), stack(end), stack(strides)
            if dtypes.int64 in (packed_begin.dtype, packed_end.dtype, packed_strides.dtype):
                packed_begin, packed_end, packed_strides = (
                    t if t.dtype == dtypes.int64 else apply_op("Cast", x=t, DstT=dtypes.int64)
                    for t in (packed_begin, packed_end, packed_strides))
        else:
            packed_begin = packed_end = packed_strides = constant([], dtype=dtypes.int32)
        return strided_slice(tensor, packed_begin, packed_end, packed_strides,
                             begin_mask=begin_mask, end_mask=end_mask,
                             shrink_axis_mask=shrink_axis_mask, new_axis_mask=new_axis_mask,
                             ellipsis_mask=ellipsis_mask, var=var, name=name)


ops.Tensor._override_operator("__getitem__", _slice_helper)


# -- unique values, set differences, reordering, tensor scatters, fake quantization ------

def unique(x, out_idx=dtypes.int32, name: str | None = None):
    """(y, idx): the distinct values of a vector in first-occurrence order and each
    element's position in y (a `Unique` op)."""
    return apply_op("Unique", name=name, x=x, out_idx=dtypes.as_dtype(out_idx))


def unique_with_counts(x, out_idx=dtypes.int32, name: str | None = None):
    """(y, idx, count) (a `UniqueWithCounts` op)."""
    return apply_op("UniqueWithCounts", name=name, x=x, out_idx=dtypes.as_dtype(out_idx))


def broadcast_dynamic_shape(shape_x, shape_y) -> ops.Tensor:
    """The shape two shapes broadcast to (a `BroadcastArgs` op)."""
    return apply_op("BroadcastArgs", s0=shape_x, s1=shape_y)


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None,  # noqa: A002
                     name: str | None = None, seq_dim=None, batch_dim=None) -> ops.Tensor:
    """Reverses the first seq_lengths[b] entries along seq_axis of each batch entry b (a
    `ReverseSequence` op; seq_dim/batch_dim are the v1 names)."""
    seq_axis = seq_dim if seq_axis is None else seq_axis
    batch_axis = batch_dim if batch_axis is None else batch_axis
    if seq_axis is None:
        raise TypeError("reverse_sequence() missing required argument 'seq_axis'")
    return apply_op("ReverseSequence", name=name, input=input, seq_lengths=seq_lengths,
                    seq_dim=seq_axis, batch_dim=0 if batch_axis is None else batch_axis)


def _tensor_scatter(op_type: str, py_name: str):
    def fn(tensor, indices, updates, name: str | None = None) -> ops.Tensor:
        return apply_op(op_type, name=name, tensor=tensor, indices=indices, updates=updates)

    fn.__name__ = fn.__qualname__ = py_name
    fn.__doc__ = (f"A copy of `tensor` with `updates` applied at N-d `indices` (a "
                  f"`{op_type}` op).")
    return fn


tensor_scatter_nd_update = _tensor_scatter("TensorScatterUpdate", "tensor_scatter_nd_update")
tensor_scatter_nd_add = _tensor_scatter("TensorScatterAdd", "tensor_scatter_nd_add")
tensor_scatter_nd_sub = _tensor_scatter("TensorScatterSub", "tensor_scatter_nd_sub")
tensor_scatter_nd_max = _tensor_scatter("TensorScatterMax", "tensor_scatter_nd_max")
tensor_scatter_nd_min = _tensor_scatter("TensorScatterMin", "tensor_scatter_nd_min")
# TF's v1 names
tensor_scatter_update = tensor_scatter_nd_update
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub


def roll(input, shift, axis, name=None) -> ops.Tensor:  # noqa: A002
    """Elements shifted along `axis` by `shift` (scalars or matching vectors), wrapping."""
    return apply_op("Roll", name=name, input=input, shift=shift, axis=axis)


def invert_permutation(x, name=None) -> ops.Tensor:
    """y[x[i]] = i."""
    return apply_op("InvertPermutation", name=name, x=x)


def setdiff1d(x, y, index_dtype=dtypes.int32, name=None):
    """(values of x not in y, their positions in x): TF 1's tf.setdiff1d."""
    return apply_op("ListDiff", name=name, x=x, y=y, out_idx=index_dtype)


def fake_quant_with_min_max_args(inputs, min=-6.0, max=6.0, num_bits=8,  # noqa: A002
                                 narrow_range=False, name=None) -> ops.Tensor:
    return apply_op("FakeQuantWithMinMaxArgs", name=name, inputs=inputs, min=min, max=max,
                    num_bits=num_bits, narrow_range=narrow_range)


def fake_quant_with_min_max_vars(inputs, min, max, num_bits=8,  # noqa: A002
                                 narrow_range=False, name=None) -> ops.Tensor:
    return apply_op("FakeQuantWithMinMaxVars", name=name, inputs=inputs, min=min, max=max,
                    num_bits=num_bits, narrow_range=narrow_range)


def fake_quant_with_min_max_vars_per_channel(inputs, min, max, num_bits=8,  # noqa: A002
                                             narrow_range=False, name=None) -> ops.Tensor:
    return apply_op("FakeQuantWithMinMaxVarsPerChannel", name=name, inputs=inputs, min=min,
                    max=max, num_bits=num_bits, narrow_range=narrow_range)


quantization = types.SimpleNamespace(
    fake_quant_with_min_max_args=fake_quant_with_min_max_args,
    fake_quant_with_min_max_vars=fake_quant_with_min_max_vars,
    fake_quant_with_min_max_vars_per_channel=fake_quant_with_min_max_vars_per_channel)


quantization = types.SimpleNamespace(
    fake_quant_with_min_max_args=fake_quant_with_min_max_args,
    fake_quant_with_min_max_vars=fake_quant_with_min_max_vars,
    fake_quant_with_min_max_vars_per_channel=fake_quant_with_min_max_vars_per_channel)


__all__ = [
    "newaxis", "placeholder", "placeholder_with_default", "identity", "identity_n",
    "stop_gradient", "check_numerics", "no_op", "group", "tuple", "with_dependencies",
    "reshape", "shape", "shape_n", "size", "rank", "expand_dims", "squeeze", "transpose",
    "matrix_transpose", "concat", "stack", "unstack", "split", "fill",
    "zeros", "ones", "zeros_like", "ones_like", "tile", "slice", "strided_slice", "gather",
    "gather_nd", "scatter_nd", "one_hot", "pad", "broadcast_to", "reverse", "where",
    "where_v2", "boolean_mask", "unique", "unique_with_counts", "broadcast_dynamic_shape",
    "reverse_sequence", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
    "tensor_scatter_nd_sub", "tensor_scatter_nd_max", "tensor_scatter_nd_min",
    "tensor_scatter_update", "tensor_scatter_add", "tensor_scatter_sub", "roll",
    "invert_permutation", "setdiff1d", "quantization",
]

# The operator overloads live in math_ops; make sure they are installed with array_ops.
from aioflow.ops import math_ops  # noqa: E402, F401

ops.register_builder("unstack", unstack)


def diag_part(input, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """The diagonal [D1..Dk] of a [D1..Dk, D1..Dk] tensor (TF's array_ops.diag_part,
    the DiagPart op; tf.linalg.diag_part is MatrixDiagPartV3)."""
    return apply_op("DiagPart", name=name, input=input)
