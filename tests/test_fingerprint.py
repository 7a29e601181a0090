"""FarmHash Fingerprint64 and SipHash-2-4 (aioflow/lib/fingerprint.py) against
TensorFlow 2.21 on tests/data/string_hash_buckets.json: strings of every length 0..200
(printable ASCII and random bytes), UTF-8 text of many lengths, long and degenerate
inputs; raw fingerprints (tf.fingerprint) and the buckets of StringToHashBucketFast and
StringToHashBucketStrong."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from kernel_testutil import run1

from aioflow.lib.fingerprint import K2, fingerprint64, siphash

FIXTURE = json.loads((Path(__file__).parent / "data" / "string_hash_buckets.json").read_text())
STRINGS = [bytes.fromhex(h) for h in FIXTURE["strings"]]


def _object_array(items: list[bytes]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def test_fixture_covers_every_length_and_unicode():
    lengths = {len(s) for s in STRINGS}
    assert set(range(201)) <= lengths and max(lengths) >= 1000
    assert any(s.decode("utf-8", "replace") != s.decode("latin-1") and s.isascii() is False
               for s in STRINGS)


def test_fingerprint64_equals_tensorflows():
    expected = [int(v) for v in FIXTURE["fingerprint64"]]
    got = [fingerprint64(s) for s in STRINGS]
    mismatched = [len(s) for s, a, b in zip(STRINGS, got, expected, strict=True) if a != b]
    assert not mismatched, f"lengths that differ: {mismatched}"


def test_known_values():
    assert fingerprint64(b"") == K2
    # Each length class of the algorithm: 0-16, 17-32, 33-64 and the 64-byte loop.
    for n in (3, 4, 8, 16, 17, 32, 33, 64, 65, 128, 129):
        assert 0 <= fingerprint64(b"x" * n) < 2**64


@pytest.mark.parametrize("num_buckets", sorted(FIXTURE["fast"], key=int))
def test_hash_bucket_fast_kernel_equals_tensorflows(num_buckets):
    out = run1("StringToHashBucketFast", [_object_array(STRINGS)],
               num_buckets=int(num_buckets))
    assert out.dtype == np.int64
    assert out.tolist() == FIXTURE["fast"][num_buckets]


@pytest.mark.parametrize("num_buckets", sorted(FIXTURE["strong"], key=int))
def test_hash_bucket_strong_kernel_equals_tensorflows(num_buckets):
    key = FIXTURE["strong_key"]
    assert [siphash(key, s) % int(num_buckets) for s in STRINGS] == \
        FIXTURE["strong"][num_buckets]
    out = run1("StringToHashBucketStrong", [_object_array(STRINGS)],
               num_buckets=int(num_buckets), key=key)
    assert out.tolist() == FIXTURE["strong"][num_buckets]


def test_siphash_reference_vector():
    # The SipHash paper's test vector: key 00..0f, message 00..0e.
    key = (int.from_bytes(bytes(range(8)), "little"), int.from_bytes(bytes(range(8, 16)),
                                                                      "little"))
    assert siphash(key, bytes(range(15))) == 0xA129CA6149BE45E5
