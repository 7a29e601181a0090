"""CPU kernels for TF's string ops, on NumPy object arrays of `bytes` (aioflow's string
tensors), plus ShardedFilename / ShardedFilespec.

Every kernel works element by element in Python, so each goes to the thread pool when
its input holds more than POOL_ABOVE elements and runs inline otherwise (ShardedFilename
and ShardedFilespec, on scalars, always inline). Inputs are checked as TF's kernels check
them, with TF's error classes and messages (checked side by side with TF 2.21 in
tests/test_kernels_string.py against tests/data/string_kernels.json); the executor adds
the node's name.

Semantics worth knowing (each as TF's kernel):

- UTF8_CHAR units (Substr, StringLength) count the bytes that are not UTF-8 continuation
  bytes (0b10xxxxxx), so invalid UTF-8 is counted, not refused.
- AsString formats with C's printf flags: fill is one of " +-#0" (else "Fill argument not
  supported"), non-finite floats print as C prints them ("-nan", "inf", space padded).
- StringToNumber parses as TF's safe_strto*: ASCII whitespace around the number is
  allowed, floats accept "inf"/"nan"/hex, and overflow to inf; integers are plain decimal
  and out of range is an error.
- Regexes are RE2's (aioflow/kernels/strings/re2_compat.py says how they map onto Python's `re`).
- StringUpper/StringLower with encoding "" change ASCII letters only; with "utf-8" they
  apply Unicode's full case mappings (ß -> SS), invalid bytes becoming U+FFFD.
- StringToHashBucketFast is ``Fingerprint64(s) % num_buckets`` (FarmHash, see
  aioflow/lib/fingerprint.py); ...Strong is ``SipHash-2-4(key, s) % num_buckets``.
- DecodeBase64 follows TF's decoder (web-safe alphabet, padding optional, trailing bits
  ignored) and its two errors.
"""

from __future__ import annotations

import base64
import math
import re

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import shape_str, tf_type_name
from aioflow.kernels.strings import re2_compat
from aioflow.lib.fingerprint import fingerprint64, siphash

#: String kernels go to the thread pool above this many elements (their work is a Python
#: call per element, a few microseconds each: far above a pool hand-off's ~40 µs here).
POOL_ABOVE = 4096


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _strings(value) -> np.ndarray:
    """A string input as an object array of bytes (0-d for a scalar)."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        return value
    return np.asarray(value, dtype=object)


def _text(s: bytes) -> str:
    """Bytes for an error message (TF prints them raw)."""
    return s.decode("utf-8", "replace")


def _map(fn, arr: np.ndarray, otype=object) -> np.ndarray:
    """fn applied to every element of `arr`, as an array of arr's shape."""
    flat = [fn(v) for v in arr.ravel().tolist()]
    return np.array(flat, dtype=otype).reshape(arr.shape) if otype is not object \
        else _object_array(flat, arr.shape)


def _object_array(items: list, shape) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


class _StringKernel(OpKernel):
    """Per-element work: to the pool above POOL_ABOVE elements of the first (or last)
    input."""

    expensive = None
    pool_above = POOL_ABOVE


def _is_trail(b: int) -> bool:
    return b & 0xC0 == 0x80


def _utf8_len(s: bytes) -> int:
    return sum(1 for b in s if b & 0xC0 != 0x80)


# -- StringJoin, ReduceJoin ---------------------------------------------------------------------

@register_kernel("StringJoin", "CPU")
class StringJoinOp(_StringKernel):
    """Joins its inputs element-wise with `separator`; scalars broadcast, all other inputs
    share one shape."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.sep = ctx.get_attr("separator")

    def is_expensive(self, inputs) -> bool:
        return any(np.size(v) > POOL_ABOVE for v in inputs)

    def compute(self, ctx, inputs):
        arrays = [_strings(v) for v in inputs]
        shape = None
        for a in arrays:
            if a.ndim:
                if shape is None:
                    shape = a.shape
                elif a.shape != shape:
                    raise _invalid(f"Input shapes do not match: {shape_str(shape)} vs. "
                                   f"{shape_str(a.shape)}")
        shape = () if shape is None else shape
        n = math.prod(shape)
        flats = [a.ravel().tolist() if a.ndim else [a.item()] * n for a in arrays]
        sep = self.sep
        joined = [sep.join(t) for t in zip(*flats, strict=True)] if flats else [b""] * n
        return [_object_array(joined, shape)]


@register_kernel("ReduceJoin", "CPU")
class ReduceJoinOp(_StringKernel):
    """Joins along `reduction_indices` (in the order given: the first listed axis varies
    fastest); no axes returns the input."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.sep = ctx.get_attr("separator")
        self.keep_dims = ctx.get_attr("keep_dims")

    def compute(self, ctx, inputs):
        x = _strings(inputs[0])
        ndim = x.ndim
        axes: list[int] = []
        for a in np.ravel(inputs[1]).tolist():
            if not -ndim <= a < ndim:
                raise errors.OutOfRangeError(
                    None, None, f"Invalid reduction dimension {a} for input with {ndim} "
                                f"dimension(s)")
            if (a + ndim) % ndim in axes:
                raise _invalid(f"Duplicate reduction dimension {a}")
            axes.append((a + ndim) % ndim)
        if not axes:
            return [x]
        kept = [d for d in range(ndim) if d not in axes]
        order = kept + axes[::-1]
        t = np.transpose(x, order)
        kept_shape = [x.shape[d] for d in kept]
        rows = t.reshape(math.prod(kept_shape), math.prod(x.shape[d] for d in axes))
        sep = self.sep
        joined = [sep.join(r) for r in rows.tolist()]
        shape = [1 if d in axes else x.shape[d] for d in range(ndim)] if self.keep_dims \
            else kept_shape
        return [_object_array(joined, shape)]


# -- Substr, StringLength ------------------------------------------------------------------------

@register_kernel("Substr", "CPU", T=[dtypes.int32, dtypes.int64])
class SubstrOp(_StringKernel):
    """input[pos:pos + len] in bytes or UTF-8 characters; negative pos counts from the end,
    negative len takes the rest; pos outside [-length, length] is an error. pos and len
    share a shape; input broadcasts against it (ranks 1 and 2 only, as TF)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.utf8 = ctx.get_attr("unit") == b"UTF8_CHAR"

    def compute(self, ctx, inputs):
        x = _strings(inputs[0])
        pos, length = np.asarray(inputs[1]), np.asarray(inputs[2])
        if pos.shape != length.shape:
            raise _invalid(f"pos and len should have the same shape, got: "
                           f"{shape_str(pos.shape)} vs. {shape_str(length.shape)}")
        if x.shape != pos.shape:
            try:
                shape = np.broadcast_shapes(x.shape, pos.shape)
            except ValueError:
                raise _invalid(f"Incompatible shapes: {shape_str(x.shape)} vs. "
                               f"{shape_str(pos.shape)}") from None
            if len(shape) not in (1, 2):
                raise errors.UnimplementedError(
                    None, None, f"Substr broadcast not implemented for {len(shape)} dimensions")
            x = np.broadcast_to(x, shape)
            pos, length = np.broadcast_to(pos, shape), np.broadcast_to(length, shape)
        out = []
        utf8 = self.utf8
        for i, (s, p, n) in enumerate(zip(x.ravel().tolist(), pos.ravel().tolist(),
                                          length.ravel().tolist(), strict=True)):
            if utf8:
                starts = [k for k, b in enumerate(s) if not _is_trail(b)]
                size = len(starts)
            else:
                size = len(s)
            if not -size <= p <= size:
                where = "" if utf8 else f" b'{_text(s)}'"
                raise _invalid(f"pos {p} out of range for string{where} at index {i}")
            if p < 0:
                p += size
            end = size if n < 0 else min(p + n, size)
            if utf8:
                b0 = starts[p] if p < size else len(s)
                b1 = starts[end] if end < size else len(s)
                out.append(s[b0:b1])
            else:
                out.append(s[p:end])
        return [_object_array(out, x.shape)]


@register_kernel("StringLength", "CPU")
class StringLengthOp(_StringKernel):
    """Length in bytes, or in UTF-8 characters (bytes that are not continuation bytes)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.fn = _utf8_len if ctx.get_attr("unit") == b"UTF8_CHAR" else len

    def compute(self, ctx, inputs):
        return [_map(self.fn, _strings(inputs[0]), np.int32)]


# -- AsString ------------------------------------------------------------------------------------

_INT_TYPES = {dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8,
              dtypes.uint16, dtypes.uint32, dtypes.uint64}
_FLOAT_TYPES = {dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64}
_COMPLEX_TYPES = {dtypes.complex64, dtypes.complex128}
#: The largest printf width or precision (a C int).
_C_INT_MAX = 2**31 - 1


def _c_format(spec: str, flag: str, width: int, value: float) -> str:
    """C's printf of one double with `spec` (Python's % agrees except on nan and inf,
    which C never zero-pads and prints with their sign, "-nan")."""
    if math.isfinite(value):
        return spec % value
    sign = "-" if math.copysign(1.0, value) < 0 else ("+" if flag == "+" else "")
    body = sign + ("nan" if math.isnan(value) else "inf")
    if len(body) < width:
        body = body.ljust(width) if flag == "-" else body.rjust(width)
    return body


@register_kernel("AsString", "CPU")
class AsStringOp(_StringKernel):
    """Numbers and bools as strings, formatted as TF's printf format string
    ``%[fill][width][.precision](d|f|e|g)``; strings pass through."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = dtype = dtypes.as_dtype(ctx.get_attr("T"))
        precision = ctx.get_attr("precision")
        scientific = ctx.get_attr("scientific")
        shortest = ctx.get_attr("shortest")
        width = ctx.get_attr("width")
        fill = ctx.get_attr("fill")
        if scientific and shortest:
            raise _invalid("Cannot select both scientific and shortest notation")
        if len(fill) > 1:
            raise _invalid("Fill string must be one or fewer characters")
        if width > _C_INT_MAX or precision > _C_INT_MAX:  # (C's printf reads an int)
            raise _invalid(f"width {width} or precision {precision} is larger than "
                           f"{_C_INT_MAX}")
        flag = fill.decode("latin-1")
        if flag and flag not in " +-#0":
            raise _invalid(f'Fill argument not supported: "{flag}"')
        name = tf_type_name(dtype)
        if dtype in _INT_TYPES or dtype == dtypes.bool or dtype == dtypes.string:
            if precision > -1 and dtype != dtypes.string:
                raise _invalid(f"precision not supported for datatype {name}")
            if (scientific or shortest) and dtype != dtypes.string:
                raise _invalid(f"scientific and shortest format not supported for datatype "
                               f"{name}")
        elif dtype == dtypes.variant:
            raise errors.UnimplementedError(None, None, "AsString of variant tensors is not "
                                            "supported")
        spec = "%" + flag + (str(width) if width > -1 else "")
        if dtype in _INT_TYPES:
            self.fmt = (spec + "d").__mod__
        elif dtype in _FLOAT_TYPES or dtype in _COMPLEX_TYPES:
            spec += (f".{precision}" if precision > -1 else "")
            spec += "e" if scientific else ("g" if shortest else "f")
            w = width

            def one(v: float, spec=spec, flag=flag, w=w) -> str:
                return _c_format(spec, flag, w, v)
            if dtype in _COMPLEX_TYPES:
                self.fmt = lambda c: f"({one(c.real)},{one(c.imag)})"
            else:
                self.fmt = one
        else:
            self.fmt = None

    def compute(self, ctx, inputs):
        x = inputs[0]
        if self.dtype == dtypes.string:
            return [_strings(x)]
        if self.dtype == dtypes.bool:
            return [_map(lambda b: b"true" if b else b"false", np.asarray(x))]
        arr = np.asarray(x)
        if self.dtype in (dtypes.float16, dtypes.bfloat16):
            arr = arr.astype(np.float32)
        fmt = self.fmt
        return [_map(lambda v: fmt(v).encode(), arr)]


# -- StringToNumber ------------------------------------------------------------------------------

_WS = b" \t\n\v\f\r"
_FLOAT_RE = re.compile(rb"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity"
                       rb"|nan)", re.IGNORECASE)
_HEX_RE = re.compile(rb"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                     rb"(?:[pP][+-]?[0-9]+)?")
_INT_RE = re.compile(rb"[+-]?[0-9]+")


def _parse_float(s: bytes) -> float | None:
    t = s.strip(_WS)
    if _FLOAT_RE.fullmatch(t):
        return float(t)
    if _HEX_RE.fullmatch(t):
        return float.fromhex(t.decode())
    return None


@register_kernel("StringToNumber", "CPU", out_type=[dtypes.float32, dtypes.float64,
                                                    dtypes.int32, dtypes.int64,
                                                    dtypes.uint32, dtypes.uint64])
class StringToNumberOp(_StringKernel):
    """Parses each string as out_type (TF's safe_strto*)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = dtypes.as_dtype(ctx.get_attr("out_type"))
        np_type = self.dtype.as_numpy_dtype
        if self.dtype in (dtypes.float32, dtypes.float64):
            self.parse = _parse_float
        else:
            info = np.iinfo(np_type)
            lo, hi = int(info.min), int(info.max)

            def parse(s: bytes):
                t = s.strip(_WS)
                if not _INT_RE.fullmatch(t):
                    return None
                v = int(t)
                return v if lo <= v <= hi else None
            self.parse = parse

    def compute(self, ctx, inputs):
        x = _strings(inputs[0])
        parse = self.parse
        out = []
        for s in x.ravel().tolist():
            v = parse(s)
            if v is None:
                raise _invalid(f"StringToNumberOp could not correctly convert string: "
                               f"{_text(s)}")
            out.append(v)
        with np.errstate(over="ignore"):
            return [np.array(out, dtype=self.dtype.as_numpy_dtype).reshape(x.shape)]


# -- regular expressions -------------------------------------------------------------------------

def _compile(pattern: bytes):
    try:
        return re2_compat.compile_re2(pattern)
    except re2_compat.Re2Error as e:
        raise _invalid(f"Invalid pattern: {_text(pattern)}, error: {e}") from None


def _scalar_string(value, what: str) -> bytes:
    arr = _strings(value)
    if arr.ndim:
        raise _invalid(f"{what} must be scalar, but received {shape_str(arr.shape)}")
    return arr.item()


def _replace_all(x, compiled, groups, rewrite, global_):
    x = _strings(x)
    return _map(lambda s: re2_compat.replace(compiled, groups, rewrite, s, global_), x)


@register_kernel("RegexReplace", "CPU")
class RegexReplaceOp(_StringKernel):
    """RE2::GlobalReplace (replace_global) or RE2::Replace of each string."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.global_ = ctx.get_attr("replace_global")

    def is_expensive(self, inputs) -> bool:
        return np.size(inputs[0]) > POOL_ABOVE

    def compute(self, ctx, inputs):
        pattern = _scalar_string(inputs[1], "Pattern")
        rewrite = _scalar_string(inputs[2], "Rewrite")
        compiled, groups = _compile(pattern)
        return [_replace_all(inputs[0], compiled, groups, re2_compat.parse_rewrite(rewrite),
                             self.global_)]


@register_kernel("StaticRegexReplace", "CPU")
class StaticRegexReplaceOp(_StringKernel):
    """RegexReplace with the pattern and rewrite as attrs (compiled once)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.compiled, self.groups = _compile(ctx.get_attr("pattern"))
        self.rewrite = re2_compat.parse_rewrite(ctx.get_attr("rewrite"))
        self.global_ = ctx.get_attr("replace_global")

    def compute(self, ctx, inputs):
        return [_replace_all(inputs[0], self.compiled, self.groups, self.rewrite,
                             self.global_)]


def _full_match_all(x, compiled) -> np.ndarray:
    return _map(lambda s: re2_compat.full_match(compiled, s), _strings(x), np.bool_)


@register_kernel("RegexFullMatch", "CPU")
class RegexFullMatchOp(_StringKernel):
    """RE2::FullMatch of each string against a scalar pattern."""

    def is_expensive(self, inputs) -> bool:
        return np.size(inputs[0]) > POOL_ABOVE

    def compute(self, ctx, inputs):
        compiled, _ = _compile(_scalar_string(inputs[1], "Pattern"))
        return [_full_match_all(inputs[0], compiled)]


@register_kernel("StaticRegexFullMatch", "CPU")
class StaticRegexFullMatchOp(_StringKernel):
    """RegexFullMatch with the pattern as an attr (compiled once)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.compiled, _ = _compile(ctx.get_attr("pattern"))

    def compute(self, ctx, inputs):
        return [_full_match_all(inputs[0], self.compiled)]


# -- StringSplitV2, StringStrip, case ------------------------------------------------------------

@register_kernel("StringSplitV2", "CPU")
class StringSplitV2Op(_StringKernel):
    """Splits each string of a vector on `sep` (on runs of ASCII whitespace, dropping empty
    tokens, when sep is empty), at most maxsplit times (all when negative), into a sparse
    [batch, max tokens] matrix: indices (int64 [n, 2]), values, dense shape."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.maxsplit = ctx.get_attr("maxsplit")

    def compute(self, ctx, inputs):
        x, sep = _strings(inputs[0]), _strings(inputs[1])
        if x.ndim != 1:
            raise _invalid(f"input must be a vector, got shape: {shape_str(x.shape)}")
        if sep.ndim != 0:
            raise _invalid(f"sep must be a scalar, got shape: {shape_str(sep.shape)}")
        sep = sep.item()
        maxsplit = self.maxsplit
        indices: list[tuple[int, int]] = []
        values: list[bytes] = []
        widest = 0
        for row, s in enumerate(x.tolist()):
            tokens = s.split(sep or None, maxsplit if maxsplit >= 0 else -1)
            widest = max(widest, len(tokens))
            indices.extend((row, k) for k in range(len(tokens)))
            values.extend(tokens)
        idx = np.array(indices, dtype=np.int64).reshape(len(indices), 2)
        return [idx, _object_array(values, (len(values),)),
                np.array([x.shape[0], widest], dtype=np.int64)]


@register_kernel("StringStrip", "CPU")
class StringStripOp(_StringKernel):
    """Strips leading and trailing ASCII whitespace."""

    def compute(self, ctx, inputs):
        return [_map(bytes.strip, _strings(inputs[0]))]


class _CaseOp(_StringKernel):
    ascii_fn = None
    text_fn = None

    def __init__(self, ctx):
        super().__init__(ctx)
        encoding = ctx.get_attr("encoding")
        if encoding not in (b"", b"utf-8"):
            raise _invalid(f"only utf-8 or '' (no encoding) is supported, received "
                           f"{_text(encoding)}")
        if encoding:
            text_fn = type(self).text_fn
            self.fn = lambda s: text_fn(s.decode("utf-8", "replace")).encode()
        else:
            self.fn = type(self).ascii_fn

    def compute(self, ctx, inputs):
        return [_map(self.fn, _strings(inputs[0]))]


@register_kernel("StringUpper", "CPU")
class StringUpperOp(_CaseOp):
    """Upper case: ASCII letters (encoding ""), or Unicode's full mapping ("utf-8")."""

    ascii_fn = bytes.upper
    text_fn = str.upper


@register_kernel("StringLower", "CPU")
class StringLowerOp(_CaseOp):
    """Lower case: ASCII letters (encoding ""), or Unicode's full mapping ("utf-8")."""

    ascii_fn = bytes.lower
    text_fn = str.lower


# -- hash buckets --------------------------------------------------------------------------------

@register_kernel("StringToHashBucketFast", "CPU")
class StringToHashBucketFastOp(_StringKernel):
    """Fingerprint64(s) % num_buckets (FarmHash), int64."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.n = ctx.get_attr("num_buckets")

    def compute(self, ctx, inputs):
        n = self.n
        return [_map(lambda s: fingerprint64(s) % n, _strings(inputs[0]), np.int64)]


@register_kernel("StringToHashBucketStrong", "CPU")
class StringToHashBucketStrongOp(_StringKernel):
    """SipHash-2-4(key, s) % num_buckets, int64."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.n = ctx.get_attr("num_buckets")
        key = list(ctx.get_attr("key"))
        if len(key) != 2:
            raise _invalid("Key must have 2 elements")
        self.key = (key[0] & ((1 << 64) - 1), key[1] & ((1 << 64) - 1))

    def compute(self, ctx, inputs):
        n, key = self.n, self.key
        return [_map(lambda s: siphash(key, s) % n, _strings(inputs[0]), np.int64)]


# -- base64 --------------------------------------------------------------------------------------

_B64_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _b64_valid(chunk: bytes) -> None:
    if not _B64_CHARS.issuperset(chunk):
        raise _invalid("Invalid character found in base64.")


def tf_base64_decode(data: bytes) -> bytes:
    """TF's Base64Decode (web-safe alphabet; padding optional; its errors, in its order)."""
    if not data:
        return b""
    n, b = len(data), 0
    while n - b > 4:
        _b64_valid(data[b:b + 4])
        b += 4
    end = n
    if end - b == 4:
        if data[b + 2] == 0x3D and data[b + 3] == 0x3D:
            end -= 2
        if data[b + 2] != 0x3D and data[b + 3] == 0x3D:
            end -= 1
    remain = end - b
    if remain == 1:
        raise _invalid("Base64 string length cannot be 1 modulo 4.")
    tail = data[b:end]
    _b64_valid(tail)
    decoded = base64.urlsafe_b64decode(data[:b] + tail + b"A" * (4 - remain))
    return decoded[:3 * (b // 4) + remain - 1]


@register_kernel("EncodeBase64", "CPU")
class EncodeBase64Op(_StringKernel):
    """Web-safe base64 (- and _), '=' padding only with pad."""

    def __init__(self, ctx):
        super().__init__(ctx)
        pad = ctx.get_attr("pad")
        self.fn = base64.urlsafe_b64encode if pad else \
            (lambda s: base64.urlsafe_b64encode(s).rstrip(b"="))

    def compute(self, ctx, inputs):
        return [_map(self.fn, _strings(inputs[0]))]


@register_kernel("DecodeBase64", "CPU")
class DecodeBase64Op(_StringKernel):
    """Inverse of EncodeBase64, with or without padding."""

    def compute(self, ctx, inputs):
        return [_map(tf_base64_decode, _strings(inputs[0]))]


# -- ShardedFilename, ShardedFilespec ------------------------------------------------------------

def _scalar_input(value, what: str):
    arr = np.asarray(value, dtype=object if isinstance(value, (bytes, np.ndarray)) and
                     np.asarray(value).dtype == object else None)
    if arr.ndim:
        raise _invalid(f"{what} must be a scalar, got shape {shape_str(arr.shape)}")
    return arr.item()


@register_kernel("ShardedFilename", "CPU")
class ShardedFilenameOp(OpKernel):
    """basename-%05d-of-%05d."""

    def compute(self, ctx, inputs):
        base = _scalar_input(inputs[0], "basename")
        shard = _scalar_input(inputs[1], "shard")
        num = _scalar_input(inputs[2], "num_shards")
        return [np.array(b"%s-%05d-of-%05d" % (base, shard, num), dtype=object)]


@register_kernel("ShardedFilespec", "CPU")
class ShardedFilespecOp(OpKernel):
    """basename-?????-of-%05d."""

    def compute(self, ctx, inputs):
        base = _scalar_input(inputs[0], "basename")
        num = _scalar_input(inputs[1], "num_shards")
        return [np.array(b"%s-?????-of-%05d" % (base, num), dtype=object)]
