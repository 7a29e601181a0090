"""Gradient functions of the math ops (TF's math_grad.py): each builds the ops TF's own
function builds, in the same order, so the gradient graph is TF's node for node.

Broadcasting binary ops reduce their gradients with SmartBroadcastGradientArgs: with
static shapes the reduction axes are Python lists, else BroadcastGradientArgs computes
them at run time.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, ops
from aioflow.framework.constant_value import constant_value
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients.registry import NotDifferentiable, RegisterGradient
from aioflow.ops import array_ops, math_ops, segment_ops
from aioflow.ops.constant_op import constant


def _gen(op_type: str, name: str | None = None, **keywords):
    return apply_op(op_type, name=name, **keywords)


def _shape_tuple(t):
    shape = t.shape
    if shape.rank is None:
        return None
    return tuple(d.value for d in shape.dims)


def broadcast_gradient_args(s0, s1):
    """(r0, r1): the axes to reduce each input's gradient over (BroadcastGradientArgs)."""
    return _gen("BroadcastGradientArgs", s0=s0, s1=s1)


def reduced_shape(input_shape, axes):
    """The shape of a reduction's output with keepdims (TF's math_ops.reduced_shape)."""
    const_shape = constant_value(input_shape) if isinstance(input_shape, ops.Tensor) \
        else np.asarray(input_shape)
    if const_shape is not None:
        const_axes = constant_value(axes) if isinstance(axes, ops.Tensor) else np.asarray(axes)
        if const_axes is not None:
            const_axes = np.array(const_axes, dtype=np.int32)
            const_shape = np.array(const_shape, dtype=np.int32)
            const_shape[const_axes] = 1
            return const_shape
    axes = ops.convert_to_tensor(axes)
    input_rank = array_ops.size(input_shape, out_type=axes.dtype)
    axes = (axes + input_rank) % input_rank
    axes_shape = array_ops.shape(axes)
    return _gen("DynamicStitch", indices=[math_ops.range(input_rank), axes],
                data=[input_shape, array_ops.ones(axes_shape, dtype=input_shape.dtype)])


def _infer_gradient_reduction_axes(x_shape, y_shape):
    x_rank, y_rank = x_shape.rank, y_shape.rank
    if x_rank is None or y_rank is None:
        return None, None
    x_dims = x_shape.as_list()
    y_dims = y_shape.as_list()
    b_rank = max(x_rank, y_rank)
    x_axes, y_axes = [], []
    for axis in range(b_rank):
        x_dim = 1 if axis < b_rank - x_rank else x_dims[axis - (b_rank - x_rank)]
        y_dim = 1 if axis < b_rank - y_rank else y_dims[axis - (b_rank - y_rank)]
        if x_dim == 1 and y_dim != 1:
            x_axes.append(axis)
        elif y_dim == 1 and x_dim != 1:
            y_axes.append(axis)
        elif x_dim is None or y_dim is None:
            return None, None
    return x_axes, y_axes


def smart_broadcast_gradient_args(x, y):
    """((x_shape, x_axes, x_must_reduce), (y_shape, y_axes, y_must_reduce))."""
    x_shape = array_ops.shape(x)
    y_shape = array_ops.shape(y)
    x_axes, y_axes = _infer_gradient_reduction_axes(x.shape, y.shape)
    if x_axes is None or y_axes is None:
        x_axes, y_axes = broadcast_gradient_args(x_shape, y_shape)
        x_must_reduce = y_must_reduce = True
    else:
        x_must_reduce = bool(x_axes) or x.shape.rank < y.shape.rank
        y_must_reduce = bool(y_axes) or y.shape.rank < x.shape.rank
    return (x_shape, x_axes, x_must_reduce), (y_shape, y_axes, y_must_reduce)


def _reduce_gradient_arg(grad, shape_axes_must_reduce):
    shape, axes, must_reduce = shape_axes_must_reduce
    if grad is not None and must_reduce:
        grad = math_ops.reduce_sum(grad, axes, keepdims=True)
        grad = array_ops.reshape(grad, shape)
    return grad


def reduce_gradient_args(x, y, gx, gy):
    """gx and gy summed over the axes x and y were broadcast along."""
    if gx is not None or gy is not None:
        bx, by = smart_broadcast_gradient_args(x, y)
        gx = _reduce_gradient_arg(gx, bx)
        gy = _reduce_gradient_arg(gy, by)
    return gx, gy


def _shapes_fully_specified_and_equal(x, y, grad) -> bool:
    xs, ys, gs = _shape_tuple(x), _shape_tuple(y), _shape_tuple(grad)
    return xs == ys and xs == gs and xs is not None and None not in xs


# -- reductions -------------------------------------------------------------------------------

@RegisterGradient("ArgMax")
def _arg_max_grad(op, grad):
    return [None, None]


@RegisterGradient("ArgMin")
def _arg_min_grad(op, grad):
    return [None, None]


def _evaluate_as_tuple(value) -> tuple:
    if isinstance(value, ops.Tensor):
        value = constant_value(value)
    return tuple(int(v) for v in np.asarray(value).reshape(-1))


@RegisterGradient("Sum")
def _sum_grad(op, grad):
    input_0_shape = _shape_tuple(op.inputs[0])
    if input_0_shape is not None:
        axes = constant_value(op.inputs[1])
        if axes is not None:
            rank = len(input_0_shape)
            if np.array_equal(axes, np.arange(rank)):  # all dims
                grad = array_ops.reshape(grad, [1] * rank)
                if None not in input_0_shape:
                    input_shape = constant(input_0_shape, dtype=dtypes.int32)
                else:
                    input_shape = array_ops.shape(op.inputs[0])
                return [array_ops.tile(grad, input_shape), None]
            if None not in input_0_shape:
                graph = ops.get_default_graph()
                key = (input_0_shape, tuple(np.asarray(axes).reshape(-1).tolist()))
                cache = graph.__dict__.setdefault("_reduced_shape_cache", {})
                if key not in cache:
                    kept = _evaluate_as_tuple(reduced_shape(input_0_shape, key[1]))
                    # TF divides with ops (Maximum, floordiv; left in the graph unused)
                    # and reads the constant result back.
                    _ = input_0_shape // math_ops.maximum(kept, 1)
                    scaling = np.asarray(input_0_shape) // np.maximum(np.asarray(kept), 1)
                    cache[key] = (kept, _evaluate_as_tuple(scaling))
                kept, tile_scaling = cache[key]
                grad = array_ops.reshape(grad, kept)
                return [array_ops.tile(grad, tile_scaling), None]
    input_shape = array_ops.shape(op.inputs[0])
    if not op.get_attr("keep_dims"):
        with ops.colocate_with(input_shape):
            output_shape_kept_dims = reduced_shape(input_shape, op.inputs[1])
        grad = array_ops.reshape(grad, output_shape_kept_dims)
    return [array_ops.broadcast_to(grad, input_shape), None]


def _min_or_max_grad(op, grad):
    input_shape = array_ops.shape(op.inputs[0])
    y = op.outputs[0]
    if not op.get_attr("keep_dims"):
        output_shape_kept_dims = reduced_shape(input_shape, op.inputs[1])
        y = array_ops.reshape(y, output_shape_kept_dims)
        grad = array_ops.reshape(grad, output_shape_kept_dims)
    else:
        output_shape_kept_dims = array_ops.shape(y)
    indicators = math_ops.cast(math_ops.equal(y, op.inputs[0]), grad.dtype)
    num_selected = array_ops.reshape(math_ops.reduce_sum(indicators, op.inputs[1]),
                                     output_shape_kept_dims)
    return [math_ops.divide(indicators, num_selected) * grad, None]


RegisterGradient("Max")(_min_or_max_grad)
RegisterGradient("Min")(_min_or_max_grad)


@RegisterGradient("Mean")
def _mean_grad(op, grad):
    sum_grad = _sum_grad(op, grad)[0]
    input_shape = _shape_tuple(op.inputs[0])
    output_shape = _shape_tuple(op.outputs[0])
    if (input_shape is not None and output_shape is not None
            and None not in input_shape and None not in output_shape):
        input_size = int(np.prod(input_shape))
        output_size = int(np.prod(output_shape))
        factor = input_size // max(output_size, 1)
        factor = constant(factor, dtype=sum_grad.dtype)
    else:
        input_shape = array_ops.shape(op.inputs[0])
        input_rank = array_ops.size(input_shape)
        axes = math_ops.cast(op.inputs[1], input_rank.dtype)
        axes = (axes + input_rank) % input_rank
        factor = math_ops.reduce_prod(array_ops.gather(input_shape, axes))
    return math_ops.truediv(sum_grad, math_ops.cast(factor, sum_grad.dtype)), None


@RegisterGradient("Prod")
def _prod_grad(op, grad):
    input_shape = array_ops.shape(op.inputs[0])
    reduction_indices = array_ops.reshape(op.inputs[1], [-1])
    if not op.get_attr("keep_dims"):
        output_shape_kept_dims = reduced_shape(input_shape, op.inputs[1])
        grad = array_ops.reshape(grad, output_shape_kept_dims)
    grad = array_ops.broadcast_to(grad, input_shape)
    with ops.device("/cpu:0"):
        rank = array_ops.rank(op.inputs[0])
        reduction_indices = math_ops.cast(reduction_indices, rank.dtype)
        reduced = (reduction_indices + rank) % rank
        idx = math_ops.range(0, rank)
        other, _ = _gen("ListDiff", x=idx, y=reduced, out_idx=reduced.dtype)
        perm = array_ops.concat([reduced, other], 0)
        reduced_num = math_ops.reduce_prod(array_ops.gather(input_shape, reduced))
        other_num = math_ops.reduce_prod(array_ops.gather(input_shape, other))
    permuted = array_ops.transpose(op.inputs[0], perm)
    permuted_shape = array_ops.shape(permuted)
    reshaped = array_ops.reshape(permuted, (reduced_num, other_num))
    left = math_ops.cumprod(reshaped, axis=0, exclusive=True)
    right = math_ops.cumprod(reshaped, axis=0, exclusive=True, reverse=True)
    y = array_ops.reshape(math_ops.conj(left) * math_ops.conj(right), permuted_shape)
    out = grad * array_ops.transpose(y, _gen("InvertPermutation", x=perm))
    return array_ops.reshape(out, input_shape), None


# -- segments ---------------------------------------------------------------------------------

@RegisterGradient("SegmentSum")
def _segment_sum_grad(op, grad):
    return array_ops.gather(grad, op.inputs[1]), None


@RegisterGradient("SegmentMean")
def _segment_mean_grad(op, grad):
    data_rank = array_ops.rank(op.inputs[0])
    segment_ids_shape = array_ops.shape(op.inputs[1])
    remaining_shape = array_ops.ones(array_ops.expand_dims(data_rank - 1, 0),
                                     dtype=segment_ids_shape.dtype)
    ones_shape = array_ops.concat([segment_ids_shape, remaining_shape], 0)
    ones = array_ops.ones(ones_shape, dtype=grad.dtype)
    scaled_grad = math_ops.divide(grad, segment_ops.segment_sum(ones, op.inputs[1]))
    return array_ops.gather(scaled_grad, op.inputs[1]), None


def _gather_drop_negatives(params, ids, zero_clipped_indices=None, is_positive=None):
    if zero_clipped_indices is None:
        zero_clipped_indices = math_ops.maximum(ids, array_ops.zeros_like(ids))
    gathered = array_ops.gather(params, zero_clipped_indices)
    if is_positive is None:
        is_positive = math_ops.greater_equal(ids, 0)
        is_positive_shape = array_ops.shape(is_positive)
        broadcastable_shape = array_ops.concat(
            [is_positive_shape,
             array_ops.ones([array_ops.rank(gathered) - array_ops.rank(is_positive)],
                            dtype=is_positive_shape.dtype)], axis=0)
        is_positive = array_ops.reshape(is_positive, broadcastable_shape)
        is_positive = is_positive & array_ops.ones_like(gathered, dtype=dtypes.bool)
    zero_slice = array_ops.zeros_like(gathered)
    return (array_ops.where_v2(is_positive, gathered, zero_slice), zero_clipped_indices,
            is_positive)


@RegisterGradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    return _gather_drop_negatives(grad, op.inputs[1])[0], None, None


def _unsorted_segment_min_or_max_grad(op, grad):
    gathered_outputs, zero_clipped_indices, is_positive = _gather_drop_negatives(
        op.outputs[0], op.inputs[1])
    is_selected = math_ops.equal(op.inputs[0], gathered_outputs)
    is_selected = math_ops.logical_and(is_selected, is_positive)
    num_selected = segment_ops.unsorted_segment_sum(
        math_ops.cast(is_selected, grad.dtype), op.inputs[1], op.inputs[2])
    weighted_grads = math_ops.divide(grad, num_selected)
    gathered_grads, _, _ = _gather_drop_negatives(weighted_grads, None, zero_clipped_indices,
                                                  is_positive)
    zeros = array_ops.zeros_like(gathered_grads)
    return array_ops.where_v2(is_selected, gathered_grads, zeros), None, None


RegisterGradient("UnsortedSegmentMax")(_unsorted_segment_min_or_max_grad)
RegisterGradient("UnsortedSegmentMin")(_unsorted_segment_min_or_max_grad)


# -- element-wise unary -----------------------------------------------------------------------

@RegisterGradient("Abs")
def _abs_grad(op, grad):
    return grad * math_ops.sign(op.inputs[0])


@RegisterGradient("Neg")
def _neg_grad(_, grad):
    return -grad


@RegisterGradient("Inv")
def _inv_grad(op, grad):
    return _gen("ReciprocalGrad", y=op.outputs[0], dy=grad)


@RegisterGradient("Reciprocal")
def _reciprocal_grad(op, grad):
    return _gen("ReciprocalGrad", y=op.outputs[0], dy=grad)


def _reciprocal_grad_grad(op, grad):
    b = op.inputs[1]
    with ops.control_dependencies([grad]):
        ca = math_ops.conj(op.inputs[0])
        cg = math_ops.conj(grad)
        return cg * -2.0 * b * ca, _gen("ReciprocalGrad", y=ca, dy=grad)


RegisterGradient("InvGrad")(_reciprocal_grad_grad)
RegisterGradient("ReciprocalGrad")(_reciprocal_grad_grad)


@RegisterGradient("Square")
def _square_grad(op, grad):
    x = op.inputs[0]
    with ops.control_dependencies([grad]):
        x = math_ops.conj(x)
        y = constant(2.0, dtype=x.dtype)
        return math_ops.multiply(grad, math_ops.multiply(x, y))


@RegisterGradient("Sqrt")
def _sqrt_grad(op, grad):
    return _gen("SqrtGrad", y=op.outputs[0], dy=grad)


@RegisterGradient("SqrtGrad")
def _sqrt_grad_grad(op, grad):
    a = op.inputs[0]
    y = op.outputs[0]
    with ops.control_dependencies([grad]):
        ga = grad / a
        return -math_ops.conj(ga) * y, 0.5 * ga


@RegisterGradient("Rsqrt")
def _rsqrt_grad(op, grad):
    return _gen("RsqrtGrad", y=op.outputs[0], dy=grad)


@RegisterGradient("RsqrtGrad")
def _rsqrt_grad_grad(op, grad):
    a = op.inputs[0]
    b = op.inputs[1]
    with ops.control_dependencies([grad]):
        ca = math_ops.conj(a)
        cg = math_ops.conj(grad)
        grad_a = -1.5 * cg * b * math_ops.square(ca)
        grad_b = _gen("RsqrtGrad", y=ca, dy=grad)
        return grad_a, grad_b


@RegisterGradient("Exp")
def _exp_grad(op, grad):
    y = op.outputs[0]
    with ops.control_dependencies([grad]):
        y = math_ops.conj(y)
        return grad * y


@RegisterGradient("Expm1")
def _expm1_grad(op, grad):
    x = op.inputs[0]
    with ops.control_dependencies([grad]):
        x = math_ops.conj(x)
        y = math_ops.exp(x)
        return grad * y


@RegisterGradient("Log")
def _log_grad(op, grad):
    x = op.inputs[0]
    with ops.control_dependencies([grad]):
        x = math_ops.conj(x)
        return grad * math_ops.reciprocal(x)


@RegisterGradient("Log1p")
def _log1p_grad(op, grad):
    x = op.inputs[0]
    with ops.control_dependencies([grad]):
        x = math_ops.conj(x)
        return grad * math_ops.reciprocal(1 + x)


def _xfn_grad(op, grad, partial_x_fn, partial_y_fn):
    x, y = op.inputs[0], op.inputs[1]
    sx = array_ops.shape(x)
    sy = array_ops.shape(y)
    rx, ry = broadcast_gradient_args(sx, sy)
    with ops.control_dependencies([grad]):
        not_zero_x = math_ops.cast(
            math_ops.not_equal(x, math_ops.cast(0.0, dtype=x.dtype)), dtype=x.dtype)
        partial_x = partial_x_fn(not_zero_x, y)
        partial_y = partial_y_fn(x, y)
        return (array_ops.reshape(math_ops.reduce_sum(partial_x * grad, rx), sx),
                array_ops.reshape(math_ops.reduce_sum(partial_y * grad, ry), sy))


@RegisterGradient("Xlogy")
def _xlogy_grad(op, grad):
    return _xfn_grad(op, grad, lambda a, y: _gen("Xlogy", x=a, y=y),
                     lambda x, y: _gen("Xdivy", x=x, y=y))


@RegisterGradient("Xlog1py")
def _xlog1py_grad(op, grad):
    return _xfn_grad(op, grad, lambda a, y: _gen("Xlog1py", x=a, y=y),
                     lambda x, y: _gen("Xdivy", x=x, y=y + 1.0))


@RegisterGradient("Xdivy")
def _xdivy_grad(op, grad):
    return _xfn_grad(op, grad, lambda a, y: _gen("Xdivy", x=a, y=y),
                     lambda x, y: _gen("Xdivy", x=math_ops.negative(x), y=y ** 2))


@RegisterGradient("Sinh")
def _sinh_grad(op, grad):
    with ops.control_dependencies([grad]):
        return grad * math_ops.cosh(math_ops.conj(op.inputs[0]))


@RegisterGradient("Cosh")
def _cosh_grad(op, grad):
    with ops.control_dependencies([grad]):
        return grad * math_ops.sinh(math_ops.conj(op.inputs[0]))


@RegisterGradient("Tanh")
def _tanh_grad(op, grad):
    y = op.outputs[0]
    with ops.control_dependencies([grad]):
        y = math_ops.conj(y)
        return _gen("TanhGrad", y=y, dy=grad)


@RegisterGradient("Asinh")
def _asinh_grad(op, grad):
    y = op.outputs[0]
    with ops.control_dependencies([grad]):
        y = math_ops.conj(y)
        return grad / math_ops.cosh(y)


@RegisterGradient("Acosh")
def _acosh_grad(op, grad):
    y = op.outputs[0]
    with ops.control_dependencies([grad]):
        y = math_ops.conj(y)
        return grad / math_ops.sinh(y)


@RegisterGradient("Atanh")
def _atanh_grad(op, grad):
    x = op.inputs[0]
    with ops.control_dependencies([grad]):
        x = math_ops.conj(x)
        x2 = math_ops.square(x)
        one = constant(1, dtype=grad.dtype)
        inv = math_ops.reciprocal(math_ops.subtract(one, x2))
        return grad * inv


@RegisterGradient("TanhGrad")
def _tanh_grad_grad(op, grad):
    with ops.control_dependencies([grad]):
        a = math_ops.conj(op.inputs[0])
        b = math_ops.conj(op.inputs[1])
        return grad * -2.0 * b * a, _gen("TanhGrad", y=a, dy=grad)


@RegisterGradient("Erf")
def _erf_grad(op, grad):
    x = op.inputs[0]
    two_over_root_pi = constant(2 / np.sqrt(np.pi), dtype=grad.dtype)
    with ops.control_dependencies([grad]):
        x = math_ops.conj(x)
        return grad * two_over_root_pi * math_ops.exp(-math_ops.square(x))


@RegisterGradient("Erfc")
def _erfc_grad(op, grad):
    x = op.inputs[0]
    minus_two_over_root_pi = constant(-2 / np.sqrt(np.pi), dtype=grad.dtype)
    with ops.control_dependencies([grad]):
        x = math_ops.conj(x)
        return grad * minus_two_over_root_pi * math_ops.exp(-math_ops.square(x))


@RegisterGradient("Lgamma")
def _lgamma_grad(op, grad):
    x = op.inputs[0]
    with ops.control_dependencies([grad]):
        x = math_ops.conj(x)
        return grad * math_ops.digamma(x)


@RegisterGradient("Sigmoid")
def _sigmoid_grad(op, grad):
    y = op.outputs[0]
    with ops.control_dependencies([grad]):
        y = math_ops.conj(y)
        return _gen("SigmoidGrad", y=y, dy=grad)


@RegisterGradient("SigmoidGrad")
def _sigmoid_grad_grad(op, grad):
    with ops.control_dependencies([grad]):
        a = math_ops.conj(op.inputs[0])
        b = math_ops.conj(op.inputs[1])
        gb = grad * b
        return gb - 2.0 * gb * a, _gen("SigmoidGrad", y=a, dy=grad)


@RegisterGradient("Sign")
def _sign_grad(op, _):
    return array_ops.zeros_like(op.inputs[0])


@RegisterGradient("Sin")
def _sin_grad(op, grad):
    with ops.control_dependencies([grad]):
        return grad * math_ops.cos(math_ops.conj(op.inputs[0]))


@RegisterGradient("Cos")
def _cos_grad(op, grad):
    with ops.control_dependencies([grad]):
        return -grad * math_ops.sin(math_ops.conj(op.inputs[0]))


@RegisterGradient("Tan")
def _tan_grad(op, grad):
    with ops.control_dependencies([grad]):
        x = math_ops.conj(op.inputs[0])
        secx = math_ops.reciprocal(math_ops.cos(x))
        secx2 = math_ops.square(secx)
        return secx2 * grad


def _asin_acos_inv(op, grad):
    x = math_ops.conj(op.inputs[0])
    x2 = math_ops.square(x)
    one = constant(1, dtype=grad.dtype)
    den = math_ops.sqrt(math_ops.subtract(one, x2))
    return math_ops.reciprocal(den)


@RegisterGradient("Asin")
def _asin_grad(op, grad):
    with ops.control_dependencies([grad]):
        return grad * _asin_acos_inv(op, grad)


@RegisterGradient("Acos")
def _acos_grad(op, grad):
    with ops.control_dependencies([grad]):
        inv = _asin_acos_inv(op, grad)
        return -grad * inv


@RegisterGradient("Atan")
def _atan_grad(op, grad):
    with ops.control_dependencies([grad]):
        x = math_ops.conj(op.inputs[0])
        x2 = math_ops.square(x)
        one = constant(1, dtype=grad.dtype)
        inv = math_ops.reciprocal(math_ops.add(one, x2))
        return grad * inv


@RegisterGradient("Atan2")
def _atan2_grad(op, grad):
    y, x = op.inputs[0], op.inputs[1]
    with ops.control_dependencies([grad]):
        grad_inv = grad / (math_ops.square(y) + math_ops.square(x))
        gy = x * grad_inv
        gx = -y * grad_inv
        return reduce_gradient_args(y, x, gy, gx)


@RegisterGradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


# -- element-wise binary ----------------------------------------------------------------------

def _skipped(op) -> tuple:
    """The inputs a GradientTape does not need gradients for (its mock op's
    skip_input_indices); () for a graph op."""
    return getattr(op, "skip_input_indices", None) or ()


def _is_scalar(t) -> bool:
    return _shape_tuple(t) == ()


def _add_grad(op, grad):
    x, y = op.inputs[0], op.inputs[1]
    skip = _skipped(op)
    if 1 in skip and _is_scalar(y):
        return grad, None
    if isinstance(grad, ops.Tensor) and _shapes_fully_specified_and_equal(x, y, grad):
        return grad, grad
    return reduce_gradient_args(x, y, None if 0 in skip else grad,
                                None if 1 in skip else grad)


RegisterGradient("Add")(_add_grad)
RegisterGradient("AddV2")(_add_grad)


@RegisterGradient("Sub")
def _sub_grad(op, grad):
    x, y = op.inputs[0], op.inputs[1]
    skip = _skipped(op)
    if 1 in skip and _is_scalar(y):
        return grad, None
    if isinstance(grad, ops.Tensor) and _shapes_fully_specified_and_equal(x, y, grad):
        return grad, -grad
    return reduce_gradient_args(x, y, None if 0 in skip else grad,
                                None if 1 in skip else -grad)


@RegisterGradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs[0], op.inputs[1]
    skip = _skipped(op)
    if 1 in skip and _is_scalar(y):
        return _gen("Mul", x=grad, y=math_ops.conj(y)), None
    if (isinstance(grad, ops.Tensor) and _shapes_fully_specified_and_equal(x, y, grad)
            and grad.dtype in (dtypes.int32, dtypes.float32)):
        return _gen("Mul", x=grad, y=y), _gen("Mul", x=grad, y=x)
    gx = None if 0 in skip else _gen("Mul", x=grad, y=math_ops.conj(y))
    gy = None if 1 in skip else _gen("Mul", x=math_ops.conj(x), y=grad)
    return reduce_gradient_args(x, y, gx, gy)


@RegisterGradient("MulNoNan")
def _mul_no_nan_grad(op, grad):
    x, y = op.inputs[0], op.inputs[1]
    if isinstance(grad, ops.Tensor) and _shapes_fully_specified_and_equal(x, y, grad):
        return _gen("MulNoNan", x=grad, y=y), _gen("MulNoNan", x=x, y=grad)
    gx = _gen("MulNoNan", x=grad, y=y)
    gy = _gen("MulNoNan", x=x, y=grad)
    return reduce_gradient_args(x, y, gx, gy)


@RegisterGradient("Div")
def _div_grad(op, grad):
    x, y = op.inputs[0], op.inputs[1]
    cx = math_ops.conj(x)
    cy = math_ops.conj(y)
    gx = math_ops.divide(grad, cy)
    gy = grad * math_ops.divide(math_ops.divide(-cx, cy), cy)
    return reduce_gradient_args(x, y, gx, gy)


@RegisterGradient("FloorDiv")
def _floor_div_grad(_, unused_grad):
    return None, None


@RegisterGradient("FloorMod")
def _floor_mod_grad(op, grad):
    x = math_ops.conj(op.inputs[0])
    y = math_ops.conj(op.inputs[1])
    floor_xy = _gen("FloorDiv", x=x, y=y)
    gx = grad
    gy = grad * math_ops.negative(floor_xy)
    return reduce_gradient_args(x, y, gx, gy)


@RegisterGradient("TruncateDiv")
def _truncate_div_grad(_, unused_grad):
    return None, None


@RegisterGradient("RealDiv")
def _real_div_grad(op, grad):
    x, y = op.inputs[0], op.inputs[1]
    cx = math_ops.conj(op.inputs[0])
    cy = math_ops.conj(op.inputs[1])
    gx = math_ops.realdiv(grad, cy)
    gy = grad * math_ops.realdiv(math_ops.realdiv(-cx, cy), cy)
    return reduce_gradient_args(x, y, gx, gy)


@RegisterGradient("DivNoNan")
def _div_no_nan_grad(op, grad):
    x = math_ops.conj(op.inputs[0])
    y = math_ops.conj(op.inputs[1])
    gx = math_ops.div_no_nan(grad, y)
    gy = grad * math_ops.div_no_nan(math_ops.div_no_nan(-x, y), y)
    return reduce_gradient_args(x, y, gx, gy)


@RegisterGradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs[0], op.inputs[1]
    cx = math_ops.conj(x)
    cy = math_ops.conj(y)
    gx = grad * cy * math_ops.pow(cx, cy - 1)
    if x.dtype.is_complex:
        mask = math_ops.not_equal(cx, 0)
    else:
        mask = cx > 0
    safe_x = array_ops.where(mask, cx, array_ops.ones_like(x))
    log_x = array_ops.where(mask, math_ops.log(safe_x), array_ops.zeros_like(x))
    gy = grad * math_ops.conj(op.outputs[0]) * log_x
    return reduce_gradient_args(x, y, gx, gy)


def _maximum_minimum_grad(op, grad, selector_op):
    x, y = op.inputs[0], op.inputs[1]
    zeros = array_ops.zeros_like(grad)
    xmask = selector_op(x, y)
    gx = array_ops.where_v2(xmask, grad, zeros)
    gy = array_ops.where_v2(xmask, zeros, grad)
    return reduce_gradient_args(x, y, gx, gy)


@RegisterGradient("Maximum")
def _maximum_grad(op, grad):
    return _maximum_minimum_grad(op, grad, math_ops.greater_equal)


@RegisterGradient("Minimum")
def _minimum_grad(op, grad):
    return _maximum_minimum_grad(op, grad, math_ops.less_equal)


@RegisterGradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs[0], op.inputs[1]
    skip = _skipped(op)
    with ops.control_dependencies([grad]):
        x_grad = math_ops.scalar_mul(2.0, grad) * (x - y)
    if isinstance(grad, ops.Tensor) and _shapes_fully_specified_and_equal(x, y, grad):
        return x_grad, -x_grad
    return reduce_gradient_args(x, y, None if 0 in skip else x_grad,
                                None if 1 in skip else -x_grad)


for _op_type in ("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "ApproximateEqual",
                 "NotEqual", "LogicalAnd", "LogicalOr", "LogicalNot"):
    NotDifferentiable(_op_type)


@RegisterGradient("Select")
def _select_grad(op, grad):
    c = op.inputs[0]
    x = op.inputs[1]
    zeros = array_ops.zeros_like(x)
    return None, array_ops.where(c, grad, zeros), array_ops.where(c, zeros, grad)


@RegisterGradient("SelectV2")
def _select_v2_grad(op, grad):
    c, x, y = op.inputs[0], op.inputs[1], op.inputs[2]
    z = op.outputs[0]
    zeros = array_ops.zeros([], dtype=grad.dtype.base_dtype)
    gx = array_ops.where_v2(c, grad, zeros)
    gy = array_ops.where_v2(c, zeros, grad)
    gx, _ = reduce_gradient_args(x, z, gx, None)
    gy, _ = reduce_gradient_args(y, z, gy, None)
    return None, gx, gy


# -- matrix products --------------------------------------------------------------------------

def _mat_mul(a, b, transpose_a=False, transpose_b=False, grad_a=False, grad_b=False):
    return _gen("MatMul", a=a, b=b, transpose_a=transpose_a, transpose_b=transpose_b,
                grad_a=grad_a, grad_b=grad_b)


@RegisterGradient("MatMul")
def _mat_mul_grad(op, grad):
    t_a = op.get_attr("transpose_a")
    t_b = op.get_attr("transpose_b")
    a = math_ops.conj(op.inputs[0])
    b = math_ops.conj(op.inputs[1])
    if not t_a and not t_b:
        grad_a = _mat_mul(grad, b, transpose_b=True, grad_a=True)
        grad_b = _mat_mul(a, grad, transpose_a=True, grad_b=True)
    elif not t_a and t_b:
        grad_a = _mat_mul(grad, b, grad_a=True)
        grad_b = _mat_mul(grad, a, transpose_a=True, grad_b=True)
    elif t_a and not t_b:
        grad_a = _mat_mul(b, grad, transpose_b=True, grad_a=True)
        grad_b = _mat_mul(a, grad, grad_b=True)
    else:
        grad_a = _mat_mul(b, grad, transpose_a=True, transpose_b=True, grad_a=True)
        grad_b = _mat_mul(grad, a, transpose_a=True, transpose_b=True, grad_b=True)
    return grad_a, grad_b


@RegisterGradient("BatchMatMul")
def _batch_mat_mul_grad(op, grad):
    x, y = op.inputs[0], op.inputs[1]
    adj_x = op.get_attr("adj_x")
    adj_y = op.get_attr("adj_y")
    if not adj_x:
        if not adj_y:
            grad_x = math_ops.matmul(grad, y, adjoint_a=False, adjoint_b=True)
            grad_y = math_ops.matmul(x, grad, adjoint_a=True, adjoint_b=False)
        else:
            grad_x = math_ops.matmul(grad, y, adjoint_a=False, adjoint_b=False)
            grad_y = math_ops.matmul(grad, x, adjoint_a=True, adjoint_b=False)
    elif not adj_y:
        grad_x = math_ops.matmul(y, grad, adjoint_a=False, adjoint_b=True)
        grad_y = math_ops.matmul(x, grad, adjoint_a=False, adjoint_b=False)
    else:
        grad_x = math_ops.matmul(y, grad, adjoint_a=True, adjoint_b=True)
        grad_y = math_ops.matmul(grad, x, adjoint_a=True, adjoint_b=True)
    return grad_x, grad_y


def _batch_mat_mul_v2_grad(op, grad):
    x, y = op.inputs[0], op.inputs[1]
    adj_x = op.get_attr("adj_x")
    adj_y = op.get_attr("adj_y")
    mm = math_ops.matmul
    if not adj_x:
        if not adj_y:
            grad_x = mm(grad, y, adjoint_a=False, adjoint_b=True, grad_a=True)
            grad_y = mm(x, grad, adjoint_a=True, adjoint_b=False, grad_b=True)
        else:
            grad_x = mm(grad, y, adjoint_a=False, adjoint_b=False, grad_a=True)
            grad_y = mm(grad, x, adjoint_a=True, adjoint_b=False, grad_b=True)
    elif not adj_y:
        grad_x = mm(y, grad, adjoint_a=False, adjoint_b=True, grad_a=True)
        grad_y = mm(x, grad, adjoint_a=False, adjoint_b=False, grad_b=True)
    else:
        grad_x = mm(y, grad, adjoint_a=True, adjoint_b=True, grad_a=True)
        grad_y = mm(grad, x, adjoint_a=True, adjoint_b=True, grad_b=True)
    sx_static, sy_static = x.shape, y.shape
    may_have_batch = ((sx_static.rank is None or sx_static.rank > 2)
                      or (sy_static.rank is None or sy_static.rank > 2))
    batch_shapes_match = (sx_static[:-2].is_fully_defined() and sy_static[:-2].is_fully_defined()
                          and sx_static[:-2] == sy_static[:-2])
    if not may_have_batch or batch_shapes_match:
        return grad_x, grad_y
    sx = array_ops.shape(x)
    sy = array_ops.shape(y)
    rx, ry = broadcast_gradient_args(sx[:-2], sy[:-2])
    grad_x = array_ops.reshape(math_ops.reduce_sum(grad_x, rx), sx)
    grad_y = array_ops.reshape(math_ops.reduce_sum(grad_y, ry), sy)
    return grad_x, grad_y


RegisterGradient("BatchMatMulV2")(_batch_mat_mul_v2_grad)
RegisterGradient("BatchMatMulV3")(_batch_mat_mul_v2_grad)

NotDifferentiable("Range")
NotDifferentiable("LinSpace")


@RegisterGradient("Floor")
def _floor_grad(_, unused_grad):
    return [None]


@RegisterGradient("Ceil")
def _ceil_grad(_, unused_grad):
    return [None]


@RegisterGradient("Round")
def _round_grad(_, unused_grad):
    return [None]


@RegisterGradient("Rint")
def _rint_grad(_, unused_grad):
    return [None]


@RegisterGradient("Conj")
def _conj_grad(_, grad):
    return math_ops.conj(grad)


@RegisterGradient("Cast")
def _cast_grad(op, grad):
    t = [dtypes.float16, dtypes.float32, dtypes.float64, dtypes.bfloat16, dtypes.complex64,
         dtypes.complex128]
    src_type = op.inputs[0].dtype.base_dtype
    dst_type = grad.dtype.base_dtype
    if src_type in t and dst_type in t:
        return math_ops.cast(grad, src_type)
    return None


@RegisterGradient("Cumsum")
def _cumsum_grad(op, grad):
    axis = op.inputs[1]
    exclusive = op.get_attr("exclusive")
    reverse = op.get_attr("reverse")
    return [math_ops.cumsum(grad, axis, exclusive=exclusive, reverse=not reverse), None]


@RegisterGradient("Cumprod")
def _cumprod_grad(op, grad):
    x = op.inputs[0]
    axis = op.inputs[1]
    exclusive = op.get_attr("exclusive")
    reverse = op.get_attr("reverse")
    prod = math_ops.cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = math_ops.cumsum(prod * grad, axis, exclusive=exclusive, reverse=not reverse)
    return [math_ops.div_no_nan(out, x), None]


def _segment_min_or_max_grad(op, grad):
    zeros = array_ops.zeros_like(op.inputs[0], dtype=op.inputs[0].dtype)
    gathered_outputs = array_ops.gather(op.outputs[0], op.inputs[1])
    is_selected = math_ops.equal(op.inputs[0], gathered_outputs)
    num_selected = segment_ops.segment_sum(math_ops.cast(is_selected, grad.dtype),
                                           op.inputs[1])
    weighted_grads = math_ops.divide(grad, num_selected)
    gathered_grads = array_ops.gather(weighted_grads, op.inputs[1])
    return array_ops.where_v2(is_selected, gathered_grads, zeros), None


RegisterGradient("SegmentMax")(_segment_min_or_max_grad)
RegisterGradient("SegmentMin")(_segment_min_or_max_grad)


@RegisterGradient("UnsortedSegmentProd")
def _unsorted_segment_prod_grad(op, grad):
    is_zero = math_ops.equal(op.inputs[0], 0)
    num_zeros = _gen("UnsortedSegmentSum", data=math_ops.cast(is_zero, dtype=dtypes.int32),
                     segment_ids=op.inputs[1], num_segments=op.inputs[2])
    grad = array_ops.where_v2(math_ops.greater(num_zeros, 1), array_ops.zeros_like(grad), grad)
    non_zero_data = array_ops.where_v2(is_zero, array_ops.ones_like(op.inputs[0]),
                                       op.inputs[0])
    non_zero_prod = _gen("UnsortedSegmentProd", data=non_zero_data, segment_ids=op.inputs[1],
                         num_segments=op.inputs[2])
    zero_clipped_indices = math_ops.maximum(op.inputs[1], array_ops.zeros_like(op.inputs[1]))
    gathered_prod = array_ops.gather(op.outputs[0], zero_clipped_indices)
    gathered_non_zero_prod = array_ops.gather(non_zero_prod, zero_clipped_indices)
    prod_divided_by_el = gathered_prod / op.inputs[0]
    partial_derivative = array_ops.where_v2(is_zero, gathered_non_zero_prod,
                                            prod_divided_by_el)
    gathered_grad = _gather_drop_negatives(grad, op.inputs[1], zero_clipped_indices)[0]
    return gathered_grad * partial_derivative, None, None


@RegisterGradient("SegmentProd")
def _segment_prod_grad(op, grad):
    data, segment_ids = op.inputs[0], op.inputs[1]
    is_zero = math_ops.equal(data, 0)
    num_zeros = _gen("SegmentSum", data=math_ops.cast(is_zero, dtype=dtypes.int32),
                     segment_ids=segment_ids)
    grad = array_ops.where_v2(math_ops.greater(num_zeros, 1), array_ops.zeros_like(grad), grad)
    non_zero_data = array_ops.where_v2(is_zero, array_ops.ones_like(data), data)
    non_zero_prod = _gen("SegmentProd", data=non_zero_data, segment_ids=segment_ids)
    gathered_prod = array_ops.gather(op.outputs[0], segment_ids)
    gathered_non_zero_prod = array_ops.gather(non_zero_prod, segment_ids)
    prod_divided_by_el = gathered_prod / non_zero_data
    partial_derivative = array_ops.where_v2(is_zero, gathered_non_zero_prod,
                                            prod_divided_by_el)
    gathered_grad = array_ops.gather(grad, segment_ids)
    return gathered_grad * partial_derivative, None


@RegisterGradient("Digamma")
def _digamma_grad(op, grad):
    x = op.inputs[0]
    with ops.control_dependencies([grad]):
        x = math_ops.conj(x)
        partial_x = _gen("Polygamma", a=constant(1, dtype=x.dtype), x=x)
        return grad * partial_x


def _sparse_segment_grad(op, grad, grad_op: str, num_extra: int):
    if op.get_attr("sparse_gradient"):
        raise NotImplementedError(f"{op.type} with sparse_gradient=True (its gradient needs "
                                  f"{grad_op}V2)")
    dim0 = array_ops.shape(op.inputs[0])[0]
    return (_gen(grad_op, grad=grad, indices=op.inputs[1], segment_ids=op.inputs[2],
                 output_dim0=dim0),) + (None,) * num_extra


RegisterGradient("SparseSegmentSum")(
    lambda op, grad: _sparse_segment_grad(op, grad, "SparseSegmentSumGrad", 2))
RegisterGradient("SparseSegmentSumWithNumSegments")(
    lambda op, grad: _sparse_segment_grad(op, grad, "SparseSegmentSumGrad", 3))
RegisterGradient("SparseSegmentMean")(
    lambda op, grad: _sparse_segment_grad(op, grad, "SparseSegmentMeanGrad", 2))
RegisterGradient("SparseSegmentMeanWithNumSegments")(
    lambda op, grad: _sparse_segment_grad(op, grad, "SparseSegmentMeanGrad", 3))
RegisterGradient("SparseSegmentSqrtN")(
    lambda op, grad: _sparse_segment_grad(op, grad, "SparseSegmentSqrtNGrad", 2))
RegisterGradient("SparseSegmentSqrtNWithNumSegments")(
    lambda op, grad: _sparse_segment_grad(op, grad, "SparseSegmentSqrtNGrad", 3))
