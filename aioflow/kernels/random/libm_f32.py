"""glibc's single-precision logf, sinf and cosf on the inputs TF's float Box-Muller feeds them.

TF's Box-Muller for float (and half, bfloat16) calls the C library's logf and sincosf. glibc's
are not correctly rounded (logf is within 0.82 ulp), so rounding the double-precision result
to float differs from them on about 1% of inputs. Those inputs are few and known: logf only
sees u = k * 2**-23 (k < 2**23; 0 is clamped to 1e-7) and sinf/cosf only
v = float(2 * pi * k * 2**-23). `libm_f32.npz` lists, per function, the k where glibc's float
result is one ulp away from the double result rounded to float, and the direction; it was
made by running glibc 2.36 (x86-64) on every k (`python -m aioflow.kernels.random.libm_f32`).
So `logf(k)`, `sinf(k)`, `cosf(k)` below give glibc's values, and TF's normals, bit for bit.
The double result rounded to float is the same whichever double log/sin/cos computes it
(NumPy's SIMD ones, the C library's, long double's: checked on every k), so the table holds
whatever NumPy build runs it.
"""

from __future__ import annotations

import functools
import os

import numpy as np

_DOMAIN = 1 << 23
_PATH = os.path.join(os.path.dirname(__file__), "libm_f32.npz")
TWO_PI = 2 * np.pi


def log_arg(k: np.ndarray) -> np.ndarray:
    """u = k * 2**-23 as float, clamped below at 1e-7 (TF's Box-Muller's first uniform)."""
    u = k.astype(np.float32) * np.float32(2.0**-23)
    return np.maximum(u, np.float32(1e-7))


def trig_arg(k: np.ndarray) -> np.ndarray:
    """v = float(2 * pi * (k * 2**-23)), the product taken in double (TF writes 2 * M_PI)."""
    return (TWO_PI * (k.astype(np.float64) * 2.0**-23)).astype(np.float32)


def _rounded(fn, x: np.ndarray) -> np.ndarray:
    return fn(x.astype(np.float64)).astype(np.float32)


@functools.cache
def _table() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per function, two bitmaps over k (bit k & 7 of byte k >> 3): whether k needs a
    correction, and whether glibc's value is then one ulp further from zero (else nearer).
    Bitmaps make the lookup one gather per value (1 MiB each, built once)."""
    out = {}
    with np.load(_PATH) as data:
        for name in ("log", "sin", "cos"):
            keys = np.cumsum(data[name + "_gaps"].astype(np.int64))
            up = np.unpackbits(data[name + "_signs"], count=keys.size).astype(bool)
            out[name] = (_bitmap(keys), _bitmap(keys[up]))
    return out


def _bitmap(keys: np.ndarray) -> np.ndarray:
    flags = np.zeros(_DOMAIN, dtype=bool)
    flags[keys] = True
    return np.packbits(flags, bitorder="little")


def _bits(bitmap: np.ndarray, k: np.ndarray) -> np.ndarray:
    return (bitmap[k >> 3] >> (k & 7).astype(np.uint8)) & np.uint8(1)


def _corrected(name: str, k: np.ndarray, value: np.ndarray) -> np.ndarray:
    """`value` (the double result rounded) stepped one ulp where glibc's differs."""
    if k.size == 0:
        return value
    hits, ups = _table()[name]
    hit = _bits(hits, k).astype(bool)
    if hit.any():
        step = _bits(ups, k[hit]).astype(np.int32) * 2 - 1
        # Floats are sign and magnitude: +1 on the bits is one ulp away from zero.
        value.view(np.int32)[hit] += step
    return value


def logf(k: np.ndarray) -> np.ndarray:
    """glibc's logf(log_arg(k))."""
    return _corrected("log", k, _rounded(np.log, log_arg(k)))


def sinf(k: np.ndarray) -> np.ndarray:
    """glibc's sinf(trig_arg(k))."""
    return _corrected("sin", k, _rounded(np.sin, trig_arg(k)))


def cosf(k: np.ndarray) -> np.ndarray:
    """glibc's cosf(trig_arg(k))."""
    return _corrected("cos", k, _rounded(np.cos, trig_arg(k)))


def sincosf(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """glibc's sincosf(trig_arg(k)): sinf and cosf from one argument."""
    angle = (TWO_PI * (k.astype(np.float64) * 2.0**-23)).astype(np.float32).astype(np.float64)
    return (_corrected("sin", k, np.sin(angle).astype(np.float32)),
            _corrected("cos", k, np.cos(angle).astype(np.float32)))


def _glibc_values(fn_name: str, x: np.ndarray) -> np.ndarray:
    """The C library's float function on every element (slow: one ctypes call each)."""
    import ctypes
    import ctypes.util

    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    fn = getattr(libm, fn_name)
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return np.frompyfunc(fn, 1, 1)(x).astype(np.float32)


def _corrections(fn_name: str, np_fn, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The k where glibc differs from the rounded double result, and the signed steps."""
    mine = _rounded(np_fn, x)
    theirs = _glibc_values(fn_name, x)
    keys = np.nonzero(mine != theirs)[0]
    if np.any(np.abs(theirs[keys].astype(np.float64) - mine[keys]) >
              np.spacing(np.abs(mine[keys])) * 1.01):
        raise SystemExit(f"{fn_name}: a difference of more than one ulp")
    up = np.abs(theirs[keys]) > np.abs(mine[keys])
    return keys, up


def main() -> None:
    """Regenerate libm_f32.npz from this machine's C library (takes a minute)."""
    k = np.arange(_DOMAIN, dtype=np.int64)
    arrays = {}
    for name, x in (("log", log_arg(k)), ("sin", trig_arg(k)), ("cos", trig_arg(k))):
        keys, up = _corrections(name + "f", getattr(np, name), x)
        gaps = np.diff(keys, prepend=0)
        arrays[name + "_gaps"] = gaps.astype(np.uint16 if gaps.max(initial=0) < 65536
                                             else np.uint32)
        arrays[name + "_signs"] = np.packbits(up)
        print(name, keys.size)
    np.savez_compressed(_PATH, **arrays)


if __name__ == "__main__":
    main()
