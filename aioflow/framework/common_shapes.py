"""Shape functions for the built-in ops: `fn(op) -> [TensorShape, ...]`, one per output.

Each follows TF's shape function for the op, but only as far as is cheap: an unknown
shape is always a valid answer. Shapes that cannot fit raise ValueError, as TF's graph
construction does.
"""

from __future__ import annotations

import math

import numpy as np

from aioflow.framework.constant_value import constant_value, constant_value_as_shape, range_size
from aioflow.framework.tensor_shape import TensorShape, unknown_shape

UNKNOWN = TensorShape(None)
SCALAR = TensorShape([])
# TensorShape::MaxDimensions(): no tensor has a higher rank, so a rank read off a tensor's
# size beyond it is not built as a list of unknown dims (a shape input of 2**30 elements
# would otherwise make a 2**30-long list at import); the shape is then just unknown.
MAX_RANK = 254
_MAX_ELEMENTS = 2**63 - 1


def _dims(shape: TensorShape) -> list | None:
    return None if shape.rank is None else shape.as_list()


def _axis(axis: int, rank: int, op) -> int:
    if not -rank <= axis < rank:
        raise ValueError(
            f"Dimension {axis} must be >= {-rank} and < {rank} for '{op.name}' ({op.type})")
    return axis + rank if axis < 0 else axis


def _of_rank(rank: int | None) -> TensorShape:
    """A shape of `rank` unknown dims; of unknown rank when `rank` is unknown or too high."""
    return UNKNOWN if rank is None or rank > MAX_RANK else unknown_shape(rank)


def _scalar_const(op, index: int):
    """The constant value of scalar input `index`, or None when it is not known; a
    constant that is not a scalar is TF's shape-function error."""
    value = constant_value(op.inputs[index], fold=True)
    if value is not None and np.ndim(value) != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {np.ndim(value)} for "
                         f"'{op.name}' (op: '{op.type}')")
    return value


def _const_ints(tensor) -> list[int] | None:
    value = constant_value(tensor, fold=True)
    return None if value is None else [int(v) for v in np.ravel(value)]


# -- generic ---------------------------------------------------------------------------------

def unknown(op) -> list[TensorShape]:
    """Every output of unknown shape."""
    return [UNKNOWN] * len(op.outputs)


def scalar(op) -> list[TensorShape]:
    """One scalar output."""
    return [SCALAR]


def no_outputs(op) -> list[TensorShape]:
    return []


def unchanged_shape(op) -> list[TensorShape]:
    """The output has the first input's shape (element-wise unary ops, Identity, ...)."""
    return [op.inputs[0].shape]


def unchanged_shapes(op) -> list[TensorShape]:
    """Output i has input i's shape (IdentityN)."""
    return [t.shape for t in op.inputs]


def merge_all_inputs(op) -> list[TensorShape]:
    """All inputs have one shape, which is the output's (AddN)."""
    out = UNKNOWN
    for t in op.inputs:
        out = out.merge_with(t.shape)
    return [out]


def broadcast_shapes(x: TensorShape, y: TensorShape) -> TensorShape:
    """NumPy broadcasting of two partial shapes (TF's BroadcastBinaryOpShapeFn)."""
    if x._dims is not None and x._dims == y._dims:  # the common case: one shape
        return x
    dx, dy = _dims(x), _dims(y)
    if dx is None or dy is None:
        return UNKNOWN
    n = max(len(dx), len(dy))
    dx = [1] * (n - len(dx)) + dx
    dy = [1] * (n - len(dy)) + dy
    out = []
    for a, b in zip(dx, dy, strict=True):
        if a is None or b is None:
            known = a if a is not None else b
            out.append(known if known is not None and known > 1 else None)
        elif a == 1:
            out.append(b)
        elif b == 1 or a == b:
            out.append(a)
        else:
            raise ValueError(
                f"Dimensions must be equal, but are {a} and {b} "
                f"with input shapes: {x.as_list()}, {y.as_list()}.")
    return TensorShape(out)


def broadcast_binary(op) -> list[TensorShape]:
    """Element-wise binary ops with broadcasting."""
    return [broadcast_shapes(op.inputs[0].shape, op.inputs[1].shape)]


def equality(op) -> list[TensorShape]:
    """Equal/NotEqual: broadcasting, or unknown when incompatible_shape_error is false and
    the shapes do not broadcast (the kernel then gives a scalar)."""
    try:
        return broadcast_binary(op)
    except ValueError:
        if op.get_attr("incompatible_shape_error"):
            raise
        return [UNKNOWN]


# -- reductions and matmul -------------------------------------------------------------------

def reduction(op) -> list[TensorShape]:
    """Sum/Mean/...: input shape without the (constant) reduced axes, or with 1s if keep_dims."""
    dims = _dims(op.inputs[0].shape)
    keep = op.get_attr("keep_dims")
    axes = _const_ints(op.inputs[1])
    if axes is None:
        return [unknown_shape(len(dims)) if keep and dims is not None else UNKNOWN]
    if dims is None:
        return [UNKNOWN]
    reduced = set()
    for a in axes:
        if not -len(dims) <= a < len(dims):
            raise ValueError(
                f"Invalid reduction dimension {a} for input with {len(dims)} dimensions. "
                f"for '{op.name}' ({op.type})")
        reduced.add(a % len(dims))
    if keep:
        return [TensorShape([1 if i in reduced else d for i, d in enumerate(dims)])]
    return [TensorShape([d for i, d in enumerate(dims) if i not in reduced])]


def arg_min_max(op) -> list[TensorShape]:
    """ArgMax/ArgMin: the input shape without the (constant) dimension."""
    dims = _dims(op.inputs[0].shape)
    axis = _scalar_const(op, 1)
    if dims is None:
        return [UNKNOWN]
    if axis is None:
        return [unknown_shape(max(len(dims) - 1, 0))]
    if not dims:
        return [SCALAR]
    a = _axis(int(axis), len(dims), op)
    return [TensorShape(dims[:a] + dims[a + 1:])]


def _merge_dim(a, b, op):
    if a is not None and b is not None and a != b:
        raise ValueError(
            f"Dimensions must be equal, but are {a} and {b} for '{op.name}' ({op.type}) with "
            f"input shapes: {op.inputs[0].shape.as_list()}, {op.inputs[1].shape.as_list()}.")
    return a if a is not None else b


def matmul(op) -> list[TensorShape]:
    """[m, k] x [k, n] -> [m, n], with transpose_a/transpose_b."""
    a = op.inputs[0].shape.with_rank(2).as_list()
    b = op.inputs[1].shape.with_rank(2).as_list()
    if op.get_attr("transpose_a"):
        a = a[::-1]
    if op.get_attr("transpose_b"):
        b = b[::-1]
    _merge_dim(a[1], b[0], op)
    return [TensorShape([a[0], b[1]])]


def batch_matmul(op) -> list[TensorShape]:
    """[..., m, k] x [..., k, n] -> [..., m, n] with broadcast batch dims (BatchMatMulV2)."""
    x, y = op.inputs[0].shape, op.inputs[1].shape
    if x.rank is None or y.rank is None:
        return [UNKNOWN]
    x, y = x.with_rank_at_least(2).as_list(), y.with_rank_at_least(2).as_list()
    rows = x[-1] if op.get_attr("adj_x") else x[-2]
    inner_x = x[-2] if op.get_attr("adj_x") else x[-1]
    cols = y[-2] if op.get_attr("adj_y") else y[-1]
    inner_y = y[-1] if op.get_attr("adj_y") else y[-2]
    _merge_dim(inner_x, inner_y, op)
    if op.type == "BatchMatMul":
        batch = TensorShape(x[:-2]).merge_with(TensorShape(y[:-2]))
    else:
        batch = broadcast_shapes(TensorShape(x[:-2]), TensorShape(y[:-2]))
    return [batch.concatenate([rows, cols])]


# -- array ops -------------------------------------------------------------------------------

def const(op) -> list[TensorShape]:
    """The shape written in the `value` TensorProto, read without building the value (a
    Const of shape [2**33] with one float_val imports at once, as in TF)."""
    proto = op._get_attr_proto("value").tensor.tensor_shape
    if proto.unknown_rank:
        return [UNKNOWN]
    dims = [d.size for d in proto.dim]
    text = "[" + ",".join(str(d) for d in dims) + "]"
    if any(d < 0 for d in dims):
        raise ValueError(f"Shape {text} is not fully defined for '{op.name}' (op: 'Const')")
    if math.prod(dims) > _MAX_ELEMENTS:
        raise ValueError(f"Shape {text} is too large (more than 2**63 - 1 entries) for "
                         f"'{op.name}' (op: 'Const')")
    return [TensorShape(dims)]


def shape_attr(op) -> list[TensorShape]:
    """The `shape` attr (Placeholder, PlaceholderWithDefault)."""
    return [op.get_attr("shape")]


def shape_op(op) -> list[TensorShape]:
    """Shape/ShapeN: a vector per input, as long as its rank."""
    return [TensorShape([t.shape.rank]) for t in op.inputs]


def reshape(op) -> list[TensorShape]:
    """The (partially) constant `shape` input, with one -1 resolved when sizes are known."""
    target = constant_value_as_shape(op.inputs[1], fold=True)
    dims = _dims(target)
    if dims is None:
        return [UNKNOWN]
    value = constant_value(op.inputs[1], fold=True)
    in_shape = op.inputs[0].shape
    if value is not None and in_shape.is_fully_defined():
        value = [int(v) for v in np.ravel(value)]
        known = int(np.prod([v for v in value if v != -1], dtype=np.int64))
        total = in_shape.num_elements()
        if value.count(-1) == 1:
            if known == 0 or total % known:
                raise ValueError(
                    f"Dimension size must be evenly divisible by {known} but is {total} "
                    f"for '{op.name}' (op: '{op.type}')")
            dims = [total // known if v == -1 else v for v in value]
        elif known != total:
            raise ValueError(
                f"Cannot reshape a tensor with {total} elements to shape {value} "
                f"({known} elements) for '{op.name}' (op: '{op.type}')")
    return [TensorShape(dims)]


def transpose(op) -> list[TensorShape]:
    """The input shape permuted by the constant `perm`."""
    dims = _dims(op.inputs[0].shape)
    perm = _const_ints(op.inputs[1])
    if perm is None:
        if dims is None:
            return [_of_rank(op.inputs[1].shape.num_elements())]
        return [unknown_shape(len(dims))]
    if dims is None:
        return [_of_rank(len(perm))]
    if len(perm) != len(dims):
        raise ValueError(
            f"Dimension must be {len(dims)} but is {len(perm)} for '{op.name}' (op: 'Transpose')")
    for p in perm:
        if not -len(dims) <= p < len(dims):
            raise ValueError(f"perm dim {p} is out of range of input rank {len(dims)} for "
                             f"'{op.name}' (op: 'Transpose')")
    return [TensorShape([dims[p] for p in perm])]


def concat(op) -> list[TensorShape]:
    """ConcatV2 (axis last) / Concat (axis first): dims equal except along the axis."""
    inputs = list(op.inputs)
    axis_t, parts = (inputs[0], inputs[1:]) if op.type == "Concat" else (inputs[-1], inputs[:-1])
    axis = _scalar_const(op, 0 if op.type == "Concat" else len(inputs) - 1)
    rank = next((t.shape.rank for t in parts if t.shape.rank is not None), None)
    if rank is None:
        return [UNKNOWN]
    if axis is None:
        return [unknown_shape(rank)]
    a = _axis(int(axis), rank, op)
    out: list = [None] * rank
    total = 0
    for t in parts:
        d = _dims(t.shape.with_rank(rank))
        for i in range(rank):
            if i != a:
                out[i] = _merge_dim(out[i], d[i], op)
        total = None if total is None or d[a] is None else total + d[a]
    out[a] = total
    return [TensorShape(out)]


def pack(op) -> list[TensorShape]:
    """Pack: the common input shape with N inserted at `axis`."""
    shape = merge_all_inputs(op)[0]
    dims = _dims(shape)
    if dims is None:
        return [UNKNOWN]
    axis = _axis(op.get_attr("axis"), len(dims) + 1, op)
    return [TensorShape(dims[:axis] + [len(op.inputs)] + dims[axis:])]


def unpack(op) -> list[TensorShape]:
    """Unpack: `num` outputs, each the input shape without `axis`."""
    num = op.get_attr("num")
    dims = _dims(op.inputs[0].shape)
    if dims is None:
        return [UNKNOWN] * num
    axis = _axis(op.get_attr("axis"), len(dims), op)
    return [TensorShape(dims[:axis] + dims[axis + 1:])] * num


def expand_dims(op) -> list[TensorShape]:
    """The input shape with a 1 inserted at the constant `dim`."""
    dims = _dims(op.inputs[0].shape)
    dim = constant_value(op.inputs[1])
    if dims is None:
        return [UNKNOWN]
    if dim is None:
        return [unknown_shape(len(dims) + 1)]
    if np.size(dim) != 1:
        raise ValueError(f"'dim' input must be a tensor with a single value for '{op.name}' "
                         f"(op: 'ExpandDims') with input shapes: "
                         f"{shape_debug(op.inputs[0].shape)}, {shape_debug(op.inputs[1].shape)}.")
    axis = int(np.ravel(dim)[0])
    if not -len(dims) - 1 <= axis <= len(dims):
        raise ValueError(
            f"dim {axis} not in the interval [{-len(dims) - 1}, {len(dims)}]. for '{op.name}'")
    axis = axis + len(dims) + 1 if axis < 0 else axis
    return [TensorShape(dims[:axis] + [1] + dims[axis:])]


def squeeze(op) -> list[TensorShape]:
    """The input shape without the `squeeze_dims` (or without every 1)."""
    dims = _dims(op.inputs[0].shape)
    if dims is None:
        return [UNKNOWN]
    axes = {_axis(a, len(dims), op) for a in op.get_attr("squeeze_dims")}
    out = []
    for i, d in enumerate(dims):
        if i in axes:
            if d is not None and d != 1:
                raise ValueError(
                    f"Can not squeeze dim[{i}], expected a dimension of 1, got {d} "
                    f"for '{op.name}' (op: 'Squeeze')")
        elif axes or d != 1:
            if d is None and not axes:
                return [UNKNOWN]
            out.append(d)
    return [TensorShape(out)]


def fill(op) -> list[TensorShape]:
    """Fill/BroadcastTo: the shape the `dims` input holds."""
    return [constant_value_as_shape(op.inputs[0] if op.type == "Fill" else op.inputs[1], fold=True)]


def range_shape(op) -> list[TensorShape]:
    """Range: a vector, of known length when start/limit/delta are constant."""
    start, limit, delta = (_scalar_const(op, i) for i in range(3))
    if start is None or limit is None or delta is None or delta == 0:
        return [TensorShape([None])]
    return [TensorShape([range_size(start, limit, delta)])]


def select(op) -> list[TensorShape]:
    """Select: t and e have one shape, the output's."""
    return [op.inputs[1].shape.merge_with(op.inputs[2].shape)]


def select_v2(op) -> list[TensorShape]:
    """SelectV2: the broadcast of condition, t and e."""
    c, t, e = (x.shape for x in op.inputs)
    return [broadcast_shapes(c, broadcast_shapes(t, e))]


def strided_slice(op) -> list[TensorShape]:
    """StridedSlice with constant begin/end/strides on a known-rank input; else unknown."""
    dims = _dims(op.inputs[0].shape)
    spec = [constant_value(t) for t in op.inputs[1:]]
    if dims is None:
        return [UNKNOWN]
    if any(s is None for s in spec):
        return [_strided_slice_rank(op, dims)]
    _, final_shape = strided_slice_spec(
        dims, *(np.ravel(s).tolist() for s in spec),
        **{k: op.get_attr(k) for k in _SLICE_MASKS})
    return [TensorShape(final_shape)]


def _strided_slice_rank(op, dims) -> TensorShape:
    """The shape when begin/end are computed: the rank follows from the masks; sliced dims
    are unknown, shrunk dims vanish, new axes are 1, dims under the ellipsis are kept."""
    n = op.inputs[1].shape.num_elements() if op.inputs[1].shape.rank == 1 else None
    if n is None or n > MAX_RANK:
        return UNKNOWN
    ellipsis, new_axis, shrink = (op.get_attr(k) for k in
                                  ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask"))
    if not ellipsis:
        ellipsis = 1 << n
        n += 1
    out: list = []
    full = 0
    for i in range(n):
        bit = 1 << i
        if ellipsis & bit:
            after = sum(1 for j in range(i + 1, n) if new_axis & (1 << j))
            stop = min(len(dims) - (n - i) + 1 + after, len(dims))
            out.extend(dims[full:stop])
            full = max(full, stop)
        elif new_axis & bit:
            out.append(1)
        else:
            if full == len(dims):
                return UNKNOWN
            if not shrink & bit:
                out.append(None)
            full += 1
    return TensorShape(out)


_SLICE_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
_NEW_AXIS, _SHRINK_AXIS = -1, -2


def strided_slice_spec(shape, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0,
                       new_axis_mask=0, shrink_axis_mask=0):
    """TF's ValidateStridedSliceOp: the NumPy index (ints and slices, one per input dim) and
    the final shape (None for unknown dims) of a strided slice of a tensor of `shape`.
    ValueError with TF's message when the spec does not fit the shape."""
    n = len(begin)
    if len(end) != n or len(strides) != n:
        raise ValueError(
            "Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
            f"[{n}], [{len(end)}], and [{len(strides)}] instead.")
    if ellipsis_mask & (ellipsis_mask - 1):
        raise ValueError("Multiple ellipses in slice spec not allowed")
    if not ellipsis_mask:  # an implicit ellipsis at the end
        ellipsis_mask = 1 << n
        n += 1
    rank = len(shape)
    # Sparse spec -> dense spec: one entry per input dimension.
    d_begin, d_end, d_stride = [0] * rank, [0] * rank, [1] * rank
    d_bmask = d_emask = d_shrink = 0
    gather: list[int] = []
    full = 0
    for i in range(n):
        bit = 1 << i
        if ellipsis_mask & bit:
            after = sum(1 for j in range(i + 1, n) if new_axis_mask & (1 << j))
            stop = min(rank - (n - i) + 1 + after, rank)
            while full < stop:
                d_bmask |= 1 << full
                d_emask |= 1 << full
                gather.append(full)
                full += 1
        elif new_axis_mask & bit:
            gather.append(_NEW_AXIS)
        else:
            if full == rank:
                raise ValueError(
                    f"Index out of range using input dim {full}; input has only {rank} dims")
            d_begin[full], d_end[full], d_stride[full] = begin[i], end[i], strides[i]
            if begin_mask & bit:
                d_bmask |= 1 << full
            if end_mask & bit:
                d_emask |= 1 << full
            if shrink_axis_mask & bit:
                d_shrink |= 1 << full
                gather.append(_SHRINK_AXIS)
            else:
                gather.append(full)
            full += 1
    index: list = []
    sizes: list = []
    for i in range(rank):
        b, e, s, dim = d_begin[i], d_end[i], d_stride[i], shape[i]
        bit = 1 << i
        if s == 0:
            raise ValueError(f"strides[{i}] must be non-zero")
        shrink = bool(d_shrink & bit)
        if shrink and s <= 0:
            raise ValueError("only stride 1 allowed on non-range indexing.")
        if dim is None or dim < 0:
            sizes.append(1 if shrink else None)
            index.append(None)
            continue
        if shrink:
            b = b + dim if b < 0 else b
            if b < 0 or b >= dim:
                raise ValueError(f"slice index {d_begin[i]} of dimension {i} out of bounds.")
            index.append(b)
            sizes.append(1)
            continue
        lo, hi = (0, dim) if s > 0 else (-1, dim - 1)
        if d_bmask & bit:
            b = lo if s > 0 else hi
        else:
            b = min(max(b + dim if b < 0 else b, lo), hi)
        if d_emask & bit:
            e = hi if s > 0 else lo
        else:
            e = min(max(e + dim if e < 0 else e, lo), hi)
        length = e - b
        if length == 0 or (length < 0) != (s < 0):
            size = 0
        else:
            size = (abs(length) + abs(s) - 1) // abs(s)
        sizes.append(size)
        index.append(slice(b, None if e < 0 else e, s) if size else slice(0, 0))
    final = [sizes[g] if g >= 0 else 1 for g in gather if g != _SHRINK_AXIS]
    return tuple(index), final


def tile(op) -> list[TensorShape]:
    """Input dims times the constant multiples."""
    dims = _dims(op.inputs[0].shape)
    mult = _const_ints(op.inputs[1])
    if mult is None:
        return [UNKNOWN if dims is None else unknown_shape(len(dims))]
    if dims is None:
        return [_of_rank(len(mult))]
    if len(mult) != len(dims):  # TF's Tile shape function
        raise ValueError(f"Shape must be rank {len(dims)} but is rank {len(mult)} for "
                         f"'{op.name}' (op: '{op.type}')")
    return [TensorShape([None if d is None else d * m for d, m in zip(dims, mult, strict=True)])]


def slice_shape(op) -> list[TensorShape]:
    """Slice with a constant size (-1 means to the end, known when begin is constant)."""
    size = _const_ints(op.inputs[2])
    if size is None:
        return [unknown_shape(op.inputs[0].shape.rank)]
    begin = _const_ints(op.inputs[1])
    dims = _dims(op.inputs[0].shape)
    if dims is not None and len(dims) != len(size) or begin is not None and len(begin) != len(
            size):
        return [_of_rank(len(size))]  # the kernel refuses it; TF's import accepts it
    out = []
    for i, s in enumerate(size):
        if s != -1:
            out.append(s)
        elif begin is not None and dims is not None and dims[i] is not None:
            out.append(dims[i] - begin[i])
        else:
            out.append(None)
    return [TensorShape(out)]


def where(op) -> list[TensorShape]:
    """Where: [num_true, rank]."""
    return [TensorShape([None, op.inputs[0].shape.rank])]


def gather(op) -> list[TensorShape]:
    """Gather/GatherV2: params[:axis] + indices[batch_dims:] + params[axis + 1:]."""
    params, indices = _dims(op.inputs[0].shape), _dims(op.inputs[1].shape)
    batch_dims = 0 if op.type == "Gather" else op.get_attr("batch_dims")
    if not -2**31 <= batch_dims < 2**31:
        raise ValueError(f"Attr batch_dims has value {batch_dims} out of range for an int32 "
                         f"for '{op.name}' (op: '{op.type}')")
    if params is None or indices is None:
        return [UNKNOWN]
    if len(indices) < abs(batch_dims):
        raise ValueError(f"Shape must be at least rank {abs(batch_dims)} but is rank "
                         f"{len(indices)} for '{op.name}' (op: '{op.type}')")
    if batch_dims < 0:
        batch_dims += len(indices)
    if op.type == "Gather":
        axis = 0
    else:
        a = _scalar_const(op, 2)
        if a is None:
            return [unknown_shape(len(params) + len(indices) - 1 - batch_dims)]
        axis = int(a)
    axis = _axis(axis, len(params), op)
    return [TensorShape(params[:axis] + indices[batch_dims:] + params[axis + 1:])]


def one_hot(op) -> list[TensorShape]:
    """OneHot: the indices shape with `depth` inserted at `axis`."""
    dims = _dims(op.inputs[0].shape)
    if dims is None:
        return [UNKNOWN]
    depth = _scalar_const(op, 1)
    depth = None if depth is None else int(depth)
    axis = op.get_attr("axis")
    axis = len(dims) if axis == -1 else axis
    return [TensorShape(dims[:axis] + [depth] + dims[axis:])]


def split(op) -> list[TensorShape]:
    """Split: the value shape with the (constant) split dim divided by num_split."""
    num = op.get_attr("num_split")
    dims = _dims(op.inputs[1].shape)
    axis = _scalar_const(op, 0)
    if dims is None:
        return [UNKNOWN] * num
    if axis is None:
        return [unknown_shape(len(dims))] * num
    a = _axis(int(axis), len(dims), op)
    if dims[a] is not None:
        if dims[a] % num:
            raise ValueError(
                f"Dimension size must be evenly divisible by {num} but is {dims[a]} "
                f"for '{op.name}' (op: 'Split')")
        dims[a] //= num
    return [TensorShape(dims)] * num


def split_v(op) -> list[TensorShape]:
    """SplitV: constant size_splits along the constant split dim (one -1 inferred)."""
    num = op.get_attr("num_split")
    dims = _dims(op.inputs[0].shape)
    sizes = _const_ints(op.inputs[1])
    axis = _scalar_const(op, 2)
    if dims is None:
        return [UNKNOWN] * num
    if axis is None or sizes is None:
        return [unknown_shape(len(dims))] * num
    a = _axis(int(axis), len(dims), op)
    if sizes.count(-1) == 1:
        i = sizes.index(-1)
        sizes[i] = None if dims[a] is None else dims[a] - (sum(sizes) + 1)
    return [TensorShape(dims[:a] + [s] + dims[a + 1:]) for s in sizes]


def pad(op) -> list[TensorShape]:
    """Pad/PadV2: each dim grown by its constant paddings."""
    dims = _dims(op.inputs[0].shape)
    paddings = constant_value(op.inputs[1])
    if paddings is None:
        rank = None if dims is None else len(dims)
        if rank is None and op.inputs[1].shape.rank == 2:
            rank = op.inputs[1].shape.as_list()[0]
        return [_of_rank(rank)]
    paddings = np.asarray(paddings)
    where = f"for '{op.name}' (op: '{op.type}')"
    # TF's PadShapeFn: paddings is a [rank, 2] matrix, rank the input's
    if paddings.ndim != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {paddings.ndim} {where}")
    if paddings.shape[1] != 2:
        raise ValueError(f"Dimension must be 2 but is {paddings.shape[1]} {where}")
    if dims is not None and paddings.shape[0] != len(dims):
        raise ValueError(f"Shape must be rank {paddings.shape[0]} but is rank {len(dims)} "
                         f"{where}")
    if dims is None:
        dims = [None] * len(paddings)
    return [TensorShape([None if d is None else d + int(p[0]) + int(p[1])
                         for d, p in zip(dims, paddings, strict=True)])]


def mirror_pad(op) -> list[TensorShape]:
    """MirrorPad: as Pad, but TF's shape function also rejects negative constant paddings."""
    paddings = constant_value(op.inputs[1])
    if paddings is not None and (np.asarray(paddings) < 0).any():
        raise ValueError(f"Paddings must be non-negative for '{op.name}' (op: 'MirrorPad')")
    return pad(op)


def reverse_v2(op) -> list[TensorShape]:
    """ReverseV2: the input's shape; constant axes are checked as TF's shape function does."""
    shape = op.inputs[0].shape
    op.inputs[1].shape.with_rank(1)
    rank = shape.rank
    if rank is not None and rank > 8:
        raise ValueError("reverse does not work on tensors with more than 8 dimensions for "
                         f"'{op.name}' (op: 'ReverseV2')")
    axes = _const_ints(op.inputs[1])
    if axes is not None and rank is not None:
        try:
            canonical_axes(axes, rank)
        except ValueError as e:
            raise ValueError(f"{e} for '{op.name}' (op: 'ReverseV2')") from None
    return [shape]


def canonical_axes(axes: list[int], rank: int) -> list[int]:
    """ReverseV2's axes made non-negative; ValueError with TF's message (its missing ']'
    included) for an axis out of range or given twice."""
    seen: list[int] = []
    for i, axis in enumerate(axes):
        a = axis + rank if axis < 0 else axis
        if not 0 <= a < rank:
            raise ValueError(f"'axis'[{i}] = {axis} is out of valid range [0, {rank - 1}")
        if a in seen:
            raise ValueError(f"axis {a} specified more than once.")
        seen.append(a)
    return seen


def gather_nd(op) -> list[TensorShape]:
    """GatherNd: indices.shape[:-1] + params.shape[indices.shape[-1]:]."""
    params = op.inputs[0].shape
    indices = op.inputs[1].shape
    if indices.rank is not None and indices.rank < 1:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 for '{op.name}' "
                         "(op: 'GatherNd')")
    depth = None if indices.rank is None else indices.as_list()[-1]
    if params.rank is None or depth is None:
        return [UNKNOWN]
    if depth > params.rank:
        raise ValueError(
            "indices.shape[-1] must be <= params.rank, but saw indices shape: "
            f"{shape_debug(indices)} and params shape: {shape_debug(params)} "
            f"for '{op.name}' (op: 'GatherNd')")
    return [TensorShape(indices.as_list()[:-1] + params.as_list()[depth:])]


def scatter_nd(op) -> list[TensorShape]:
    """ScatterNd: the shape the `shape` input holds, checked against indices and updates as
    TF's ScatterNdShapeHelper does."""
    indices, updates = op.inputs[0].shape, op.inputs[1].shape
    if indices.rank == 0 or updates.rank == 0:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 for '{op.name}' "
                         "(op: 'ScatterNd')")
    out = constant_value_as_shape(op.inputs[2], fold=True)
    sizes = [s.num_elements() for s in (out, indices, updates)]
    if sizes[0] == 0 and ((sizes[1] or 0) > 0 or (sizes[2] or 0) > 0):
        raise ValueError(f"Indices and updates specified for empty input for '{op.name}' "
                         "(op: 'ScatterNd')")
    if indices.rank is not None and updates.rank is not None \
            and indices.as_list()[-1] is not None:
        _check_scatter_nd_shapes(op, indices, updates, out)
    return [out]


def _check_scatter_nd_shapes(op, indices, updates, out) -> None:
    """updates.shape must be indices.shape[:-1] + out.shape[indices.shape[-1]:]."""
    outer, depth = indices.rank - 1, indices.as_list()[-1]
    prefix_i, prefix_u = indices[:outer], updates[:outer]
    suffix_o = out if out.rank is None else out[min(depth, out.rank):]
    suffix_u = updates[min(outer, updates.rank):]
    for (a, b, head) in (
        (prefix_i, prefix_u,
         f"Dimensions [0,{outer}) of indices[shape={shape_debug(indices)}] = "
         f"{shape_debug(prefix_i)} must match dimensions [0,{outer}) of updates[shape="
         f"{shape_debug(updates)}] = {shape_debug(prefix_u)}"),
        (suffix_o, suffix_u,
         f"Dimensions [{depth},{'?' if out.rank is None else out.rank}) of input[shape="
         f"{shape_debug(out)}] = {shape_debug(suffix_o)} must match dimensions "
         f"[{outer},{updates.rank}) of updates[shape={shape_debug(updates)}] = "
         f"{shape_debug(suffix_u)}"),
    ):
        try:
            a.merge_with(b)
        except ValueError as e:
            raise ValueError(f"{head}: {e} for '{op.name}' (op: 'ScatterNd')") from None


def shape_debug(shape: TensorShape) -> str:
    """A partial shape as TF's InferenceContext::DebugString writes it: [2,?] or ?."""
    if shape.rank is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"
