"""Gradient functions of the array ops (TF's array_grad.py): the same ops as TF's Python
gradient functions, in the same order. Gather and GatherV2 along axis 0 give IndexedSlices.
"""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.constant_value import constant_value
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients.indexed_slices_ops import indexed_slices_to_tensor
from aioflow.gradients.registry import NotDifferentiable, RegisterGradient
from aioflow.ops import array_ops, control_flow_ops, math_ops, segment_ops
from aioflow.ops.constant_op import constant


def _gen(op_type: str, name: str | None = None, **keywords):
    return apply_op(op_type, name=name, **keywords)


def _indexed_slices_to_tensor_no_warning(value):
    if not isinstance(value, IndexedSlices):
        return value
    return indexed_slices_to_tensor(value, warn=False)


@RegisterGradient("Pack")
def _pack_grad(op, grad):
    return array_ops.unstack(grad, num=op.get_attr("N"), axis=op.get_attr("axis"))


@RegisterGradient("Unpack")
def _unpack_grad(op, *grads):
    return array_ops.stack(grads, axis=op.get_attr("axis"))


def _extract_input_shapes(inputs):
    sizes = []
    for x in inputs:
        input_shape = array_ops.shape(x)
        if not isinstance(input_shape, ops.Tensor) or input_shape.op.type != "Const":
            return array_ops.shape_n(inputs)
        sizes.append(input_shape)
    return sizes


def _concat_grad_helper(op, grad, start_value_index, end_value_index, dim_index):
    if len(op.inputs) == 2:
        return grad + [None] if end_value_index <= dim_index else [None] + grad
    concat_dim = op.inputs[dim_index]
    input_values = op.inputs[start_value_index:end_value_index]
    out_grads = []
    if isinstance(grad, ops.Tensor):
        if concat_dim.op.type == "Const":
            grad_context = control_flow_ops._output_context(grad.op)
            dim_context = control_flow_ops._output_context(concat_dim.op)
            if dim_context is not grad_context:
                value = constant_value(concat_dim)
                concat_dim = constant(value, dtype=concat_dim.dtype)
        non_neg_concat_dim = concat_dim % array_ops.rank(input_values[0])
        sizes = _extract_input_shapes(input_values)
        if len(sizes) > 16:
            sizes = array_ops.squeeze(array_ops.slice(
                array_ops.stack(sizes, axis=1), [non_neg_concat_dim, 0], [1, -1]))
            out_grads = array_ops.split(grad, sizes, non_neg_concat_dim)
        else:
            offset = _gen("ConcatOffset", concat_dim=non_neg_concat_dim, shape=sizes)
            for begin, size in zip(offset, sizes, strict=True):
                out_grads.append(array_ops.slice(grad, begin, size))
    elif isinstance(grad, IndexedSlices):
        out_grads = _concat_indexed_slices_grads(grad, concat_dim, input_values)
    else:
        raise TypeError(f"Expected Tensor or IndexedSlices, got {type(grad)}")
    return out_grads + [None] if end_value_index <= dim_index else [None] + out_grads


def _concat_indexed_slices_grads(grad, concat_dim, input_values) -> list:
    """The slices of an IndexedSlices gradient that fall in each concatenated input."""
    non_neg_concat_dim = concat_dim % array_ops.rank(input_values[0])
    concat_dim_static = constant_value(concat_dim)
    if concat_dim_static is None:
        raise ValueError("Can only compute IndexedSlices gradient with statically-known "
                         "concat_dim")
    concat_dim_static = int(concat_dim_static)
    if concat_dim_static < 0:
        rank = constant_value(array_ops.rank(input_values[0]))
        if rank is None:
            raise ValueError("Can only compute IndexedSlices gradient with negative "
                             "concat_dim when first value rank is statically-known.")
        concat_dim_static %= int(rank)
    sizes = [array_ops.shape(x) for x in input_values]
    out_grads = []
    if concat_dim_static > 0:
        # Rows are unchanged: slice each input's columns out of the values.
        shape_of_shape = array_ops.shape(sizes[0])
        mask = array_ops.concat(
            [array_ops.zeros(array_ops.expand_dims(non_neg_concat_dim, 0),
                             dtype=dtypes.int32), [1],
             array_ops.zeros(shape_of_shape - non_neg_concat_dim - 1, dtype=dtypes.int32)], 0)
        begin = array_ops.zeros(shape_of_shape, dtype=dtypes.int32)
        for size in sizes:
            new_values = array_ops.slice(
                grad.values, begin, array_ops.concat([[-1], array_ops.slice(size, [1], [-1])],
                                                     0))
            out_grads.append(IndexedSlices(new_values, grad.indices, size))
            begin = math_ops.add(begin, size * mask)
    else:
        # The rows of each input: those of its range of indices.
        start = constant(0, dtype=grad.indices.dtype)
        for size in sizes:
            size_concat_dim = array_ops.gather(size, non_neg_concat_dim)
            if size_concat_dim.dtype != grad.indices.dtype:
                size_concat_dim = math_ops.cast(size_concat_dim, dtype=grad.indices.dtype)
            end = start + size_concat_dim
            indices_to_select = array_ops.squeeze(array_ops.where(
                math_ops.logical_and(grad.indices >= start, grad.indices < end)), axis=[1])
            new_indices = array_ops.gather(grad.indices, indices_to_select) - start
            new_values = array_ops.gather(grad.values, indices_to_select)
            out_grads.append(IndexedSlices(new_values, new_indices, size))
            start = end
    return out_grads


@RegisterGradient("Concat")
def _concat_grad(op, grad):
    return _concat_grad_helper(op, grad, 1, len(op.inputs), 0)


@RegisterGradient("ConcatV2")
def _concat_v2_grad(op, grad):
    return _concat_grad_helper(op, grad, 0, -1, -1)


NotDifferentiable("ConcatOffset")


@RegisterGradient("Slice")
def _slice_grad(op, grad):
    input_vec = op.inputs[0]
    begin_vec = op.inputs[1]
    input_rank = array_ops.rank(input_vec)
    index_dtype = begin_vec.dtype
    slice_size = array_ops.shape(op.outputs[0], out_type=index_dtype)
    shape = array_ops.stack([input_rank, 1])
    before_pad = array_ops.reshape(begin_vec, shape)
    after_pad = array_ops.reshape(
        array_ops.shape(input_vec, out_type=index_dtype) - slice_size - begin_vec, shape)
    paddings = array_ops.concat([before_pad, after_pad], 1)
    return array_ops.pad(grad, paddings), None, None


def _static_or(t):
    value = constant_value(t)
    return value if value is not None else t


@RegisterGradient("StridedSlice")
def _strided_slice_grad(op, grad):
    begin, end, strides = op.inputs[1], op.inputs[2], op.inputs[3]
    x = array_ops.shape(op.inputs[0], out_type=begin.dtype)
    return (_gen("StridedSliceGrad", shape=_static_or(x), begin=_static_or(begin),
                 end=_static_or(end), strides=_static_or(strides), dy=grad,
                 begin_mask=op.get_attr("begin_mask"), end_mask=op.get_attr("end_mask"),
                 ellipsis_mask=op.get_attr("ellipsis_mask"),
                 new_axis_mask=op.get_attr("new_axis_mask"),
                 shrink_axis_mask=op.get_attr("shrink_axis_mask")),
            None, None, None)


@RegisterGradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    begin, end, strides = op.inputs[1], op.inputs[2], op.inputs[3]
    return None, None, None, None, array_ops.strided_slice(
        grad, begin, end, strides, begin_mask=op.get_attr("begin_mask"),
        end_mask=op.get_attr("end_mask"), ellipsis_mask=op.get_attr("ellipsis_mask"),
        new_axis_mask=op.get_attr("new_axis_mask"),
        shrink_axis_mask=op.get_attr("shrink_axis_mask"))


@RegisterGradient("Split")
def _split_grad(op, *grads):
    return None, array_ops.concat(list(grads), op.inputs[0])


@RegisterGradient("SplitV")
def _split_v_grad(op, *grads):
    returnval = array_ops.concat(list(grads), op.inputs[2])
    return [returnval] + [None] * (len(op.inputs) - 1)


NotDifferentiable("Const")


@RegisterGradient("Fill")
def _fill_grad(_, grad):
    return None, math_ops.reduce_sum(grad)


NotDifferentiable("ZerosLike")
NotDifferentiable("OnesLike")


@RegisterGradient("PreventGradient")
def _prevent_gradient_grad(op, _):
    raise LookupError(f"Gradient explicitly disabled. Reason: {op.get_attr('message')}")


@RegisterGradient("Gather")
def _gather_grad(op, grad):
    params = op.inputs[0]
    with ops.colocate_with(params):
        params_shape = array_ops.shape(params)
    indices = op.inputs[1]
    size = array_ops.expand_dims(array_ops.size(indices), 0)
    values_shape = array_ops.concat([size, params_shape[1:]], 0)
    values = array_ops.reshape(_indexed_slices_to_tensor_no_warning(grad), values_shape)
    indices = array_ops.reshape(indices, size)
    return [IndexedSlices(values, indices, params_shape), None]


def _get_batch_indices(params_shape, indices, batch_dims):
    batch_indices = indices
    indices_dtype = indices.dtype.base_dtype
    casted_params_shape = math_ops.cast(params_shape, indices_dtype)
    accum_dim_value = array_ops.ones((), dtype=indices_dtype)
    for dim in range(batch_dims, 0, -1):
        dim_value = casted_params_shape[dim - 1]
        accum_dim_value *= casted_params_shape[dim]
        start = array_ops.zeros((), dtype=indices_dtype)
        step = array_ops.ones((), dtype=indices_dtype)
        dim_indices = math_ops.range(start, dim_value, step)
        dim_indices *= accum_dim_value
        dim_shape = array_ops.concat(
            [array_ops.tile([1], [dim - 1]), [dim_value],
             array_ops.tile([1], [array_ops.rank(indices) - dim])], axis=0)
        batch_indices += array_ops.reshape(dim_indices, dim_shape)
    return batch_indices


def _batch_gather_grad(params_shape, values, indices, batch_dims, gather_dim_size):
    indices_size = array_ops.expand_dims(array_ops.size(indices), 0)
    if batch_dims:
        values_shape = array_ops.shape(values)
        outer_shape = values_shape[:batch_dims]
        inner_shape = values_shape[batch_dims:][1:]
        batch_size = _gen("Prod", input=outer_shape, reduction_indices=[0], keep_dims=False)
        flat_values_shape = array_ops.concat([[-1], inner_shape], 0)
        gather_dim_size *= batch_size
        indices = _get_batch_indices(params_shape, indices, batch_dims)
        values = array_ops.reshape(_indexed_slices_to_tensor_no_warning(values),
                                   flat_values_shape)
    indices = array_ops.reshape(indices, indices_size)
    params_grad = segment_ops.unsorted_segment_sum(values, indices, gather_dim_size)
    if batch_dims:
        params_grad = array_ops.reshape(
            params_grad, array_ops.concat([outer_shape, flat_values_shape], 0))
    return params_grad


@RegisterGradient("GatherV2")
def _gather_v2_grad(op, grad):
    params = op.inputs[0]
    with ops.colocate_with(params):
        params_shape = array_ops.shape(params)
    indices = op.inputs[1]
    indices_size = array_ops.expand_dims(array_ops.size(indices), 0)
    axis = op.inputs[2]
    axis_static = constant_value(axis)
    batch_dims = int(op.get_attr("batch_dims"))
    if batch_dims < 0:
        if indices.shape.rank is None:
            raise ValueError(
                "Currently, it is unsupported to take the gradient of tf.gather when "
                "batch_dims < 0 and the rank of the indices is unknown. Please pass a "
                "positive batch_dims or use tf.ensure_shape to update the shape of indices "
                f"when calling tf.gather. Got batch_dims={batch_dims} and indices={indices}")
        batch_dims += indices.shape.rank
    if axis_static is not None and int(axis_static) == 0:
        params_tail_shape = params_shape[1:]
        values_shape = array_ops.concat([indices_size, params_tail_shape], 0)
        values = array_ops.reshape(_indexed_slices_to_tensor_no_warning(grad), values_shape)
        indices = array_ops.reshape(indices, indices_size)
        params_grad = IndexedSlices(values, indices, params_shape)
    else:
        outer_shape = params_shape[:axis]
        inner_shape = params_shape[axis:][1:]
        values_shape = array_ops.concat([outer_shape, [-1], inner_shape], 0)
        values_dims = array_ops.size(values_shape)
        axis_dims = array_ops.size(outer_shape)
        outer_batches_indices = math_ops.range(batch_dims)
        batch_axis_indices = math_ops.range(batch_dims, axis_dims)
        inner_axes_indices = math_ops.range(axis_dims + 1, values_dims)
        values = array_ops.reshape(_indexed_slices_to_tensor_no_warning(grad), values_shape)
        transpose_dims = array_ops.concat(
            [outer_batches_indices, [axis_dims], batch_axis_indices, inner_axes_indices], 0)
        values_transpose = array_ops.transpose(values, transpose_dims)
        params_shape_transpose = array_ops.gather(params_shape, transpose_dims)
        params_grad = _batch_gather_grad(params_shape_transpose, values_transpose, indices,
                                         batch_dims, params_shape[axis])
        invert_transpose_dims = array_ops.concat(
            [outer_batches_indices, batch_axis_indices + 1, [batch_dims],
             inner_axes_indices], 0)
        params_grad = array_ops.transpose(params_grad, invert_transpose_dims)
    if not isinstance(params_grad, IndexedSlices):
        params_grad = array_ops.reshape(params_grad, array_ops.shape(params))
    return [params_grad, None, None]


@RegisterGradient("GatherNd")
def _gather_nd_grad(op, grad):
    ref = op.inputs[0]
    indices = op.inputs[1]
    ref_shape = array_ops.shape(ref, out_type=indices.dtype)
    if indices.shape.rank == 2 and indices.shape.dims[-1].value == 1:
        ref_grad = IndexedSlices(grad, array_ops.squeeze(indices, axis=-1), ref_shape)
    else:
        ref_grad = _gen("ScatterNd", indices=indices, updates=grad, shape=ref_shape,
                        bad_indices_policy=op.get_attr("bad_indices_policy"))
    return [ref_grad, None]


@RegisterGradient("CheckNumerics")
def _check_numerics_grad(op, grad):
    return array_ops.check_numerics(
        grad, "Not a number (NaN) or infinity (Inf) values detected in gradient. "
        f"{op.get_attr('message')}")


def _id_grad(_, grad):
    return grad


RegisterGradient("PlaceholderWithDefault")(_id_grad)
RegisterGradient("Identity")(_id_grad)
RegisterGradient("RefIdentity")(_id_grad)
RegisterGradient("Snapshot")(_id_grad)


@RegisterGradient("IdentityN")
def _id_n_grad(_, *grad):
    return grad


NotDifferentiable("StopGradient")


@RegisterGradient("Reshape")
def _reshape_grad(op, grad):
    input_shape = op.inputs[0].shape
    if input_shape.rank is not None and not input_shape.is_fully_defined():
        dims = input_shape.as_list()
        undefined = [i for i, d in enumerate(dims) if d is None]
        has_zero_dim = any(d == 0 for d in dims)
        if len(undefined) == 1 and not has_zero_dim:
            dims[undefined[0]] = -1
            return [array_ops.reshape(_indexed_slices_to_tensor_no_warning(grad), dims), None]
    return [array_ops.reshape(_indexed_slices_to_tensor_no_warning(grad),
                              array_ops.shape(op.inputs[0])), None]


NotDifferentiable("InvertPermutation")


def _reshape_to_input(op, grad):
    return array_ops.reshape(_indexed_slices_to_tensor_no_warning(grad),
                             array_ops.shape(op.inputs[0]))


@RegisterGradient("ExpandDims")
def _expand_dims_grad(op, grad):
    return [_reshape_to_input(op, grad), None]


@RegisterGradient("Squeeze")
def _squeeze_grad(op, grad):
    return _reshape_to_input(op, grad)


@RegisterGradient("Transpose")
def _transpose_grad(op, grad):
    p = op.inputs[1]
    return [array_ops.transpose(grad, _gen("InvertPermutation", x=p)), None]


for _op_type in ("Shape", "ShapeN", "Rank", "Size", "BroadcastGradientArgs", "OneHot",
                 "EditDistance"):
    NotDifferentiable(_op_type)


@RegisterGradient("Tile")
def _tile_grad(op, grad):
    input_shape = array_ops.shape(op.inputs[0], out_type=op.inputs[1].dtype)
    split_shape = array_ops.reshape(
        array_ops.transpose(array_ops.stack([op.inputs[1], input_shape])), [-1])
    axes = math_ops.range(0, array_ops.size(split_shape), 2)
    if isinstance(grad, IndexedSlices):
        input_shape_0 = math_ops.cast(input_shape[0], grad.indices.dtype)
        grad = segment_ops.unsorted_segment_sum(
            grad.values, math_ops.mod(grad.indices, input_shape_0), input_shape_0)
        split_shape = array_ops.concat([[1], split_shape[1:]], axis=0)
    input_grad = math_ops.reduce_sum(array_ops.reshape(grad, split_shape), axes)
    input_grad.set_shape(op.inputs[0].shape)
    return [input_grad, None]


def _pad_grad(op, grad):
    x = op.inputs[0]
    a = op.inputs[1]
    pad_before = array_ops.slice(a, [0, 0], array_ops.stack([array_ops.rank(x), 1]))
    begin = array_ops.reshape(pad_before, [-1])
    sizes = array_ops.shape(x, out_type=begin.dtype)
    x_grad = array_ops.slice(grad, begin, sizes)
    if len(op.inputs) == 3:
        return x_grad, None, None
    return x_grad, None


RegisterGradient("Pad")(_pad_grad)
RegisterGradient("PadV2")(_pad_grad)


@RegisterGradient("ReverseV2")
def _reverse_v2_grad(op, grad):
    return array_ops.reverse(grad, op.inputs[1]), None


@RegisterGradient("MirrorPad")
def _mirror_pad_grad(op, grad):
    return [_gen("MirrorPadGrad", input=grad, paddings=op.inputs[1],
                 mode=op.get_attr("mode")), None]


@RegisterGradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    input_value = op.inputs[0]
    broadcast_shape = op.inputs[1]
    shape_dtype = broadcast_shape.dtype
    input_value_shape = array_ops.shape(input_value, out_type=shape_dtype)
    static = constant_value(broadcast_shape, fold=True)  # TF's try_evaluate_constant
    if static is not None:
        broadcast_shape = constant([int(d) for d in static], dtype=shape_dtype)
    _, reduction_axes = _gen("BroadcastGradientArgs", s0=broadcast_shape, s1=input_value_shape)
    updates_grad_reshaped = math_ops.reduce_sum(grad, axis=reduction_axes, keepdims=True)
    updates_grad = array_ops.reshape(updates_grad_reshaped, input_value_shape)
    return [updates_grad, None]


@RegisterGradient("ScatterNd")
def _scatter_nd_grad(op, grad):
    return [None, array_ops.gather_nd(grad, op.inputs[0]), None]


@RegisterGradient("ReverseSequence")
def _reverse_sequence_grad(op, grad):
    return [_gen("ReverseSequence", input=grad, seq_lengths=op.inputs[1],
                 seq_dim=op.get_attr("seq_dim"), batch_dim=op.get_attr("batch_dim")), None]


@RegisterGradient("SpaceToBatchND")
def _space_to_batch_nd_grad(op, grad):
    return [_gen("BatchToSpaceND", input=grad, block_shape=op.inputs[1],
                 crops=op.inputs[2]), None, None]


@RegisterGradient("BatchToSpaceND")
def _batch_to_space_nd_grad(op, grad):
    return [_gen("SpaceToBatchND", input=grad, block_shape=op.inputs[1],
                 paddings=op.inputs[2]), None, None]


@RegisterGradient("SpaceToDepth")
def _space_to_depth_grad(op, grad):
    data_format = op.get_attr("data_format")
    if data_format in (b"NCHW_VECT_C", "NCHW_VECT_C"):
        raise ValueError("Cannot compute SpaceToDepth gradient with NCHW_VECT_C. "
                         "NCHW_VECT_C requires qint8 data type.")
    return _gen("DepthToSpace", input=grad, block_size=op.get_attr("block_size"),
                data_format=data_format)


@RegisterGradient("DepthToSpace")
def _depth_to_space_grad(op, grad):
    data_format = op.get_attr("data_format")
    if data_format in (b"NCHW_VECT_C", "NCHW_VECT_C"):
        raise ValueError("Cannot compute DepthToSpace gradient with NCHW_VECT_C. "
                         "NCHW_VECT_C requires qint8 data type.")
    return _gen("SpaceToDepth", input=grad, block_size=op.get_attr("block_size"),
                data_format=data_format)


@RegisterGradient("MirrorPadGrad")
def _mirror_pad_grad_grad(op, grad):
    return [_gen("MirrorPad", input=grad, paddings=op.inputs[1], mode=op.get_attr("mode")),
            None]


@RegisterGradient("MatrixBandPart")
def _matrix_band_part_grad(op, grad):
    return (_gen("MatrixBandPart", input=grad, num_lower=op.inputs[1],
                 num_upper=op.inputs[2]), None, None)


@RegisterGradient("Roll")
def _roll_grad(op, grad):
    return _gen("Roll", input=grad, shift=-op.inputs[1], axis=op.inputs[2]), None, None


@RegisterGradient("TensorScatterUpdate")
def _tensor_scatter_update_grad(op, grad):
    indices = op.inputs[1]
    updates_grad = array_ops.gather_nd(grad, indices)
    tensor_grad = _gen("TensorScatterUpdate", tensor=array_ops.identity(grad), indices=indices,
                       updates=array_ops.zeros_like(op.inputs[2], dtype=grad.dtype))
    return [tensor_grad, None, updates_grad]


@RegisterGradient("TensorScatterAdd")
def _tensor_scatter_add_grad(op, grad):
    updates_grad = array_ops.gather_nd(grad, op.inputs[1])
    return [array_ops.identity(grad), None, updates_grad]


@RegisterGradient("ClipByValue")
def _clip_by_value_grad(op, grad):
    x, y, z = op.inputs[0], op.inputs[1], op.inputs[2]
    sx = array_ops.shape(x)
    sy = array_ops.shape(y)
    sz = array_ops.shape(z)
    zeros = array_ops.zeros(array_ops.shape(grad), grad.dtype)
    xymask = math_ops.less(x, y)
    xzmask = math_ops.greater(x, z)
    _, ry = _gen("BroadcastGradientArgs", s0=sx, s1=sy)
    _, rz = _gen("BroadcastGradientArgs", s0=sx, s1=sz)
    xgrad = array_ops.where(math_ops.logical_or(xymask, xzmask), zeros, grad)
    ygrad = array_ops.where(xymask, grad, zeros)
    zgrad = array_ops.where(xzmask, grad, zeros)
    gy = array_ops.reshape(math_ops.reduce_sum(ygrad, ry), sy)
    gz = array_ops.reshape(math_ops.reduce_sum(zgrad, rz), sz)
    return xgrad, gy, gz




@RegisterGradient("TensorScatterSub")
def _tensor_scatter_sub_grad(op, grad):
    updates_grad = array_ops.gather_nd(grad, op.inputs[1])
    return [array_ops.identity(grad), None, -updates_grad]


@RegisterGradient("ScatterNdNonAliasingAdd")
def _scatter_nd_non_aliasing_add_grad(op, grad):
    return [grad, None, array_ops.gather_nd(grad, op.inputs[1])]


@RegisterGradient("Print")
def _print_grad(op, *grad):
    return list(grad) + [None] * (len(op.inputs) - 1)


@RegisterGradient("EnsureShape")
def _ensure_shape_grad(op, grad):
    return grad


@RegisterGradient("SpaceToBatch")
def _space_to_batch_grad(op, grad):
    return [_gen("BatchToSpace", input=grad, crops=op.inputs[1],
                 block_size=op.get_attr("block_size")), None]


@RegisterGradient("BatchToSpace")
def _batch_to_space_grad(op, grad):
    return [_gen("SpaceToBatch", input=grad, paddings=op.inputs[1],
                 block_size=op.get_attr("block_size")), None]


def _matrix_diag_part(grad, k=0, align="RIGHT_LEFT"):
    """TF 2's array_ops.matrix_diag_part: a MatrixDiagPartV3 named "diag_part"."""
    padding = False if grad.dtype == dtypes.bool else 0
    return _gen("MatrixDiagPartV3", name="diag_part", input=grad, k=k, padding_value=padding,
                align=align)


def _matrix_diag(diagonal, k=0, num_rows=-1, num_cols=-1, align="RIGHT_LEFT"):
    """TF 2's array_ops.matrix_diag: a MatrixDiagV3 named "diag"."""
    padding = False if diagonal.dtype == dtypes.bool else 0
    return _gen("MatrixDiagV3", name="diag", diagonal=diagonal, k=k, num_rows=num_rows,
                num_cols=num_cols, padding_value=padding, align=align)


def _matrix_set_diag(input_, diagonal, k=0, align="RIGHT_LEFT"):
    """TF 2's array_ops.matrix_set_diag: a MatrixSetDiagV3 named "set_diag"."""
    return _gen("MatrixSetDiagV3", name="set_diag", input=input_, diagonal=diagonal, k=k,
                align=align)


@RegisterGradient("MatrixDiagPart")
def _matrix_diag_part_grad(op, grad):
    matrix_shape = op.inputs[0].shape[-2:]
    if matrix_shape.is_fully_defined() and matrix_shape[0] == matrix_shape[1]:
        return _matrix_diag(grad)
    return _matrix_set_diag(array_ops.zeros_like(op.inputs[0]), grad)


def _matrix_diag_part_v2_v3_grad(op, grad):
    matrix_shape = op.inputs[0].shape[-2:]
    align = op.get_attr("align") if op.type == "MatrixDiagPartV3" else "RIGHT_LEFT"
    if matrix_shape.is_fully_defined():
        return (_matrix_diag(grad, k=op.inputs[1], num_rows=matrix_shape[0],
                             num_cols=matrix_shape[1], align=align), None, None)
    return (_matrix_set_diag(array_ops.zeros_like(op.inputs[0]), grad, k=op.inputs[1],
                             align=align), None, None)


RegisterGradient("MatrixDiagPartV2")(_matrix_diag_part_v2_v3_grad)
RegisterGradient("MatrixDiagPartV3")(_matrix_diag_part_v2_v3_grad)


@RegisterGradient("MatrixSetDiag")
def _matrix_set_diag_grad(op, grad):
    input_shape = op.inputs[0].shape.merge_with(grad.shape)
    diag_shape = op.inputs[1].shape
    batch_shape = input_shape[:-2].merge_with(diag_shape[:-1])
    matrix_shape = input_shape[-2:]
    if batch_shape.is_fully_defined() and matrix_shape.is_fully_defined():
        diag_shape = batch_shape.as_list() + [min(matrix_shape.as_list())]
    else:
        with ops.colocate_with(grad):
            grad_shape = array_ops.shape(grad)
            grad_rank = array_ops.rank(grad)
            batch_shape = array_ops.slice(grad_shape, [0], [grad_rank - 2])
            matrix_shape = array_ops.slice(grad_shape, [grad_rank - 2], [2])
            min_dim = math_ops.reduce_min(matrix_shape)
            diag_shape = array_ops.concat([batch_shape, [min_dim]], 0)
    grad_input = _matrix_set_diag(grad, array_ops.zeros(diag_shape, dtype=grad.dtype))
    grad_diag = _matrix_diag_part(grad)
    return grad_input, grad_diag


def _matrix_set_diag_v2_v3_grad(op, grad):
    diag_shape = op.inputs[1].shape
    align = op.get_attr("align") if op.type == "MatrixSetDiagV3" else "RIGHT_LEFT"
    if not diag_shape.is_fully_defined():
        raise NotImplementedError(f"the gradient of {op.type} with a diagonal of unknown "
                                  "shape")
    grad_input = _matrix_set_diag(grad, array_ops.zeros(diag_shape.as_list(), dtype=grad.dtype),
                                  k=op.inputs[2], align=align)
    grad_diag = _matrix_diag_part(grad, k=op.inputs[2], align=align)
    return grad_input, grad_diag, None


RegisterGradient("MatrixSetDiagV2")(_matrix_set_diag_v2_v3_grad)
RegisterGradient("MatrixSetDiagV3")(_matrix_set_diag_v2_v3_grad)


def _tensor_scatter_min_or_max_grad(op, grad):
    indices, x, y, output = op.inputs[1], op.inputs[0], op.inputs[2], op.outputs[0]
    x_indicators = math_ops.cast(math_ops.equal(x, output), grad.dtype)
    y_output = array_ops.gather_nd(output, indices)
    y_indicators = math_ops.cast(math_ops.equal(y, y_output), grad.dtype)
    ys_indicators = _gen("ScatterNd", indices=indices, updates=y_indicators,
                         shape=array_ops.shape(x, out_type=indices.dtype))
    indicators = x_indicators + ys_indicators
    x_grad = grad * x_indicators / indicators
    y_grad = array_ops.gather_nd(grad / indicators, indices) * y_indicators
    return [x_grad, None, y_grad]


RegisterGradient("TensorScatterMax")(_tensor_scatter_min_or_max_grad)
RegisterGradient("TensorScatterMin")(_tensor_scatter_min_or_max_grad)


@RegisterGradient("MatrixDiag")
def _matrix_diag_grad(_, grad):
    return _matrix_diag_part(grad)


@RegisterGradient("MatrixDiagV2")
def _matrix_diag_v2_grad(op, grad):
    return _matrix_diag_part(grad, k=op.inputs[1]), None, None, None, None


@RegisterGradient("MatrixDiagV3")
def _matrix_diag_v3_grad(op, grad):
    return (_matrix_diag_part(grad, k=op.inputs[1], align=op.get_attr("align")), None, None,
            None, None)


# TF's NotDifferentiable declarations of the random and state ops.
for _op_type in ("RandomStandardNormal", "TruncatedNormal", "RandomUniform",
                 "RandomShuffle", "Multinomial", "StatelessRandomNormal",
                 "StatelessRandomUniform", "StatelessRandomUniformInt",
                 "StatelessRandomUniformFullInt", "StatelessTruncatedNormal",
                 "StatelessRandomNormalV2", "StatelessRandomUniformV2",
                 "StatelessRandomUniformIntV2", "StatelessRandomUniformFullIntV2",
                 "StatelessTruncatedNormalV2", "Invert", "LeftShift", "RightShift",
                 "BitwiseAnd", "BitwiseOr", "BitwiseXor", "VariableShape", "Assign",
                 "AssignAdd", "AssignSub", "ScatterAdd", "ScatterSub", "ScatterMul",
                 "ScatterDiv", "ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub",
                 "VarIsInitializedOp"):
    NotDifferentiable(_op_type)


@RegisterGradient("FakeQuantWithMinMaxArgs")
def _fake_quant_args_grad(op, grad):
    return _gen("FakeQuantWithMinMaxArgsGradient", gradients=grad, inputs=op.inputs[0],
                min=op.get_attr("min"), max=op.get_attr("max"),
                num_bits=op.get_attr("num_bits"), narrow_range=op.get_attr("narrow_range"))


@RegisterGradient("FakeQuantWithMinMaxVars")
def _fake_quant_vars_grad(op, grad):
    return _gen("FakeQuantWithMinMaxVarsGradient", gradients=grad, inputs=op.inputs[0],
                min=op.inputs[1], max=op.inputs[2], num_bits=op.get_attr("num_bits"),
                narrow_range=op.get_attr("narrow_range"))


@RegisterGradient("FakeQuantWithMinMaxVarsPerChannel")
def _fake_quant_per_channel_grad(op, grad):
    return _gen("FakeQuantWithMinMaxVarsPerChannelGradient", gradients=grad,
                inputs=op.inputs[0], min=op.inputs[1], max=op.inputs[2],
                num_bits=op.get_attr("num_bits"), narrow_range=op.get_attr("narrow_range"))


for _op_type in ("FakeQuantWithMinMaxArgsGradient", "FakeQuantWithMinMaxVarsGradient",
                 "FakeQuantWithMinMaxVarsPerChannelGradient"):
    NotDifferentiable(_op_type)
