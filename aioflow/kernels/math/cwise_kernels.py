"""CPU kernels (NumPy) for element-wise math, comparisons, logic, Cast and AddN.

Each kernel keeps TF's output dtype exactly: NumPy's promotions are avoided by typed
constants, half/bfloat16 composite formulas run in float32 and round once, integer
division follows TF (Div/TruncateDiv truncate, FloorDiv/FloorMod floor, division by zero
is an InvalidArgumentError), and shapes that do not broadcast raise TF's
"Incompatible shapes" error.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel

#: Inputs with more elements than this go to the thread pool.
BIG = 65536

_FLOAT_COMPLEX = [dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64,
                  dtypes.complex64, dtypes.complex128]
_NON_QUANTIZED_NUMBERS = [
    dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8,
    dtypes.complex64, dtypes.int64, dtypes.bfloat16, dtypes.uint16, dtypes.complex128,
    dtypes.float16, dtypes.uint32, dtypes.uint64]
_HALF_TYPES = (dtypes.float16, dtypes.bfloat16)


def shape_str(shape) -> str:
    """A shape as TF prints it: [2,3]."""
    return "[" + ",".join(str(d) for d in shape) + "]"


def number_str(value) -> str:
    """A number as TF's StrCat prints it: integers plainly, floats (of any width) in six
    significant digits as C's %g ("0", "1.23457e+06", "-1e-05", "nan")."""
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        return str(int(value))
    return f"{float(value):.6g}"


def tf_type_name(dtype: dtypes.DType) -> str:
    """TF's DataTypeString name (float, double, half, int32, ...)."""
    return {"float32": "float", "float64": "double", "float16": "half"}.get(
        dtype.name, dtype.name)


def incompatible_shapes(*values) -> errors.InvalidArgumentError | None:
    """TF's error for values whose shapes do not broadcast; None when they do."""
    shapes = [np.shape(v) for v in values]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        return errors.InvalidArgumentError(
            None, None, "Incompatible shapes: " + " vs. ".join(shape_str(s) for s in shapes))
    return None


def is_int(dtype: dtypes.DType) -> bool:
    """Integer (or quantized) element type, by its NumPy kind."""
    return np.dtype(dtype.as_numpy_dtype).kind in "iu"


def is_signed_int(dtype: dtypes.DType) -> bool:
    return np.dtype(dtype.as_numpy_dtype).kind == "i"


def quiet(fn):
    """`fn` as it is: the executor already runs every kernel under
    `np.errstate(all="ignore")` (TF yields inf/nan silently), once per slice."""
    return fn


def via_float32(fn, dtype: dtypes.DType):
    """For half/bfloat16, compute `fn` in float32 and round once; else `fn` itself."""
    if dtype not in _HALF_TYPES:
        return fn
    np_type = dtype.as_numpy_dtype

    def run(*args):
        return fn(*(np.asarray(a, np.float32) for a in args)).astype(np_type)
    return run


class CwiseKernel(OpKernel):
    """Element-wise kernel: expensive only when an input is large (the executor checks
    the first and last input's size against `pool_above` itself, without a call)."""

    expensive = None
    pool_above = BIG
    compilable = True


class UnaryKernel(CwiseKernel):
    """y = fn(x). Subclasses give `make_fn(dtype)`."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._fn = self.make_fn(ctx.get_attr("T"))

    def make_fn(self, dtype):
        raise NotImplementedError

    def compute(self, ctx, inputs):
        return (self._fn(inputs[0]),)

    def compiled_fn(self):
        # compute is `_fn` itself unless a subclass adds to it.
        return self._fn if type(self).compute is UnaryKernel.compute else None


class BinaryKernel(CwiseKernel):
    """z = fn(x, y) with NumPy broadcasting; TF's error when shapes do not broadcast."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._fn = self.make_fn(ctx.get_attr("T", dtypes.bool))

    def make_fn(self, dtype):
        raise NotImplementedError

    def compute(self, ctx, inputs):
        x, y = inputs
        try:
            return (self._fn(x, y),)
        except ValueError:
            err = incompatible_shapes(x, y)
            if err is None:
                raise
            raise err from None

    def compiled_fn(self):
        # compute is `_fn` plus TF's error for shapes that do not broadcast, unless a
        # subclass adds to it.
        return self._fn if type(self).compute is BinaryKernel.compute else None


def _register(base, op_type: str, fn_factory, **constraints):
    cls = type(op_type + "Op", (base,), {
        "make_fn": lambda self, dtype: fn_factory(dtype),
        "__doc__": f"CPU kernel for {op_type}.",
    })
    register_kernel(op_type, "CPU", **constraints)(cls)
    return cls


def _fixed(fn, quiet_fp: bool = False, f32: bool = False):
    """A factory returning `fn` for every dtype (quiet / via float32 as asked)."""
    def factory(dtype):
        f = via_float32(fn, dtype) if f32 else fn
        return quiet(f) if quiet_fp and (dtype.is_floating or dtype.is_complex) else f
    return factory


# -- unary -----------------------------------------------------------------------------------

def _rsqrt(x):
    return np.reciprocal(np.sqrt(x))


def _sigmoid(x):
    return np.reciprocal(1 + np.exp(-x))


def _special_ufunc(name: str):
    """scipy.special's ufunc `name`, imported when a kernel first needs it (importing
    SciPy costs ~300 ms, too much for every process's first run); SciPy is optional:
    without it, math's scalar function element by element."""
    try:
        from scipy import special
    except ImportError:  # pragma: no cover - depends on the environment
        return np.frompyfunc(getattr(math, name), 1, 1)
    return getattr(special, name)


def _erf_fn(name: str):
    def factory(dtype):
        ufunc = _special_ufunc(name)
        np_type = dtype.as_numpy_dtype
        compute = np.float32 if dtype in _HALF_TYPES else np_type

        def run(x):
            return np.asarray(ufunc(np.asarray(x, compute))).astype(np_type)
        return run
    return factory


def _round(dtype):
    if is_int(dtype):
        return lambda x: x
    return np.round  # half to even, as TF's Round


_UNARY = {
    "Neg": _fixed(np.negative),
    "Abs": _fixed(np.abs),
    "Sign": _fixed(np.sign),
    "Square": _fixed(np.square),
    "Sqrt": _fixed(np.sqrt, quiet_fp=True),
    "Rsqrt": _fixed(_rsqrt, quiet_fp=True, f32=True),
    "Exp": _fixed(np.exp, quiet_fp=True),
    "Expm1": _fixed(np.expm1, quiet_fp=True),
    "Log": _fixed(np.log, quiet_fp=True),
    "Log1p": _fixed(np.log1p, quiet_fp=True),
    "Sin": _fixed(np.sin, quiet_fp=True),
    "Cos": _fixed(np.cos, quiet_fp=True),
    "Tan": _fixed(np.tan, quiet_fp=True),
    "Asin": _fixed(np.arcsin, quiet_fp=True),
    "Acos": _fixed(np.arccos, quiet_fp=True),
    "Atan": _fixed(np.arctan),
    "Sinh": _fixed(np.sinh, quiet_fp=True),
    "Asinh": _fixed(np.arcsinh, quiet_fp=True),
    "Acosh": _fixed(np.arccosh, quiet_fp=True),
    "Atanh": _fixed(np.arctanh, quiet_fp=True),
    "Cosh": _fixed(np.cosh, quiet_fp=True),
    "Tanh": _fixed(np.tanh),
    "Sigmoid": _fixed(_sigmoid, quiet_fp=True, f32=True),
    "Floor": _fixed(np.floor),
    "Ceil": _fixed(np.ceil),
    "IsNan": _fixed(np.isnan),
    "IsInf": _fixed(np.isinf),
    "IsFinite": _fixed(np.isfinite),
    "Erf": _erf_fn("erf"),
    "Erfc": _erf_fn("erfc"),
}
for _op, _factory in _UNARY.items():
    _register(UnaryKernel, _op, _factory)
# TF's CPU kernels lack some of the OpDef's types for these.
for _op in ("Reciprocal", "Inv"):
    _register(UnaryKernel, _op, _fixed(np.reciprocal, quiet_fp=True), T=_FLOAT_COMPLEX)
_register(UnaryKernel, "Rint", _fixed(np.rint), T=[dtypes.float32, dtypes.float64])
_register(UnaryKernel, "Round", _round,
          T=[dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32,
             dtypes.int64])


@register_kernel("LogicalNot", "CPU")
class LogicalNotOp(CwiseKernel):
    """Boolean negation."""

    def compute(self, ctx, inputs):
        return (np.logical_not(inputs[0]),)


# -- binary arithmetic -----------------------------------------------------------------------

_DIVISION_BY_ZERO = errors.InvalidArgumentError, "Integer division by zero"
# TF 2.21's TruncateDiv/TruncateMod kernels report a zero divisor so (their functors flag
# the error, but the ops are not registered as ones that may).
_UNEXPECTED = (errors.InternalError,
               "Unexpected error in binary operator (only integer div and mod should have "
               "errors)")


def _check_nonzero(y, error=_DIVISION_BY_ZERO) -> None:
    if not y.all():
        cls, message = error
        raise cls(None, None, message)


def _trunc_div_int(x, y):
    q = np.floor_divide(x, y)
    return q + ((q < 0) & (q * y != x))


def _int_div_fn(int_fn, float_fn, quiet_float: bool = True, error=_DIVISION_BY_ZERO):
    """Integer kernels check for a zero divisor first (TF's "Integer division by zero", or
    the op's own `error`)."""
    def factory(dtype):
        if is_int(dtype):
            def run(x, y):
                _check_nonzero(y, error)
                with np.errstate(all="ignore"):  # INT_MIN / -1 wraps silently, as in TF
                    return int_fn(x, y)
            return run
        return quiet(float_fn) if quiet_float else float_fn
    return factory


def _floor_div_float(x, y):
    return np.floor(np.true_divide(x, y))


def _trunc_div_float(x, y):
    return np.trunc(np.true_divide(x, y))


def _div_factory(dtype):
    if is_int(dtype):
        int_fn = _trunc_div_int if is_signed_int(dtype) else np.floor_divide
        return _int_div_fn(int_fn, None)(dtype)
    return quiet(np.true_divide)


def _div_no_nan(dtype):
    zero = np.zeros((), dtype.as_numpy_dtype)

    def run(x, y):
        with np.errstate(all="ignore"):
            return np.where(y == 0, zero, np.true_divide(x, y))
    return run


def _x_times(fn):
    """TF's xdivy / xlogy / xlog1py: 0 where x == 0 (even for y = 0, inf or nan), else
    fn(x, y); half and bfloat16 computed in float32."""
    def factory(dtype):
        zero = np.zeros((), dtype.as_numpy_dtype)

        def run(x, y):
            return np.where(x == 0, zero, fn(x, y))
        return via_float32(run, dtype)
    return factory


def _pow(dtype):
    if is_signed_int(dtype):
        def run(x, y):
            if (y < 0).any():
                raise errors.InvalidArgumentError(
                    None, None, "Integers to negative integer powers are not allowed")
            return np.power(x, y)
        return run
    if is_int(dtype):
        return np.power
    return quiet(np.power)


def _squared_difference(dtype):
    if dtype.is_complex:
        def run(x, y):
            d = np.subtract(x, y)
            return d * np.conj(d)
        return run

    def run_real(x, y):
        d = np.subtract(x, y)
        return d * d
    return quiet(run_real) if dtype.is_floating else run_real


def _add(dtype):
    if dtype == dtypes.string:
        def concat(x, y):
            out = np.add(x, y)
            return out if isinstance(out, np.ndarray) else np.array(out, dtype=object)
        return concat
    return np.add


# On NumPy scalars the operators are ~10x cheaper than calling the ufunc (0.09 vs 0.9 µs);
# on arrays they are the same ufunc. Operands share the dtype T, so results match.
_BINARY = {
    "Add": (_add, {}),
    "AddV2": (_fixed(operator.add), {}),
    "Sub": (_fixed(operator.sub), {}),
    "Mul": (_fixed(operator.mul), {}),
    "Div": (_div_factory, {}),
    "RealDiv": (_fixed(np.true_divide, quiet_fp=True), {"T": _FLOAT_COMPLEX}),
    "DivNoNan": (_div_no_nan, {}),
    "Xdivy": (_x_times(np.true_divide), {}),
    "Xlogy": (_x_times(lambda x, y: x * np.log(y)), {}),
    "Xlog1py": (_x_times(lambda x, y: x * np.log1p(y)), {}),
    "FloorDiv": (_int_div_fn(np.floor_divide, _floor_div_float),
                 {"T": [t for t in _NON_QUANTIZED_NUMBERS if not t.is_complex]}),
    "FloorMod": (_int_div_fn(np.mod, np.mod), {}),
    "TruncateDiv": (_int_div_fn(_trunc_div_int, _trunc_div_float, error=_UNEXPECTED),
                    {"T": [t for t in _NON_QUANTIZED_NUMBERS if not t.is_complex]}),
    "TruncateMod": (_int_div_fn(np.fmod, np.fmod, error=_UNEXPECTED),
                    {"T": [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]}),
    "Mod": (_int_div_fn(np.fmod, np.fmod),
            {"T": [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]}),
    "Pow": (_pow, {}),
    "Maximum": (_fixed(np.maximum), {}),
    "Minimum": (_fixed(np.minimum), {}),
    "SquaredDifference": (_squared_difference, {}),
    "Less": (_fixed(operator.lt), {}),
    "LessEqual": (_fixed(operator.le), {}),
    "Greater": (_fixed(operator.gt), {}),
    "GreaterEqual": (_fixed(operator.ge), {}),
    "LogicalAnd": (_fixed(operator.and_), {}),
    "LogicalOr": (_fixed(operator.or_), {}),
}
for _op, (_factory, _constraints) in _BINARY.items():
    _register(BinaryKernel, _op, _factory, **_constraints)


@register_kernel("Atan2", "CPU")
class Atan2Op(BinaryKernel):
    """z = atan2(y, x); the inputs are (y, x) in that order, as TF's."""

    def make_fn(self, dtype):
        return np.arctan2


class _EqualityKernel(BinaryKernel):
    """Equal/NotEqual; with incompatible_shape_error=False, shapes that do not broadcast
    give a scalar (False for Equal, True for NotEqual) instead of an error."""

    ufunc = np.equal
    mismatch = np.False_

    def __init__(self, ctx):
        super().__init__(ctx)
        self._strict = ctx.get_attr("incompatible_shape_error", True)

    def make_fn(self, dtype):
        ufunc = self.ufunc
        if dtype == dtypes.string:
            return lambda x, y: np.asarray(ufunc(x, y), dtype=np.bool_)
        return ufunc

    def compute(self, ctx, inputs):
        x, y = inputs
        try:
            return (self._fn(x, y),)
        except ValueError:
            err = incompatible_shapes(x, y)
            if err is None:
                raise
            if self._strict:
                raise err from None
            return (self.mismatch,)


@register_kernel("Equal", "CPU")
class EqualOp(_EqualityKernel):
    """z = (x == y)."""


@register_kernel("NotEqual", "CPU")
class NotEqualOp(_EqualityKernel):
    """z = (x != y)."""

    ufunc = np.not_equal
    mismatch = np.True_


# -- AddN ------------------------------------------------------------------------------------

@register_kernel("AddN", "CPU", T=_NON_QUANTIZED_NUMBERS)
class AddNOp(CwiseKernel):
    """Sum of N same-shaped inputs."""

    def compute(self, ctx, inputs):
        first = inputs[0]
        shape = first.shape
        if len({v.shape for v in inputs}) > 1:
            i, v = next((i, v) for i, v in enumerate(inputs) if v.shape != shape)
            raise errors.InvalidArgumentError(
                None, None,
                f"Inputs to operation {self.name} of type AddN must have the same size and "
                f"shape.  Input 0: {shape_str(shape)} != input {i}: {shape_str(v.shape)}")
        if len(inputs) == 1:
            return (first,)
        if not shape:  # NumPy scalars: the + operator is ~10x cheaper than np.add
            out = first
            for v in inputs[1:]:
                out = out + v
            return (out,)
        out = np.add(first, inputs[1])
        for v in inputs[2:]:
            np.add(out, v, out=out)
        return (out,)


# -- Cast ------------------------------------------------------------------------------------

def _bfloat16_truncate(x):
    bits = np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32).astype(dtypes.bfloat16.as_numpy_dtype)


@register_kernel("Cast", "CPU")
class CastOp(OpKernel):
    """y = x cast to DstT with TF's (C++ static_cast) rules: float -> int truncates toward
    zero (NaN and out-of-range values are implementation-defined, in TF too), int -> int
    wraps, complex -> real keeps the real part, anything -> bool is `!= 0` (of the real part
    for complex), SrcT == DstT forwards the input."""

    compilable = True  # pure

    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        src, dst = ctx.get_attr("SrcT").base_dtype, ctx.get_attr("DstT").base_dtype
        if (src == dtypes.string) != (dst == dtypes.string):
            raise errors.UnimplementedError(
                None, None,
                f"Cast {tf_type_name(src)} to {tf_type_name(dst)} is not supported")
        np_dst = dst.as_numpy_dtype
        if src == dst or (src.as_numpy_dtype == np_dst and not (src.is_quantized
                                                               or dst.is_quantized)):
            self._fn = _identity
        elif src.is_complex and dst == dtypes.bool:
            self._fn = lambda x: np.real(x) != 0
        elif src.is_complex and not dst.is_complex:
            self._fn = lambda x: _astype(np.real(x), np_dst)
        elif src == dtypes.float32 and dst == dtypes.bfloat16 and ctx.get_attr("Truncate", False):
            self._fn = _bfloat16_truncate
        else:
            self._fn = lambda x: _astype(x, np_dst)

    def is_expensive(self, inputs: list) -> bool:
        return inputs[0].size > BIG

    def compute(self, ctx, inputs):
        return (self._fn(inputs[0]),)


def _identity(x):
    return x


def _astype(x, np_type):
    with np.errstate(all="ignore"):
        return x.astype(np_type)


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


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
