"""Philox-4x32-10, TensorFlow's counter-based generator, vectorised in NumPy, and TF's maps
from its 32-bit words to numbers (uniform floats, Box-Muller normals, integers in a range).

A generator is a 64-bit key (two words) and a 128-bit counter (four words, low first); one
call turns the counter into four 32-bit words and steps the counter by one. TF's random
kernels split their output into groups that each start at a known counter offset, so
every group is computed at once here: `blocks(key, counter, offsets)` runs the ten rounds
over all the counters `counter + offsets` together (uint64 products, no Python loop per
element).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from aioflow.kernels.random import libm_f32

# Philox-4x32's constants (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
_MUL_A = np.uint64(0xD2511F53)
_MUL_B = np.uint64(0xCD9E8D57)
_WEYL_A = 0x9E3779B9
_WEYL_B = 0xBB67AE85
_ROUNDS = 10
_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)
M64 = (1 << 64) - 1


class Philox:
    """A generator's state: `key` (k0, k1) and `counter` (c0, c1, c2, c3), plain ints."""

    __slots__ = ("key", "counter")

    def __init__(self, key, counter):
        self.key = (int(key[0]) & 0xFFFFFFFF, int(key[1]) & 0xFFFFFFFF)
        self.counter = tuple(int(c) & 0xFFFFFFFF for c in counter)

    @classmethod
    def from_seeds(cls, seed: int, seed2: int) -> Philox:
        """TF's PhiloxRandom(seed, seed2): the key is seed's two halves, the counter's high
        half seed2's."""
        seed &= M64
        seed2 &= M64
        return cls((seed, seed >> 32), (0, 0, seed2, seed2 >> 32))

    def counter_int(self) -> int:
        """The 128-bit counter as one int."""
        c = self.counter
        return c[0] | c[1] << 32 | c[2] << 64 | c[3] << 96

    def skipped(self, n: int) -> Philox:
        """A copy whose counter is `n` blocks further (TF's Skip, wrapping at 2**128)."""
        value = (self.counter_int() + n) & ((1 << 128) - 1)
        return Philox(self.key, [(value >> s) & 0xFFFFFFFF for s in (0, 32, 64, 96)])

    def blocks(self, offsets) -> np.ndarray:
        """The four words (uint32, shape [n, 4]) made at counters `counter + offsets`."""
        return philox_blocks(self.key, self.counter, offsets)

    def words(self, n: int) -> np.ndarray:
        """The first `n` words of the stream from this counter (blocks 0, 1, ... in order)."""
        return self.blocks(np.arange((n + 3) // 4, dtype=np.uint64)).reshape(-1)[:n]


def _counters(counter, offsets: np.ndarray) -> list[np.ndarray]:
    """The four counter words (uint64 arrays holding 32 bits) of `counter + offsets`."""
    offsets = np.asarray(offsets, dtype=np.uint64)
    low = np.uint64(counter[0] | counter[1] << 32)
    total = low + offsets  # wraps modulo 2**64
    carry = (total < offsets).astype(np.uint64)
    high = np.uint64(counter[2] | counter[3] << 32) + carry
    return [total & _LOW32, total >> _SHIFT32, high & _LOW32, high >> _SHIFT32]


def philox_blocks(key, counter, offsets) -> np.ndarray:
    """Philox-4x32-10 of the counters `counter + offsets` under `key`: uint32 [n, 4].
    A round: (c0, c1, c2, c3) -> (hi(B*c2) ^ c1 ^ k0, lo(B*c2), hi(A*c0) ^ c3 ^ k1, lo(A*c0)),
    then the key steps by the Weyl constants; in place, to spare allocations."""
    c0, c1, c2, c3 = _counters(counter, offsets)
    k0, k1 = int(key[0]), int(key[1])
    p0, p1 = np.empty_like(c0), np.empty_like(c0)
    for _ in range(_ROUNDS):
        np.multiply(c0, _MUL_A, out=p0)
        np.multiply(c2, _MUL_B, out=p1)
        np.right_shift(p1, _SHIFT32, out=c0)
        c0 ^= c1
        c0 ^= np.uint64(k0)
        np.right_shift(p0, _SHIFT32, out=c2)
        c2 ^= c3
        c2 ^= np.uint64(k1)
        np.bitwise_and(p1, _LOW32, out=c1)
        np.bitwise_and(p0, _LOW32, out=c3)
        k0 = (k0 + _WEYL_A) & 0xFFFFFFFF
        k1 = (k1 + _WEYL_B) & 0xFFFFFFFF
    out = np.empty((c0.size, 4), dtype=np.uint32)
    for i, c in enumerate((c0, c1, c2, c3)):
        out[:, i] = c
    return out


# -- TF's maps from words to numbers ---------------------------------------------------------

def uint32_to_float(x: np.ndarray) -> np.ndarray:
    """[0, 1) floats: 23 mantissa bits under exponent 0, minus one (TF's Uint32ToFloat)."""
    bits = (np.asarray(x, dtype=np.uint32) & np.uint32(0x7FFFFF)) | np.uint32(127 << 23)
    return bits.view(np.float32) - np.float32(1.0)


def uint64_to_double(x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    """[0, 1) doubles from 20 bits of x0 over the 32 of x1 (TF's Uint64ToDouble)."""
    high = np.asarray(x0, dtype=np.uint64) & np.uint64(0xFFFFF)
    bits = (high << _SHIFT32) | np.asarray(x1, dtype=np.uint64) | np.uint64(1023 << 52)
    return bits.view(np.float64) - 1.0


def uint16_to_half(x: np.ndarray) -> np.ndarray:
    """[0, 1) halfs from the low 10 bits of each word (TF's Uint16ToHalf)."""
    bits = (np.asarray(x, dtype=np.uint32) & np.uint32(0x3FF)) | np.uint32(15 << 10)
    return bits.astype(np.uint16).view(np.float16) - np.float16(1.0)


def uint16_to_bfloat16_bits(x: np.ndarray) -> np.ndarray:
    """[0, 1) bfloat16s (as float32) from the low 7 bits of each word (TF's
    Uint16ToGfloat16): exact in float32, so the subtraction is exact too."""
    bits = ((np.asarray(x, dtype=np.uint32) & np.uint32(0x7F)) | np.uint32(127 << 7)) << 16
    return bits.view(np.float32) - np.float32(1.0)


# -- distributions: one 128-bit block per group of outputs -----------------------------------

def _log_f64(x: np.ndarray) -> np.ndarray:
    """The C library's double log, element by element (NumPy's own SIMD log differs from it
    in the last bit on ~0.3% of inputs, and TF calls the C library's)."""
    if x.size == 0:
        return x.astype(np.float64)
    return _LOG(x).astype(np.float64)


_LOG = np.frompyfunc(math.log, 1, 1)
_LOG1P = np.frompyfunc(math.log1p, 1, 1)
def _c_pow(x: float, y: float) -> float:
    """C's pow: an overflow is an infinity (its sign that of x to an odd integer power),
    a negative base to a non-integer power NaN; Python's math.pow raises for both."""
    try:
        return math.pow(x, y)
    except OverflowError:
        odd = y == int(y) and int(y) % 2 == 1
        return -math.inf if x < 0 and odd else math.inf
    except ValueError:
        return math.nan


_POW = np.frompyfunc(_c_pow, 2, 1)


def log1p_f64(x: np.ndarray) -> np.ndarray:
    """The C library's log1p, element by element."""
    return _LOG1P(x).astype(np.float64) if x.size else x.astype(np.float64)


def pow_f64(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The C library's pow, element by element."""
    return _POW(x, y).astype(np.float64) if x.size else x.astype(np.float64)


def log_f64(x: np.ndarray) -> np.ndarray:
    """The C library's log; -inf at 0."""
    out = np.full(x.shape, -np.inf)
    positive = x > 0
    out[positive] = _log_f64(x[positive])
    return out


def box_muller_float(x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TF's BoxMullerFloat: two float normals from two words, with glibc's logf/sinf/cosf."""
    k0 = (x0 & np.uint32(0x7FFFFF)).astype(np.int64)
    k1 = (x1 & np.uint32(0x7FFFFF)).astype(np.int64)
    radius = np.sqrt(np.float32(-2.0) * libm_f32.logf(k0))
    sin, cos = libm_f32.sincosf(k1)
    return sin * radius, cos * radius


def box_muller_double(x0, x1, x2, x3) -> tuple[np.ndarray, np.ndarray]:
    """TF's BoxMullerDouble: two double normals from four words."""
    u1 = np.maximum(uint64_to_double(x0, x1), 1e-7)
    angle = 2 * np.pi * uint64_to_double(x2, x3)
    radius = np.sqrt(-2.0 * _log_f64(u1))
    sin, cos = _trig_f64()
    return sin(angle) * radius, cos(angle) * radius


_SIN = np.frompyfunc(math.sin, 1, 1)
_COS = np.frompyfunc(math.cos, 1, 1)


@functools.cache
def _trig_f64():
    """sin and cos as the C library computes them (TF calls its sincos): NumPy's own where
    this NumPy uses the C library's (checked once on 20,000 angles; a SIMD sin differs
    from it on some of them), else the C library's element by element."""
    angles = np.random.default_rng(0).random(20000) * (2 * np.pi)
    if np.array_equal(np.sin(angles), _SIN(angles).astype(np.float64)) and \
            np.array_equal(np.cos(angles), _COS(angles).astype(np.float64)):
        return np.sin, np.cos
    return (lambda x: _SIN(x).astype(np.float64) if x.size else x,
            lambda x: _COS(x).astype(np.float64) if x.size else x)


def _interleave(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[a0, b0, a1, b1, ...] along the last axis."""
    out = np.empty(a.shape[:-1] + (a.shape[-1] * 2,), dtype=np.result_type(a, b))
    out[..., 0::2] = a
    out[..., 1::2] = b
    return out


def uniform_block(blocks: np.ndarray, dtype) -> np.ndarray:
    """TF's UniformDistribution on [0, 1): 4 floats/halfs/bfloat16s or 2 doubles a block."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return uint32_to_float(blocks)
    if dtype == np.float64:
        return uint64_to_double(blocks[:, 0::2], blocks[:, 1::2])
    if dtype == np.float16:
        return uint16_to_half(blocks)
    return uint16_to_bfloat16_bits(blocks).astype(dtype)


def normal_block(blocks: np.ndarray, dtype) -> np.ndarray:
    """TF's NormalDistribution: Box-Muller on pairs of words (4 outputs a block), or on the
    four words (2 doubles a block); half and bfloat16 are the float values rounded."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return np.stack(box_muller_double(*blocks.T), axis=-1)
    f0, f1 = box_muller_float(blocks[:, 0::2], blocks[:, 1::2])
    return _interleave(f0, f1).astype(dtype)


def int_block(blocks: np.ndarray, dtype, lo: int, span: int) -> np.ndarray:
    """TF's UniformDistribution over integers: lo + word % span (4 int32s a block), or
    lo + (two words as uint64) % span (2 int64s a block), wrapping as unsigned."""
    dtype = np.dtype(dtype)
    if dtype.itemsize == 4:
        x = blocks % np.uint32(span)
        return (x + np.uint32(lo & 0xFFFFFFFF)).view(dtype)
    words = blocks.astype(np.uint64)
    x = (words[:, 0::2] | (words[:, 1::2] << _SHIFT32)) % np.uint64(span)
    return (x + np.uint64(lo & M64)).view(dtype)


def full_int_block(blocks: np.ndarray, dtype) -> np.ndarray:
    """TF's UniformFullIntDistribution: each word (4 a block), or two words as one 64-bit
    integer (2 a block), as the type's bits."""
    dtype = np.dtype(dtype)
    if dtype.itemsize == 4:
        return blocks.view(dtype)
    words = blocks.astype(np.uint64)
    return (words[:, 0::2] | (words[:, 1::2] << _SHIFT32)).view(dtype)


def block_width(dtype) -> int:
    """Outputs a block makes for the fixed-size distributions (TF's kResultElementCount)."""
    return 2 if np.dtype(dtype).itemsize == 8 else 4


def fill(gen: Philox, n: int, width: int, make) -> np.ndarray:
    """TF's FillPhiloxRandom for a fixed-size distribution: group g (of `width` outputs) is
    `make` on the block at counter + g; the last group is cut to n."""
    groups = -(-n // width)
    blocks = gen.blocks(np.arange(groups, dtype=np.uint64))
    return make(blocks).reshape(-1)[:n]


#: Outputs TF reserves room for per truncated-normal output (its kReservedSamplesPerOutput).
RESERVED_PER_OUTPUT = 256
TRUNCATE_AT = 2.0


def _truncated_candidates(blocks: np.ndarray, dtype) -> np.ndarray:
    """The normals one block offers the truncated normal, in the order TF takes them."""
    if np.dtype(dtype) == np.float64:
        return np.stack(box_muller_double(*blocks.T), axis=-1)
    f0, f1 = box_muller_float(blocks[:, 0::2], blocks[:, 1::2])
    return _interleave(f0, f1)


def fill_truncated(gen: Philox, n: int, dtype) -> np.ndarray:
    """TF's truncated normal: group g starts at counter + g * width * 256 / 4 and takes
    normals (float ones for half/bfloat16) from successive blocks, keeping those with
    |x| < 2, until its `width` outputs are filled."""
    width = block_width(dtype)
    groups = -(-n // width)
    out = np.empty((groups, width), dtype=np.float64 if width == 2 else np.float32)
    filled = np.zeros(groups, dtype=np.int64)
    active = np.arange(groups, dtype=np.int64)
    base = active.astype(np.uint64) * np.uint64(width * RESERVED_PER_OUTPUT // 4)
    step = 0
    while active.size:
        cand = _truncated_candidates(gen.blocks(base[active] + np.uint64(step)), dtype)
        keep = np.abs(cand) < TRUNCATE_AT
        slot = filled[active][:, None] + np.cumsum(keep, axis=1) - 1
        take = keep & (slot < width)
        rows = np.broadcast_to(active[:, None], take.shape)[take]
        out[rows, slot[take]] = cand[take]
        filled[active] += take.sum(axis=1)
        active = active[filled[active] < width]
        step += 1
    return out.reshape(-1)[:n].astype(dtype)
