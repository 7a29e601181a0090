"""CRC-32C (Castagnoli), as TensorFlow's crc32c::Value / Extend / Mask / Unmask, in NumPy.

TensorFlow checksums every checkpoint tensor and every table block with CRC-32C
(tensorflow/core/lib/hash/crc32c.h, LevelDB's crc32c). There is no CRC-32C in the
standard library and aioflow takes no compiled dependency for it, so this module
computes it with NumPy, fast enough for checkpoints of hundreds of megabytes:

- A CRC without its pre- and post-inversion is linear over GF(2): the CRC of A || B is
  ``shift_{len B}(crc A) ^ crc B``, where ``shift_m`` (feeding m zero bytes) is a 32x32
  bit matrix, applied as four 256-entry tables and built from the matrices of 2**k zero
  bytes (``_pow2_tables``).
- So a long buffer is cut into up to 65,536 equal lanes (of at least 64 bytes) that are
  checksummed side by side, eight bytes a step, with the step's linear map split into
  four 65,536-entry tables indexed by 16 bits each (``_lane_tables``): one NumPy gather
  per table per step over all lanes.
- The lanes' CRCs are then folded pairwise (a tree of ``shift`` applications), and the
  tail that does not fill the lanes is done the same way with fewer lanes, down to a
  plain byte loop for the last few bytes.

NumPy releases the GIL in these array operations, so a checksum running on a pool
thread leaves the event loop free.

google-crc32c (compiled, hardware CRC-32C; a dependency of aioflow) is used instead when
it imports with its C implementation (about 20x faster); the NumPy code is the fallback
(a platform without its wheel, or AIOFLOW_CRC32C=numpy).
"""

from __future__ import annotations

import functools
import os
import time

import numpy as np

_POLY = 0x82F63B78  # CRC-32C, reflected
_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF

#: Below this many bytes a buffer is checksummed with the byte-at-a-time loop.
_SMALL = 64
#: At most 2**16 lanes, each at least _MIN_LANE bytes (fewer, larger NumPy calls: faster,
#: and the GIL is held less of the time).
_MAX_LANES_LOG2 = 16
_MIN_LANE = 64
#: Columns (8-byte words per lane) moved into a contiguous block at a time.
_BLOCK = 32


def _byte_table() -> list[int]:
    """The classic 256-entry table: the CRC step of one byte."""
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _byte_table()
_TABLE_NP = np.array(_TABLE, dtype=np.uint32)


def _raw_bytes(crc: int, data) -> int:
    """The uninverted CRC register after feeding `data` byte by byte (small inputs)."""
    table = _TABLE
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


# -- linear operators: the effect of feeding zero bytes -----------------------------------

def _apply(op: tuple[int, ...], v: int) -> int:
    """op(v) for a 32x32 GF(2) matrix given as the images of the 32 unit vectors."""
    out = 0
    i = 0
    while v:
        if v & 1:
            out ^= op[i]
        v >>= 1
        i += 1
    return out


def _compose(outer: tuple[int, ...], inner: tuple[int, ...]) -> tuple[int, ...]:
    """outer ∘ inner."""
    return tuple(_apply(outer, c) for c in inner)


_ONE_ZERO_BYTE = tuple(_raw_bytes(1 << i, b"\0") for i in range(32))


@functools.cache
def _pow2_operator(k: int) -> tuple[int, ...]:
    """The matrix of feeding 2**k zero bytes (squaring the one below)."""
    if k == 0:
        return _ONE_ZERO_BYTE
    half = _pow2_operator(k - 1)
    return _compose(half, half)


@functools.cache
def _pow2_tables(k: int) -> np.ndarray:
    """(4, 256) uint32: feeding 2**k zero bytes, split by the register's four bytes."""
    op = np.array(_pow2_operator(k), dtype=np.uint32)
    out = np.zeros((4, 256), dtype=np.uint32)
    b = np.arange(256)
    for j in range(4):
        for bit in range(8):
            out[j, (b >> bit) & 1 == 1] ^= op[8 * j + bit]
    return out


def _set_bits(n: int):
    k = 0
    while n:
        if n & 1:
            yield k
        n >>= 1
        k += 1


def _apply_tables(t: np.ndarray, crcs):
    return (t[0][crcs & 0xFF] ^ t[1][(crcs >> 8) & 0xFF]
            ^ t[2][(crcs >> 16) & 0xFF] ^ t[3][crcs >> 24])


def _shift_np(crcs: np.ndarray, nbytes: int) -> np.ndarray:
    """Feeding `nbytes` zero bytes to every register of `crcs` (uint32 array)."""
    for k in _set_bits(nbytes):
        crcs = _apply_tables(_pow2_tables(k), crcs)
    return crcs


def _shift(crc: int, nbytes: int) -> int:
    """Feeding `nbytes` zero bytes to one register."""
    for k in _set_bits(nbytes):
        crc = int(_apply_tables(_pow2_tables(k), np.uint32(crc)))
    return crc


# -- lanes --------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _lane_tables() -> tuple[np.ndarray, ...]:
    """Four 65,536-entry uint32 tables: one 8-byte step of the register, split by 16 bits.

    For v = register ^ word (little-endian u64), the next register is
    Z8(v_lo) ^ Z4(v_hi), and each of Z8, Z4 splits into two 16-bit look-ups."""
    idx = np.arange(1 << 16, dtype=np.uint32)
    tables = []
    for k, shift in ((3, 0), (3, 16), (2, 0), (2, 16)):
        tables.append(_apply_tables(_pow2_tables(k), idx << np.uint32(shift)))
    return tuple(tables)


def _lanes_raw(words: np.ndarray) -> np.ndarray:
    """The uninverted CRCs (from a zero register) of each row of a (lanes, n) u64 array.

    Indices are kept as int64 (NumPy's intp): `take` then gathers without converting
    them first, and masking after each shift undoes the sign extension."""
    t0, t1, t2, t3 = _lane_tables()
    words = words.view(np.int64)
    lanes, n = words.shape
    crc = np.zeros(lanes, dtype=np.uint32)
    v = np.empty(lanes, dtype=np.int64)
    k = np.empty(lanes, dtype=np.int64)
    tmp = np.empty(lanes, dtype=np.uint32)
    for start in range(0, n, _BLOCK):
        if start:
            time.sleep(0)  # a moment without the GIL: a thread waiting for it gets it now
        block = np.ascontiguousarray(words[:, start:start + _BLOCK].T)
        for col in block:
            np.bitwise_xor(col, crc, out=v)
            np.bitwise_and(v, 0xFFFF, out=k)
            np.take(t0, k, out=crc)
            for table, shift in ((t1, 16), (t2, 32), (t3, 48)):
                np.right_shift(v, shift, out=k)
                np.bitwise_and(k, 0xFFFF, out=k)
                np.take(table, k, out=tmp)
                crc ^= tmp
    return crc


def _fold(crcs: np.ndarray, lane_bytes: int) -> int:
    """Combine equal-length lanes' CRCs (count a power of two) into the whole's CRC."""
    while crcs.size > 1:
        crcs = _shift_np(crcs[0::2], lane_bytes) ^ crcs[1::2]
        lane_bytes *= 2
    return int(crcs[0])


def _raw(crc: int, buf: np.ndarray) -> int:
    """The uninverted register after feeding the uint8 array `buf` to register `crc`."""
    n = buf.size
    if n < _SMALL:
        return _raw_bytes(crc, buf.tobytes())
    lanes = 1 << min(_MAX_LANES_LOG2, (n // _MIN_LANE).bit_length() - 1)
    lane_words = n // (lanes * 8)
    main = lanes * lane_words * 8
    words = buf[:main].view(np.dtype("<u8")).reshape(lanes, lane_words)
    body = _fold(_lanes_raw(words), lane_words * 8)
    crc = _shift(crc, main) ^ body
    return _raw(crc, buf[main:]) if main < n else crc


def _as_u8(data) -> np.ndarray:
    """A flat uint8 view of bytes, bytearray, memoryview or a contiguous ndarray."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def _load_native():
    """google_crc32c's compiled `extend` (hardware CRC-32C) when that package is
    installed with its C implementation, else None; AIOFLOW_CRC32C=numpy forces the NumPy
    code. With it, restoring a checkpoint runs at TF's speed."""
    if os.environ.get("AIOFLOW_CRC32C", "").lower() == "numpy":
        return None
    try:
        import google_crc32c
    except ImportError:
        return None
    return google_crc32c.extend if google_crc32c.implementation == "c" else None


_native = _load_native()
#: The native extend takes bytes: large buffers go to it in copies of this size (no
#: second copy of a whole tensor; the GIL is held only while copying 1 MiB, since
#: google-crc32c releases it for bytes of 1 MiB and more).
_NATIVE_CHUNK = 1 << 20


def native_available() -> bool:
    """Whether the compiled CRC-32C (google-crc32c) is in use."""
    return _native is not None


def _native_extend(crc: int, data) -> int:
    if isinstance(data, bytes):
        return _native(crc, data)
    buf = _as_u8(data)
    for start in range(0, buf.size, _NATIVE_CHUNK):
        crc = _native(crc, buf[start:start + _NATIVE_CHUNK].tobytes())
    return crc


def extend(crc: int, data) -> int:
    """crc32c::Extend: the CRC-32C of (the data `crc` covers) followed by `data`."""
    if _native is not None:
        return _native_extend(crc, data)
    return _raw(crc ^ _U32, _as_u8(data)) ^ _U32


def value(data) -> int:
    """crc32c::Value: the CRC-32C of `data`."""
    return extend(0, data)


def mask(crc: int) -> int:
    """crc32c::Mask: the stored form of a CRC (rotated right 15 bits, plus a constant)."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & _U32


def unmask(masked: int) -> int:
    """crc32c::Unmask: the inverse of mask."""
    rot = (masked - _MASK_DELTA) & _U32
    return ((rot >> 17) | (rot << 15)) & _U32
