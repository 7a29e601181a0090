"""TF's string fingerprints, in pure Python: FarmHash's Fingerprint64 and SipHash-2-4.

`fingerprint64(data)` is TensorFlow's `Fingerprint64` (tensorflow/core/platform/
fingerprint.h), which is FarmHash's `Fingerprint64`, i.e. `farmhashna::Hash64` (seed 81,
the three primes k0, k1, k2 below). It is what `StringToHashBucketFast` and friends hash
with: a bucket is ``fingerprint64(s) % num_buckets``. All arithmetic is on unsigned
64-bit words, little-endian loads, wrapping (``& MASK`` after every product and sum).

The algorithm, by input length n:

- n <= 16: ``hash_len_0_to_16`` (one or two loads, or three bytes for n < 4);
- 17..32: ``hash_len_17_to_32`` (four loads: both ends);
- 33..64: ``hash_len_33_to_64`` (eight loads, two rounds of ``hash_len_16``);
- n > 64: a 56-byte state (x, y, z, v = (v0, v1), w = (w0, w1)) mixed over every 64-byte
  block, then once more over the last 64 bytes (overlapping the previous block when n
  is not a multiple of 64), folded with ``hash_len_16``.

`siphash(key, data)` is SipHash-2-4 keyed by two 64-bit words, which TF's
`StringToHashBucketStrong` uses (`StrongKeyedHash`): a bucket is
``siphash(key, s) % num_buckets``.

Both are checked against TensorFlow 2.21's buckets on every length 0..200 and unicode
strings (tests/test_fingerprint.py, fixture tests/data/string_hash_buckets.json).
"""

from __future__ import annotations

import struct

MASK = (1 << 64) - 1
K0 = 0xC3A5C85C97CB3127
K1 = 0xB492B66FBE98F273
K2 = 0x9AE16A3B2F90404F
_SEED = 81

_u64 = struct.Struct("<Q").unpack_from
_u32 = struct.Struct("<I").unpack_from


def _fetch64(s: bytes, i: int) -> int:
    return _u64(s, i)[0]


def _fetch32(s: bytes, i: int) -> int:
    return _u32(s, i)[0]


def _rotate(v: int, shift: int) -> int:
    """Rotate right by `shift` (0 < shift < 64 in every call)."""
    return ((v >> shift) | (v << (64 - shift))) & MASK


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash_len_16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & MASK
    b ^= b >> 47
    return (b * mul) & MASK


def _hash_len_0_to_16(s: bytes, n: int) -> int:
    if n >= 8:
        mul = (K2 + n * 2) & MASK
        a = (_fetch64(s, 0) + K2) & MASK
        b = _fetch64(s, n - 8)
        c = (_rotate(b, 37) * mul + a) & MASK
        d = ((_rotate(a, 25) + b) * mul) & MASK
        return _hash_len_16(c, d, mul)
    if n >= 4:
        mul = (K2 + n * 2) & MASK
        a = _fetch32(s, 0)
        return _hash_len_16((n + (a << 3)) & MASK, _fetch32(s, n - 4), mul)
    if n > 0:
        a, b, c = s[0], s[n >> 1], s[n - 1]
        y = (a + (b << 8)) & 0xFFFFFFFF
        z = (n + (c << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * K2) ^ (z * K0)) & MASK) * K2) & MASK
    return K2


def _hash_len_17_to_32(s: bytes, n: int) -> int:
    mul = (K2 + n * 2) & MASK
    a = (_fetch64(s, 0) * K1) & MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & MASK
    d = (_fetch64(s, n - 16) * K2) & MASK
    return _hash_len_16((_rotate((a + b) & MASK, 43) + _rotate(c, 30) + d) & MASK,
                        (a + _rotate((b + K2) & MASK, 18) + c) & MASK, mul)


def _hash_len_33_to_64(s: bytes, n: int) -> int:
    mul = (K2 + n * 2) & MASK
    a = (_fetch64(s, 0) * K2) & MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & MASK
    d = (_fetch64(s, n - 16) * K2) & MASK
    y = (_rotate((a + b) & MASK, 43) + _rotate(c, 30) + d) & MASK
    z = _hash_len_16(y, (a + _rotate((b + K2) & MASK, 18) + c) & MASK, mul)
    e = (_fetch64(s, 16) * mul) & MASK
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & MASK
    h = ((z + _fetch64(s, n - 24)) * mul) & MASK
    return _hash_len_16((_rotate((e + f) & MASK, 43) + _rotate(g, 30) + h) & MASK,
                        (e + _rotate((f + a) & MASK, 18) + g) & MASK, mul)


def _weak_hash_len_32_with_seeds(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = _u64(s, i), _u64(s, i + 8), _u64(s, i + 16), _u64(s, i + 24)
    w, x, y, z = w[0], x[0], y[0], z[0]
    a = (a + w) & MASK
    b = _rotate((b + a + z) & MASK, 21)
    c = a
    a = (a + x + y) & MASK
    b = (b + _rotate(a, 44)) & MASK
    return (a + z) & MASK, (b + c) & MASK


def fingerprint64(data: bytes) -> int:
    """TF's Fingerprint64 (FarmHash Fingerprint64 = farmhashna::Hash64) of `data`."""
    s = bytes(data)
    n = len(s)
    if n <= 32:
        return _hash_len_0_to_16(s, n) if n <= 16 else _hash_len_17_to_32(s, n)
    if n <= 64:
        return _hash_len_33_to_64(s, n)
    x = _SEED
    y = (_SEED * K1 + 113) & MASK
    z = (_shift_mix((y * K2 + 113) & MASK) * K2) & MASK
    v0 = v1 = w0 = w1 = 0
    x = (x * K2 + _fetch64(s, 0)) & MASK
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rotate((x + y + v0 + _fetch64(s, i + 8)) & MASK, 37) * K1) & MASK
        y = (_rotate((y + v1 + _fetch64(s, i + 48)) & MASK, 42) * K1) & MASK
        x ^= w1
        y = (y + v0 + _fetch64(s, i + 40)) & MASK
        z = (_rotate((z + w0) & MASK, 33) * K1) & MASK
        v0, v1 = _weak_hash_len_32_with_seeds(s, i, (v1 * K1) & MASK, (x + w0) & MASK)
        w0, w1 = _weak_hash_len_32_with_seeds(s, i + 32, (z + w1) & MASK,
                                              (y + _fetch64(s, i + 16)) & MASK)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = K1 + ((z & 0xFF) << 1)
    i = last64
    w0 = (w0 + ((n - 1) & 63)) & MASK
    v0 = (v0 + w0) & MASK
    w0 = (w0 + v0) & MASK
    x = (_rotate((x + y + v0 + _fetch64(s, i + 8)) & MASK, 37) * mul) & MASK
    y = (_rotate((y + v1 + _fetch64(s, i + 48)) & MASK, 42) * mul) & MASK
    x ^= (w1 * 9) & MASK
    y = (y + v0 * 9 + _fetch64(s, i + 40)) & MASK
    z = (_rotate((z + w0) & MASK, 33) * mul) & MASK
    v0, v1 = _weak_hash_len_32_with_seeds(s, i, (v1 * mul) & MASK, (x + w0) & MASK)
    w0, w1 = _weak_hash_len_32_with_seeds(s, i + 32, (z + w1) & MASK,
                                          (y + _fetch64(s, i + 16)) & MASK)
    z, x = x, z
    return _hash_len_16((_hash_len_16(v0, w0, mul) + _shift_mix(y) * K0 + z) & MASK,
                        (_hash_len_16(v1, w1, mul) + x) & MASK, mul)


# -- SipHash-2-4 ------------------------------------------------------------------------------

def _rotl(v: int, b: int) -> int:
    return ((v << b) | (v >> (64 - b))) & MASK


def _sip_round(v0: int, v1: int, v2: int, v3: int) -> tuple[int, int, int, int]:
    v0 = (v0 + v1) & MASK
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & MASK
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & MASK
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & MASK
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash(key: tuple[int, int], data: bytes) -> int:
    """SipHash-2-4 of `data` under the 128-bit key (k0, k1), two unsigned 64-bit words."""
    k0, k1 = key[0] & MASK, key[1] & MASK
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    s = bytes(data)
    n = len(s)
    full = n - n % 8
    for i in range(0, full, 8):
        m = _fetch64(s, i)
        v3 ^= m
        v0, v1, v2, v3 = _sip_round(*_sip_round(v0, v1, v2, v3))
        v0 ^= m
    last = ((n & 0xFF) << 56) | int.from_bytes(s[full:], "little")
    v3 ^= last
    v0, v1, v2, v3 = _sip_round(*_sip_round(v0, v1, v2, v3))
    v0 ^= last
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3
