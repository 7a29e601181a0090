"""Math builders and the Tensor operator overloads, with TF's Python names, argument names,
and the node names, ops and attrs TF's Python layer produces (`x + y` is AddV2 "add",
`tf.add` is AddV2 "Add", a Python operand becomes the Const "<scope>/y", ...)."""

from __future__ import annotations

import builtins

import numpy as np

from aioflow.framework import dtypes, ops
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops
from aioflow.ops.constant_op import constant

# -- casts ---------------------------------------------------------------------------------


def cast(x, dtype, name: str | None = None) -> ops.Tensor:
    """`x` as `dtype` (a Cast op; `x` itself when it already has that dtype, as TF)."""
    base_type = dtypes.as_dtype(dtype).base_dtype
    if isinstance(x, ops.Tensor) and base_type == x.dtype:
        return x
    with ops.name_scope(name, "Cast", [x]) as name:
        x = ops.convert_to_tensor(x, name="x")
        if x.dtype != base_type:
            x = apply_op("Cast", name=name, x=x, DstT=base_type)
        return x


def to_float(x, name: str = "ToFloat") -> ops.Tensor:
    """Cast to float32."""
    return cast(x, dtypes.float32, name=name)


def to_double(x, name: str = "ToDouble") -> ops.Tensor:
    """Cast to float64."""
    return cast(x, dtypes.float64, name=name)


def to_int32(x, name: str = "ToInt32") -> ops.Tensor:
    """Cast to int32."""
    return cast(x, dtypes.int32, name=name)


def to_int64(x, name: str = "ToInt64") -> ops.Tensor:
    """Cast to int64."""
    return cast(x, dtypes.int64, name=name)


def to_bfloat16(x, name: str = "ToBFloat16") -> ops.Tensor:
    """Cast to bfloat16."""
    return cast(x, dtypes.bfloat16, name=name)


# -- element-wise generated ops (TF calls gen_math_ops directly for these) -------------------

def _unary(op_type: str, py_name: str):
    def fn(x, name: str | None = None) -> ops.Tensor:
        return apply_op(op_type, name=name, x=x)

    fn.__name__ = fn.__qualname__ = py_name
    fn.__doc__ = f"Element-wise {op_type} (a `{op_type}` op)."
    return fn


def _binary(op_type: str, py_name: str):
    def fn(x, y, name: str | None = None) -> ops.Tensor:
        return apply_op(op_type, name=name, x=x, y=y)

    fn.__name__ = fn.__qualname__ = py_name
    fn.__doc__ = f"Element-wise {op_type} with broadcasting (a `{op_type}` op)."
    return fn


sqrt = _unary("Sqrt", "sqrt")
rsqrt = _unary("Rsqrt", "rsqrt")
exp = _unary("Exp", "exp")
expm1 = _unary("Expm1", "expm1")
log = _unary("Log", "log")
log1p = _unary("Log1p", "log1p")
sin = _unary("Sin", "sin")
cos = _unary("Cos", "cos")
tan = _unary("Tan", "tan")
asin = _unary("Asin", "asin")
acos = _unary("Acos", "acos")
atan = _unary("Atan", "atan")
sinh = _unary("Sinh", "sinh")
asinh = _unary("Asinh", "asinh")
acosh = _unary("Acosh", "acosh")
atanh = _unary("Atanh", "atanh")
cosh = _unary("Cosh", "cosh")
tanh = _unary("Tanh", "tanh")
sigmoid = _unary("Sigmoid", "sigmoid")
reciprocal = _unary("Reciprocal", "reciprocal")
floor = _unary("Floor", "floor")
ceil = _unary("Ceil", "ceil")
rint = _unary("Rint", "rint")
erf = _unary("Erf", "erf")
lgamma = _unary("Lgamma", "lgamma")
digamma = _unary("Digamma", "digamma")
is_nan = _unary("IsNan", "is_nan")
is_inf = _unary("IsInf", "is_inf")
is_finite = _unary("IsFinite", "is_finite")
logical_not = _unary("LogicalNot", "logical_not")

subtract = _binary("Sub", "subtract")
multiply = _binary("Mul", "multiply")
realdiv = _binary("RealDiv", "realdiv")
floormod = _binary("FloorMod", "floormod")
mod = floormod
truncatediv = _binary("TruncateDiv", "truncatediv")
truncatemod = _binary("TruncateMod", "truncatemod")
maximum = _binary("Maximum", "maximum")
minimum = _binary("Minimum", "minimum")
squared_difference = _binary("SquaredDifference", "squared_difference")


def atan2(y, x, name: str | None = None) -> ops.Tensor:
    """Element-wise arctan(y / x) with the quadrant of (x, y) (an `Atan2` op; TF's
    argument order: y first)."""
    return apply_op("Atan2", name=name, y=y, x=x)




def _x_binary(op_type: str, py_name: str):
    """TF's tf.math.xlogy & co.: the op inside a name scope named for the function."""
    def fn(x, y, name: str | None = None) -> ops.Tensor:
        with ops.name_scope(name, py_name, [x]):
            return apply_op(op_type, x=x, y=y)

    fn.__name__ = fn.__qualname__ = py_name
    fn.__doc__ = f"Element-wise {op_type} (a `{op_type}` op in the scope '{py_name}')."
    return fn


xdivy = _x_binary("Xdivy", "xdivy")
xlogy = _binary("Xlogy", "xlogy")
xlog1py = _x_binary("Xlog1py", "xlog1py")
less = _binary("Less", "less")
less_equal = _binary("LessEqual", "less_equal")
greater = _binary("Greater", "greater")
greater_equal = _binary("GreaterEqual", "greater_equal")
equal = _binary("Equal", "equal")
not_equal = _binary("NotEqual", "not_equal")
logical_and = _binary("LogicalAnd", "logical_and")
logical_or = _binary("LogicalOr", "logical_or")


def _scoped_unary(op_type: str, py_name: str):
    """TF's wrappers that open a `name_scope(name, op_type)` and convert x as "x"."""
    def fn(x, name: str | None = None) -> ops.Tensor:
        with ops.name_scope(name, op_type, [x]) as name:
            x = ops.convert_to_tensor(x, name="x")
            return apply_op(op_type, name=name, x=x)

    fn.__name__ = fn.__qualname__ = py_name
    fn.__doc__ = f"Element-wise {op_type} (a `{op_type}` op)."
    return fn


negative = _scoped_unary("Neg", "negative")
sign = _scoped_unary("Sign", "sign")
square = _scoped_unary("Square", "square")


def softplus(features, name: str | None = None) -> ops.Tensor:
    """log(exp(features) + 1)."""
    return apply_op("Softplus", name=name, features=features)


def abs(x, name: str | None = None) -> ops.Tensor:  # noqa: A001
    """Element-wise |x| (ComplexAbs for complex inputs)."""
    with ops.name_scope(name, "Abs", [x]) as name:
        x = ops.convert_to_tensor(x, name="x")
        if x.dtype.is_complex:
            return apply_op("ComplexAbs", name=name, x=x, Tout=x.dtype.real_dtype)
        return apply_op("Abs", name=name, x=x)


def round(x, name: str | None = None) -> ops.Tensor:  # noqa: A001
    """Round half to even; integers come back unchanged (as TF)."""
    x = ops.convert_to_tensor(x, name="x")
    if x.dtype.is_integer:
        return x
    return apply_op("Round", name=name, x=x)


def log_sigmoid(x, name: str | None = None) -> ops.Tensor:
    """log(sigmoid(x)) computed as -softplus(-x)."""
    with ops.name_scope(name, "LogSigmoid", [x]) as name:
        x = ops.convert_to_tensor(x, name="x")
        return apply_op("Neg", name=name, x=softplus(negative(x)))


def conj(x, name: str | None = None) -> ops.Tensor:
    """Complex conjugate; real tensors come back unchanged."""
    if isinstance(x, ops.Tensor) and (x.dtype.is_floating or x.dtype.is_integer):
        return x
    with ops.name_scope(name, "Conj", [x]) as name:
        x = ops.convert_to_tensor(x, name="x")
        if x.dtype.is_complex or x.dtype == dtypes.variant:
            return apply_op("Conj", name=name, input=x)
        if x.dtype.is_floating or x.dtype.is_integer:
            return x
        raise TypeError(f"Expected numeric or variant tensor, got dtype {x.dtype!r}.")


# -- arithmetic with TF's Python-level rules ---------------------------------------------------

def add(x, y, name: str | None = None) -> ops.Tensor:
    """x + y (AddV2 named "Add"; Add for strings)."""
    with ops.name_scope(name, "Add", [x]) as name:
        x = ops.convert_to_tensor(x, name="x")
        y = ops.convert_to_tensor(y, preferred_dtype=x.dtype.base_dtype, name="y")
        if x.dtype == dtypes.string:
            return apply_op("Add", name=name, x=x, y=y)
        return apply_op("AddV2", name=name, x=x, y=y)


_TRUEDIV_TABLE = {
    dtypes.uint8: dtypes.float32, dtypes.int8: dtypes.float32, dtypes.uint16: dtypes.float32,
    dtypes.int16: dtypes.float32, dtypes.uint32: dtypes.float64, dtypes.uint64: dtypes.float64,
    dtypes.int32: dtypes.float64, dtypes.int64: dtypes.float64, dtypes.bfloat16: None,
    dtypes.float16: None, dtypes.float32: None, dtypes.float64: None, dtypes.complex64: None,
    dtypes.complex128: None,
}


def _truediv_python3(x, y, name=None):
    with ops.name_scope(name, "truediv", [x, y]) as name:
        x = ops.convert_to_tensor(x, name="x")
        y = ops.convert_to_tensor(y, preferred_dtype=x.dtype.base_dtype, name="y")
        x_dtype, y_dtype = x.dtype.base_dtype, y.dtype.base_dtype
        if x_dtype != y_dtype:
            raise TypeError(f"`x` and `y` must have the same dtype, got {x_dtype!r} != "
                            f"{y_dtype!r}.")
        try:
            dtype = _TRUEDIV_TABLE[x_dtype]
        except KeyError as e:
            raise TypeError(f"Invalid dtype {x_dtype!r} in __truediv__. Expected one of "
                            f"{{{', '.join(repr(d) for d in _TRUEDIV_TABLE)}}}.") from e
        if dtype is not None:
            x = cast(x, dtype)
            y = cast(y, dtype)
        return apply_op("RealDiv", name=name, x=x, y=y)


def _div_python2(x, y, name=None):
    with ops.name_scope(name, "div", [x, y]) as name:
        x = ops.convert_to_tensor(x, name="x")
        y = ops.convert_to_tensor(y, name="y", dtype=x.dtype.base_dtype)
        if x.dtype.is_floating or x.dtype.is_complex:
            return apply_op("RealDiv", name=name, x=x, y=y)
        return apply_op("FloorDiv", name=name, x=x, y=y)


def truediv(x, y, name: str | None = None) -> ops.Tensor:
    """Python 3 division: integers are cast to floats first (RealDiv "truediv")."""
    return _truediv_python3(x, y, name)


def divide(x, y, name: str | None = None) -> ops.Tensor:
    """x / y with Python 3 semantics."""
    if name is not None:
        return _truediv_python3(x, y, name)
    if not isinstance(x, ops.Tensor):
        x = ops.convert_to_tensor(x, dtype=y.dtype.base_dtype if isinstance(y, ops.Tensor)
                                  else None)
    return x / y


def div(x, y, name: str | None = None) -> ops.Tensor:
    """TF1 `tf.div`: RealDiv for floats, FloorDiv for integers."""
    return _div_python2(x, y, name)


def div_no_nan(x, y, name: str | None = None) -> ops.Tensor:
    """x / y, 0 where y is 0."""
    with ops.name_scope(name, "div_no_nan", [x, y]) as name:
        x = ops.convert_to_tensor(x, name="x")
        y = ops.convert_to_tensor(y, name="y", dtype=x.dtype.base_dtype)
        return apply_op("DivNoNan", name=name, x=x, y=y)


divide_no_nan = div_no_nan


def floordiv(x, y, name: str | None = None) -> ops.Tensor:
    """Floor division (FloorDiv, default name "floordiv")."""
    with ops.name_scope(name, "floordiv", [x, y]) as name:
        return apply_op("FloorDiv", name=name, x=x, y=y)


def pow(x, y, name: str | None = None) -> ops.Tensor:  # noqa: A001
    """x ** y."""
    with ops.name_scope(name, "Pow", [x]) as name:
        return apply_op("Pow", name=name, x=x, y=y)


def logical_xor(x, y, name: str = "LogicalXor") -> ops.Tensor:
    """x XOR y, built as TF builds it: (x | y) & !(x & y)."""
    return apply_op("LogicalAnd", name=name, x=apply_op("LogicalOr", x=x, y=y),
                    y=apply_op("LogicalNot", x=apply_op("LogicalAnd", x=x, y=y)))


def scalar_mul(scalar, x, name: str | None = None) -> ops.Tensor:
    """A scalar times a tensor: the Const "scalar" and a Mul (TF 2's graph)."""
    scalar = ops.convert_to_tensor(scalar, dtype=x.dtype.base_dtype, name="scalar")
    if scalar.shape.rank != 0:
        raise ValueError(f"The input scalar must be a 0-D value. Received shape "
                         f"{scalar.shape}.")
    if isinstance(x, IndexedSlices):
        return IndexedSlices(apply_op("Mul", name=name, x=scalar, y=x.values), x.indices,
                             x.dense_shape)
    return apply_op("Mul", name=name, x=scalar, y=x)


def add_n(inputs, name: str | None = None) -> ops.Tensor:
    """The sum of a list of same-shaped tensors (AddN; one input: itself or an Identity)."""
    if not inputs or not isinstance(inputs, (list, builtins.tuple)):
        raise ValueError("Inputs must be an iterable of at least one Tensor/IndexedSlices "
                         "with the same dtype and shape.")
    # IndexedSlices stay as they are until AddN converts them (in its scope, as TF).
    inputs = [t if isinstance(t, IndexedSlices) else ops.convert_to_tensor(t) for t in inputs]
    if len(inputs) == 1:
        values = ops.convert_to_tensor(inputs[0])
        if name:
            return array_ops.identity(values, name=name)
        return values
    return apply_op("AddN", name=name, inputs=inputs)


def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False, adjoint_a: bool = False,
           adjoint_b: bool = False, a_is_sparse: bool = False, b_is_sparse: bool = False,
           output_type=None, grad_a: bool = False, grad_b: bool = False,
           name: str | None = None) -> ops.Tensor:
    """Matrix product: MatMul for matrices, BatchMatMulV2 when either input may be batched."""
    with ops.name_scope(name, "MatMul", [a, b]) as name:
        if adjoint_a and transpose_a:
            raise ValueError("Only one of `transpose_a` and `adjoint_a` can be True.")
        if adjoint_b and transpose_b:
            raise ValueError("Only one of `transpose_b` and `adjoint_b` can be True.")
        a = ops.convert_to_tensor(a, name="a")
        b = ops.convert_to_tensor(b, preferred_dtype=a.dtype.base_dtype, name="b")
        a_rank, b_rank = a.shape.rank, b.shape.rank
        batched = a_rank is None or a_rank > 2 or b_rank is None or b_rank > 2
        if output_type is not None:
            output_type = dtypes.as_dtype(output_type)
        use_v3 = output_type is not None and (output_type != a.dtype or
                                              output_type != b.dtype)
        if batched:
            if transpose_a:
                a = conj(a)
                adjoint_a = True
            if transpose_b:
                b = conj(b)
                adjoint_b = True
            if use_v3:
                return apply_op("BatchMatMulV3", name=name, x=a, y=b, Tout=output_type,
                                adj_x=adjoint_a, adj_y=adjoint_b, grad_x=grad_a,
                                grad_y=grad_b)
            return apply_op("BatchMatMulV2", name=name, x=a, y=b, adj_x=adjoint_a,
                            adj_y=adjoint_b, grad_x=grad_a, grad_y=grad_b)
        if adjoint_a:
            a = conj(a)
            transpose_a = True
        if adjoint_b:
            b = conj(b)
            transpose_b = True
        if use_v3:
            return apply_op("BatchMatMulV3", name=name, x=a, y=b, Tout=output_type,
                            adj_x=adjoint_a or transpose_a, adj_y=adjoint_b or transpose_b,
                            grad_x=grad_a, grad_y=grad_b)
        return apply_op("MatMul", name=name, a=a, b=b, transpose_a=transpose_a,
                        transpose_b=transpose_b, grad_a=grad_a, grad_b=grad_b)


# -- range -----------------------------------------------------------------------------------

_RANGE_DTYPES = [dtypes.int32, dtypes.int64, dtypes.float16, dtypes.bfloat16, dtypes.float32,
                 dtypes.float64]


def range(start, limit=None, delta=1, dtype=None, name: str = "range") -> ops.Tensor:  # noqa: A001
    """[start, start + delta, ...) up to `limit` (`range(n)` is [0, n))."""
    if limit is None:
        start, limit = 0, start
    with ops.name_scope(name, "Range", [start, limit, delta]) as name:
        if not isinstance(start, ops.Tensor):
            start = ops.convert_to_tensor(start, dtype=dtype, name="start")
        if not isinstance(limit, ops.Tensor):
            limit = ops.convert_to_tensor(limit, dtype=dtype, name="limit")
        if not isinstance(delta, ops.Tensor):
            delta = ops.convert_to_tensor(delta, dtype=dtype, name="delta")
        if dtype is None:
            for t in (start, limit, delta):
                if t.dtype not in _RANGE_DTYPES:
                    raise TypeError(f"Unsupported dtype {t.dtype.name} for tf.range")
            inferred = max((t.dtype for t in (start, limit, delta)), key=_RANGE_DTYPES.index)
        else:
            inferred = dtypes.as_dtype(dtype)
        start, limit, delta = cast(start, inferred), cast(limit, inferred), cast(delta, inferred)
        return apply_op("Range", name=name, start=start, limit=limit, delta=delta)


# -- reductions -----------------------------------------------------------------------------

def _reduction_dims(x, axis):
    """`axis`, or all dims: a Const when x's rank is known (and > 0), else Range(Rank)."""
    if axis is not None:
        return axis
    x_rank = getattr(getattr(x, "shape", None), "rank", None)  # tensors and variables
    if x_rank:
        return constant(np.arange(x_rank, dtype=np.int32))
    return range(0, array_ops.rank(x))


def _may_reduce_to_scalar(keepdims, axis, output):
    if not keepdims and axis is None and output.shape.rank is None:
        output.set_shape(())
    return output


def _reducer(op_type: str, py_name: str):
    def fn(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
           keep_dims=None) -> ops.Tensor:
        axis = array_ops._lookup("axis", axis, "reduction_indices", reduction_indices)
        keepdims = array_ops._lookup("keepdims", keepdims, "keep_dims", keep_dims)
        keepdims = False if keepdims is None else builtins.bool(keepdims)
        return _may_reduce_to_scalar(keepdims, axis, apply_op(
            op_type, name=name, input=input_tensor,
            reduction_indices=_reduction_dims(input_tensor, axis), keep_dims=keepdims))

    fn.__name__ = fn.__qualname__ = py_name
    fn.__doc__ = (f"Reduce with {op_type} over `axis` (all dims when None); TF1 signature "
                  "with the deprecated `reduction_indices` / `keep_dims` spellings.")
    return fn


reduce_sum = _reducer("Sum", "reduce_sum")
reduce_mean = _reducer("Mean", "reduce_mean")
reduce_max = _reducer("Max", "reduce_max")
reduce_min = _reducer("Min", "reduce_min")
reduce_prod = _reducer("Prod", "reduce_prod")
reduce_all = _reducer("All", "reduce_all")
reduce_any = _reducer("Any", "reduce_any")


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                     keep_dims=None) -> ops.Tensor:
    """log(sum(exp(x))) over `axis`, computed stably as TF does."""
    axis = array_ops._lookup("axis", axis, "reduction_indices", reduction_indices)
    keepdims = array_ops._lookup("keepdims", keepdims, "keep_dims", keep_dims)
    keepdims = False if keepdims is None else builtins.bool(keepdims)
    with ops.name_scope(name, "ReduceLogSumExp", [input_tensor]) as name:
        raw_max = reduce_max(input_tensor, axis=axis, keepdims=True)
        my_max = array_ops.stop_gradient(apply_op(
            "SelectV2", condition=is_finite(raw_max), t=raw_max,
            e=apply_op("ZerosLike", x=raw_max)))
        result = log(reduce_sum(exp(subtract(input_tensor, my_max)), axis=axis,
                                keepdims=keepdims))
        if not keepdims:
            my_max = array_ops.reshape(my_max, apply_op("Shape", input=result))
        result = add(result, my_max, name=name)
        return _may_reduce_to_scalar(keepdims, axis, result)


def argmax(input, axis=None, name: str | None = None, dimension=None,  # noqa: A002
           output_type=dtypes.int64) -> ops.Tensor:
    """Index of the largest value along `axis` (default 0)."""
    axis = array_ops._lookup("axis", axis, "dimension", dimension)
    if axis is None:
        axis = 0
    return apply_op("ArgMax", name=name, input=input, dimension=axis, output_type=output_type)


def argmin(input, axis=None, name: str | None = None, dimension=None,  # noqa: A002
           output_type=dtypes.int64) -> ops.Tensor:
    """Index of the smallest value along `axis` (default 0)."""
    axis = array_ops._lookup("axis", axis, "dimension", dimension)
    if axis is None:
        axis = 0
    return apply_op("ArgMin", name=name, input=input, dimension=axis, output_type=output_type)


def cumsum(x, axis=0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> ops.Tensor:
    """Cumulative sum along `axis`."""
    with ops.name_scope(name, "Cumsum", [x]) as name:
        x = ops.convert_to_tensor(x, name="x")
        return apply_op("Cumsum", name=name, x=x, axis=axis, exclusive=exclusive,
                        reverse=reverse)


def cumprod(x, axis=0, exclusive: bool = False, reverse: bool = False,
            name: str | None = None) -> ops.Tensor:
    """Cumulative product along `axis`."""
    with ops.name_scope(name, "Cumprod", [x]) as name:
        x = ops.convert_to_tensor(x, name="x")
        return apply_op("Cumprod", name=name, x=x, axis=axis, exclusive=exclusive,
                        reverse=reverse)


# -- Tensor operator overloads (TF's binary_op_wrapper / r_binary_op_wrapper) ----------------

def _add_dispatch(x, y, name=None):
    if not isinstance(y, ops.Tensor):
        y = ops.convert_to_tensor(y, preferred_dtype=x.dtype.base_dtype, name="y")
    if x.dtype == dtypes.string:
        return apply_op("Add", name=name, x=x, y=y)
    return apply_op("AddV2", name=name, x=x, y=y)


def _floor_mod(x, y, name=None):
    return apply_op("FloorMod", name=name, x=x, y=y)


def _and(x, y, name=None):
    if x.dtype == dtypes.bool:
        return apply_op("LogicalAnd", name=name, x=x, y=y)
    return apply_op("BitwiseAnd", x=x, y=y)


def _or(x, y, name=None):
    if x.dtype == dtypes.bool:
        return apply_op("LogicalOr", name=name, x=x, y=y)
    return apply_op("BitwiseOr", x=x, y=y)


def _xor(x, y, name=None):
    if x.dtype == dtypes.bool:
        return logical_xor(x, y, name)
    return apply_op("BitwiseXor", x=x, y=y)


def _invert(x, name=None):
    if x.dtype == dtypes.bool:
        return apply_op("LogicalNot", name=name, x=x)
    return apply_op("Invert", name=name, x=x)


def _override_binary_operator(func, op_name: str) -> None:
    """Install `__op__` and `__rop__` that open the scope `op_name` (so a Python operand
    becomes "<op_name>/y", or "<op_name>/x" when reflected) and call `func` in it."""

    def binary_op_wrapper(x, y):
        with ops.name_scope(None, op_name, [x, y]) as name:
            try:
                return func(x, y, name=name)
            except (TypeError, ValueError) as e:
                # A tensor-aware right operand may still know how to do it.
                r_op = getattr(type(y), f"__r{op_name}__", None)
                if r_op is None or isinstance(y, (ops.Tensor, builtins.int, builtins.float,
                                                  builtins.bool, complex, np.ndarray,
                                                  np.generic, list, builtins.tuple)):
                    raise
                try:
                    out = r_op(y, x)
                except (TypeError, ValueError):
                    raise e from None
                if out is NotImplemented:
                    raise
                return out

    def r_binary_op_wrapper(y, x):
        with ops.name_scope(None, op_name, [x, y]) as name:
            x = ops.convert_to_tensor(x, dtype=y.dtype.base_dtype, name="x")
            return func(x, y, name=name)

    binary_op_wrapper.__doc__ = r_binary_op_wrapper.__doc__ = func.__doc__
    ops.Tensor._override_operator(f"__{op_name}__", binary_op_wrapper)
    ops.Tensor._override_operator(f"__r{op_name}__", r_binary_op_wrapper)


_override_binary_operator(_add_dispatch, "add")
_override_binary_operator(subtract, "sub")
_override_binary_operator(multiply, "mul")
_override_binary_operator(truediv, "truediv")
_override_binary_operator(floordiv, "floordiv")
_override_binary_operator(_floor_mod, "mod")
_override_binary_operator(pow, "pow")
_override_binary_operator(_and, "and")
_override_binary_operator(_or, "or")
_override_binary_operator(_xor, "xor")
_override_binary_operator(matmul, "matmul")
ops.Tensor._override_operator("__neg__", lambda x, name=None: apply_op("Neg", name=name, x=x))
ops.Tensor._override_operator("__abs__", abs)
ops.Tensor._override_operator("__invert__", _invert)
ops.Tensor._override_operator("__lt__", less)
ops.Tensor._override_operator("__le__", less_equal)
ops.Tensor._override_operator("__gt__", greater)
ops.Tensor._override_operator("__ge__", greater_equal)


def bucketize(input, boundaries, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """The index of the bucket each value falls in: the number of `boundaries` <= it (a
    `Bucketize` op; TF exposes it only as tf.raw_ops.Bucketize)."""
    return apply_op("Bucketize", name=name, input=input,
                    boundaries=[float(b) for b in boundaries])


def linspace(start, stop, num, name=None) -> ops.Tensor:
    """`num` evenly spaced values from start to stop, both included."""
    with ops.name_scope(name, "LinSpace", [start, stop]):
        start = ops.convert_to_tensor(start, name="start")
        stop = ops.convert_to_tensor(stop, dtype=start.dtype, name="stop")
        return apply_op("LinSpace", start=start, stop=stop, num=num)



# -- tensordot ------------------------------------------------------------------------------

def _tensordot_reshape(a, axes, flipped: bool = False):
    """`a` transposed and reshaped to a matrix whose rows (columns when `flipped`) are its
    free dims and columns its contracted `axes`, with the free dims (TF's steps: static
    when a's shape is known, else Shape/GatherV2/Prod)."""
    if a.shape.is_fully_defined() and isinstance(axes, (list, tuple)):
        shape_a = a.shape.as_list()
        axes = [i if i >= 0 else i + len(shape_a) for i in axes]
        free = [i for i in builtins.range(len(shape_a)) if i not in axes]
        free_dims = [shape_a[i] for i in free]
        prod_free = int(np.prod([shape_a[i] for i in free]))
        prod_axes = int(np.prod([shape_a[i] for i in axes]))
        perm = list(axes) + free if flipped else free + list(axes)
        new_shape = [prod_axes, prod_free] if flipped else [prod_free, prod_axes]
        a_trans = (array_ops.transpose(a, perm)
                   if (perm != np.arange(len(shape_a))).any() else a)
        reshaped = (array_ops.reshape(a_trans, new_shape)
                    if a_trans.shape.as_list() != new_shape else a_trans)
        return reshaped, free_dims, free_dims
    if a.shape.rank is not None and isinstance(axes, (list, tuple)):
        shape_a = a.shape.as_list()
        axes = [i if i >= 0 else i + len(shape_a) for i in axes]
        free = [i for i in builtins.range(len(shape_a)) if i not in axes]
        free_dims_static = [shape_a[i] for i in free]
        axes = ops.convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
        free = ops.convert_to_tensor(free, dtype=dtypes.int32, name="free")
        shape_a = array_ops.shape(a)
    else:
        free_dims_static = None
        shape_a = array_ops.shape(a)
        rank_a = array_ops.rank(a)
        axes = ops.convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
        axes = array_ops.where(axes >= 0, axes, axes + rank_a)
        free = apply_op("ListDiff", x=range(rank_a), y=axes, out_idx=dtypes.int32)[0]
    free_dims = array_ops.gather(shape_a, free)
    axes_dims = array_ops.gather(shape_a, axes)
    prod_free_dims = reduce_prod(free_dims)
    prod_axes_dims = reduce_prod(axes_dims)
    if flipped:
        perm = array_ops.concat([axes, free], 0)
        new_shape = array_ops.stack([prod_axes_dims, prod_free_dims])
    else:
        perm = array_ops.concat([free, axes], 0)
        new_shape = array_ops.stack([prod_free_dims, prod_axes_dims])
    return (array_ops.reshape(array_ops.transpose(a, perm), new_shape), free_dims,
            free_dims_static)


def _tensordot_axes(a, axes):
    if isinstance(axes, (int, np.integer)):
        if axes < 0:
            raise ValueError(f"`axes` must be at least 0. Received: {axes}.")
        if a.shape.rank is None:
            raise NotImplementedError("tensordot with an int `axes` needs a's rank")
        if axes > a.shape.rank:
            raise ValueError(f"`axes` must not be larger than the number of dimensions of "
                             f"tensor {a}.  Received {axes}, vs tensor dimensions "
                             f"{a.shape.rank}.")
        return (list(builtins.range(a.shape.rank - axes, a.shape.rank)),
                list(builtins.range(axes)))
    if isinstance(axes, (list, tuple)):
        if len(axes) != 2:
            raise ValueError(f"`axes` must be an integer or have length 2. Received {axes}.")
        a_axes, b_axes = axes
        if isinstance(a_axes, (int, np.integer)) and isinstance(b_axes, (int, np.integer)):
            a_axes, b_axes = [a_axes], [b_axes]
        if len(a_axes) != len(b_axes):
            raise ValueError(f"Different number of contraction axes `a` and `b`, "
                             f"{len(a_axes)} != {len(b_axes)}.")
        return list(a_axes), list(b_axes)
    raise NotImplementedError("tensordot with `axes` as a tensor is not supported")


def tensordot(a, b, axes, name=None):
    """Sum of a's `axes[0]` times b's `axes[1]` (an int n: a's last n dims and b's first
    n), built as TF builds it: transposes and reshapes to one MatMul, reshaped to a's free
    dims followed by b's."""
    with ops.name_scope(name, "Tensordot", [a, b, axes]) as name:
        a = ops.convert_to_tensor(a, name="a")
        b = ops.convert_to_tensor(b, name="b")
        a_axes, b_axes = _tensordot_axes(a, axes)
        a_reshape, a_free_dims, a_free_dims_static = _tensordot_reshape(a, a_axes)
        b_reshape, b_free_dims, b_free_dims_static = _tensordot_reshape(b, b_axes, True)
        ab_matmul = matmul(a_reshape, b_reshape)
        if isinstance(a_free_dims, list) and isinstance(b_free_dims, list):
            if (ab_matmul.shape.is_fully_defined()
                    and ab_matmul.shape.as_list() == a_free_dims + b_free_dims):
                return ab_matmul
            return array_ops.reshape(ab_matmul, a_free_dims + b_free_dims, name=name)
        a_free_dims = ops.convert_to_tensor(a_free_dims, dtype=dtypes.int32)
        b_free_dims = ops.convert_to_tensor(b_free_dims, dtype=dtypes.int32)
        product = array_ops.reshape(ab_matmul, array_ops.concat([a_free_dims, b_free_dims], 0),
                                    name=name)
        if a_free_dims_static is not None and b_free_dims_static is not None:
            product.set_shape(a_free_dims_static + b_free_dims_static)
        return product

__all__ = [
    "bucketize", "linspace", "tensordot",
    "cast", "to_float", "to_double", "to_int32", "to_int64", "to_bfloat16",
    "sqrt", "rsqrt", "exp", "expm1", "log", "log1p", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "tanh", "sigmoid", "reciprocal", "floor", "ceil", "rint", "erf",
    "lgamma", "digamma", "softplus", "is_nan", "is_inf", "is_finite", "logical_not",
    "subtract", "multiply", "realdiv", "floormod", "mod", "truncatediv", "truncatemod",
    "maximum", "minimum", "squared_difference", "atan2", "xdivy", "xlogy", "xlog1py", "less",
    "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
    "logical_or", "negative", "sign", "square", "abs", "round", "log_sigmoid", "conj", "add",
    "truediv", "divide", "div", "div_no_nan", "divide_no_nan", "floordiv", "pow",
    "logical_xor", "scalar_mul",
    "add_n", "matmul", "range", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
    "reduce_prod", "reduce_all", "reduce_any", "reduce_logsumexp", "argmax", "argmin",
    "cumsum", "cumprod",
]
