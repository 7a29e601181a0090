"""TF's Tensor::SummarizeValue: the text Assert, Print (print_v2=false) and StringFormat /
tf.print (print_v2=true) make of a tensor, byte for byte as TF 2.21's.

Elements print as TF's StrCat does: a float with 6 significant digits, or 9 where those do
not read back as the same float (a double: 15, or 17); values below the smallest normal
print as 0, as TF's threads flush denormals; bools as 1/0; strings C-escaped (bytes of
128 and above left as they are), quoted in v2; types TF cannot print (complex) as "?".
Text is returned as str with undecodable bytes as surrogates (`surrogateescape`), so
encoding it back gives TF's exact bytes."""

from __future__ import annotations

import numpy as np

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", "'": "\\'", '"': '\\"'}


def c_escape(data: bytes) -> str:
    """absl::Utf8SafeCEscape: C escapes for control bytes and quotes; bytes of 128 and
    above (valid UTF-8 or not) are kept."""
    out = []
    for ch in data.decode("utf-8", "surrogateescape"):
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:03o}")
        else:
            out.append(ch)
    return "".join(out)


def _special(value: float) -> str | None:
    if value != value:
        return "-nan" if np.signbit(value) else "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return None


def float_str(value) -> str:
    """TF's FloatToBuffer of a float32 (halves and bfloat16s print as their float32)."""
    f = np.float32(value)
    if abs(f) < np.finfo(np.float32).tiny:
        f = np.float32(-0.0) if np.signbit(f) else np.float32(0.0)
    special = _special(float(f))
    if special is not None:
        return special
    text = f"{float(f):.6g}"
    return text if np.float32(float(text)) == f else f"{float(f):.9g}"


def double_str(value) -> str:
    """TF's DoubleToBuffer: 15 significant digits, 17 where 15 do not read back."""
    d = float(value)
    if abs(d) < np.finfo(np.float64).tiny:
        d = -0.0 if np.signbit(d) else 0.0
    special = _special(d)
    if special is not None:
        return special
    text = f"{d:.15g}"
    return text if float(text) == d else f"{d:.17g}"


def _formatter(dtype: np.dtype, print_v2: bool):
    """fn(element) -> str for elements of `dtype` (TF's PrintOneElement)."""
    kind = dtype.kind
    if kind in ("S", "O", "U"):
        def text(v):
            b = v if isinstance(v, bytes) else str(v).encode("utf-8", "surrogateescape")
            return f'"{c_escape(b)}"' if print_v2 else c_escape(b)
        return text
    if kind == "b":
        return lambda v: "1" if v else "0"
    if kind == "f" or dtype.name == "bfloat16":
        return double_str if dtype == np.float64 else float_str
    if kind in ("i", "u"):
        return lambda v: str(int(v))
    return None  # TF prints "?"


def summarize_value(value, max_entries: int, print_v2: bool = False) -> str:
    """Tensor::SummarizeValue(max_entries, print_v2)."""
    array = np.asarray(value)
    num_elts = array.size
    if max_entries < 0:
        max_entries = num_elts
    limit = min(max_entries, num_elts)
    fmt = _formatter(array.dtype, print_v2)
    flat = array.reshape(-1)
    if fmt is None:  # TF's "irregular" types
        ret = " ".join("?" for _ in range(limit))
        ret += "..." if max_entries < num_elts else ""
        return f"[{ret}]" if print_v2 and array.ndim else ret
    if array.dtype.kind == "b" and limit == 0:
        return ""  # (TF: no data pointer for a bool summary of nothing)
    if not array.shape:
        ret = " ".join(fmt(flat[i]) for i in range(limit))
        return ret + ("..." if num_elts > limit else "")
    if print_v2:
        out: list[str] = []
        _one_dim_v2(out, array.shape, 0, 0, limit, flat, fmt)
        return "".join(out)
    return _summary_v1(array.shape, flat, limit, num_elts, fmt)


def _spacing(out: list, dim: int, ndims: int) -> None:
    """Between two entries of `dim`: a space in the last dim, else newlines and indent."""
    if dim == ndims - 1:
        out.append(" ")
    else:
        out.append("\n" * (ndims - dim - 1) + " " * (dim + 1))


def _one_dim_v2(out: list, shape, dim: int, start: int, ends: int, flat, fmt) -> None:
    """PrintOneDimV2: `ends` entries at each end of every dimension, "..." between."""
    if dim == len(shape):
        out.append(fmt(flat[start]))
        return
    out.append("[")
    count = shape[dim]
    step = 1
    for size in shape[dim + 1:]:
        step *= size
    for i in range(min(ends, count)):
        if i > 0:
            _spacing(out, dim, len(shape))
        _one_dim_v2(out, shape, dim + 1, start + step * i, ends, flat, fmt)
    if count > 2 * ends:
        _spacing(out, dim, len(shape))
        out.append("...")
    for i in range(max(ends, count - ends), count):
        _spacing(out, dim, len(shape))
        _one_dim_v2(out, shape, dim + 1, start + step * i, ends, flat, fmt)
    out.append("]")


def _summary_v1(shape, flat, limit: int, num_elts: int, fmt) -> str:
    """PrintOneDim: the first `limit` entries in row-major order, nested in []."""
    out: list[str] = []
    index = [0]

    def one_dim(dim: int) -> None:
        if index[0] >= limit:
            return
        count = shape[dim]
        if dim == len(shape) - 1:
            for i in range(count):
                if index[0] >= limit:
                    if dim != 0:
                        out.append("...")
                    return
                if i > 0:
                    out.append(" ")
                out.append(fmt(flat[index[0]]))
                index[0] += 1
            return
        for _ in range(count):
            opened = False
            if index[0] < limit:
                out.append("[")
                opened = True
            one_dim(dim + 1)
            if index[0] < limit or opened:
                out.append("]")

    one_dim(0)
    if num_elts > limit:
        out.append("...")
    return "".join(out)
