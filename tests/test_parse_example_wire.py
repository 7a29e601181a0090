"""tf.Example parsing of fixed-length features, by both paths of the parsing kernels
(aioflow/kernels/io/parsing_kernels.py): the compiled wire-format scan
(aioflow/kernels/io/parsing_jit.py) and the protobuf runtime's (the slow path, the scan
switched off). Against TF 2.21 on hand-written wire encodings
(tests/data/parse_example_wire_tf.json, written by
tests/data/make_parse_example_wire_tf.py), and against each other on random Examples and
random corruptions of them: where the scan answers, its values are the slow path's,
bit for bit; where it does not, the slow path answers (TF's value or TF's error)."""

from __future__ import annotations

import json
import random
import struct

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import dtypes, errors
from aioflow.kernels.io import parsing_jit, parsing_kernels
from aioflow.proto import example_pb2
from tests.conftest import DATA

TF = json.loads((DATA / "parse_example_wire_tf.json").read_text())
SERIALIZED = {k: bytes.fromhex(v) for k, v in TF["serialized"].items()}


@pytest.fixture(scope="module")
def compiled():
    if not parsing_jit.wait_ready(timeout=600):
        pytest.skip("numba is not available: no compiled scan")


@pytest.fixture(params=["fast", "slow"])
def path(request, monkeypatch):
    """Which path parses: "fast" (the compiled scan, where it answers) or "slow"."""
    if request.param == "fast":
        request.getfixturevalue("compiled")
    else:
        monkeypatch.setattr(parsing_jit, "ready", lambda: False)
    return request.param


def _features() -> dict:
    return {k: af.io.FixedLenFeature(shape, af.as_dtype(dtype), default_value=default)
            for k, (dtype, shape, default) in TF["spec"].items()}


def _as_json(value) -> dict:
    array = np.asarray(value)
    if array.dtype == object:
        return {"dtype": "string", "shape": list(array.shape),
                "data": [v.decode("latin-1") for v in array.reshape(-1).tolist()]}
    return {"dtype": str(array.dtype), "shape": list(array.shape),
            "data": array.reshape(-1).tolist()}


async def _outcome(data: list[bytes], single: bool) -> dict:
    with af.Graph().as_default():
        if single:
            parsed = af.io.parse_single_example(data[0], _features())
        else:
            parsed = af.io.parse_example(data, _features())
        async with af.Session() as sess:
            try:
                got = await sess.run(parsed)
            except errors.OpError as e:
                return {"error": type(e).__name__, "message": e.message.split("\n\t [[")[0]}
    return {"value": {k: _as_json(v) for k, v in got.items()}}


# Where the protobuf runtime (both paths hand these to it) reads the bytes otherwise
# than TF's own parser: TF's rejects an unpacked list split in runs, unknown fields and
# a map entry without a value, reads the first list of a Feature that has two, reads
# past a malformed or non-UTF-8 feature it does not want, and words a malformed packed
# list otherwise.
SLOW_PATH_DIFFERS = {"split_runs", "unknown_fields", "key_without_value", "two_lists",
                     "unwanted_malformed", "unwanted_bad_utf8_key", "bad_packed_length"}


@pytest.mark.parametrize("mode", ["single", "batch"])
@pytest.mark.parametrize("case", sorted(TF["cases"]))
async def test_wire_encodings_parse_as_tf(case, mode, path):
    if case in SLOW_PATH_DIFFERS:
        pytest.xfail("the protobuf runtime's reading, not TF's parser's (slow path)")
    data = [SERIALIZED[case]] if mode == "single" else [SERIALIZED["plain"], SERIALIZED[case]]
    assert await _outcome(data, mode == "single") == TF["cases"][case][mode]


# -- the compiled scan against the slow path, on random Examples ---------------------------

SPECS = [parsing_kernels._Dense("a", dtypes.float32, [2], np.zeros(0, np.float32)),
         parsing_kernels._Dense("b", dtypes.int64, [], np.array(7, np.int64)),
         parsing_kernels._Dense("c", dtypes.string, [2], np.zeros(0, object)),
         parsing_kernels._Dense("d", dtypes.float32, [2, 2], np.ones((2, 2), np.float32))]


def _random_example(rng: random.Random) -> bytes:
    proto = example_pb2.Example()
    for key in ("a", "b", "c", "d", "other", "é"):
        if rng.random() < 0.15:
            continue
        feature = proto.features.feature[key]
        kind = rng.choice(["float", "int", "bytes"]) if rng.random() < 0.1 else \
            {"a": "float", "b": "int", "c": "bytes", "d": "float"}.get(key, "int")
        count = {"a": 2, "b": 1, "c": 2, "d": 4}.get(key, 3)
        if rng.random() < 0.1:
            count += rng.choice([-1, 1])
        if kind == "float":
            feature.float_list.value.extend(
                struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0]
                if rng.random() < 0.2 else rng.uniform(-1e6, 1e6) for _ in range(count))
        elif kind == "int":
            feature.int64_list.value.extend(rng.randint(-(1 << 63), (1 << 63) - 1)
                                            for _ in range(count))
        else:
            feature.bytes_list.value.extend(rng.randbytes(rng.randint(0, 5))
                                            for _ in range(count))
    return proto.SerializeToString(deterministic=True)  # the same bytes every run


def _corrupt(data: bytes, rng: random.Random) -> bytes:
    """A random corruption: cut, a byte changed, bytes inserted, or another Example
    appended (protobuf merges it: a key twice)."""
    how = rng.randrange(4)
    if how == 0 or not data:
        return data[:rng.randint(0, len(data))]
    at = rng.randrange(len(data))
    if how == 1:
        return data[:at] + bytes([rng.randrange(256)]) + data[at + 1:]
    if how == 2:
        return data[:at] + rng.randbytes(rng.randint(1, 3)) + data[at:]
    return data + _random_example(rng)


def _slow_one(data: bytes):
    try:
        return parsing_kernels._one_example(data, SPECS)
    except errors.InvalidArgumentError as e:
        return e


def _slow_batch(data: list[bytes]):
    try:
        rows = parsing_kernels.parse_examples(data, None, SPECS, [], [])[0]
    except errors.InvalidArgumentError as e:
        return e
    return [parsing_kernels.dense_output(s, r, (len(data),)) for s, r in zip(SPECS, rows,
                                                                            strict=True)]


def _same(fast: list, slow: list) -> None:
    assert len(fast) == len(slow)
    for f, s in zip(fast, slow, strict=True):
        f, s = np.asarray(f), np.asarray(s)
        assert f.dtype == s.dtype and f.shape == s.shape
        if f.dtype == object:
            assert f.tolist() == s.tolist()
        else:  # bit for bit (NaN payloads included)
            assert f.tobytes() == s.tobytes()


def test_the_scan_answers_as_the_slow_path_on_random_examples(compiled):
    rng = random.Random(7)
    plan = parsing_kernels._plan(SPECS)
    answered = plain_ok = 0
    for i in range(3000):
        data = _random_example(rng)
        plain = i % 2 == 0
        if not plain:
            data = _corrupt(data, rng)
        slow = _slow_one(data)
        fast = plan.parse_one(data)
        if fast is None:
            # plain well-formed Examples of the wanted types and counts: the scan answers
            assert not (plain and not isinstance(slow, Exception)), data.hex()
            continue
        assert not isinstance(slow, Exception), (data.hex(), slow)
        _same(fast, slow)
        answered += 1
        plain_ok += plain
    assert plain_ok > 300 and answered > plain_ok  # corrupted ones it reads too


def test_the_batch_scan_answers_as_the_slow_path(compiled):
    rng = random.Random(11)
    plan = parsing_kernels._plan(SPECS)
    answered = 0
    for _ in range(400):
        data = [_random_example(rng) for _ in range(rng.randint(1, 4))]
        plain = rng.random() < 0.7
        if not plain:
            k = rng.randrange(len(data))
            data[k] = _corrupt(data[k], rng)
        slow = _slow_batch(data)
        fast = plan.parse_batch(data)
        if fast is None:
            assert not (plain and not isinstance(slow, Exception)), [d.hex() for d in data]
            continue
        assert not isinstance(slow, Exception), slow
        _same(fast, slow)
        answered += 1
    assert answered > 40


def _field(tag: int, payload: bytes) -> bytes:  # a length-delimited field, short
    return bytes([tag, len(payload)]) + payload


def test_the_scan_takes_unpacked_lists_and_leaves_merges_to_the_slow_path(compiled):
    """Hand-written encodings: unpacked floats and ints read as packed ones; a key twice
    (protobuf keeps the last) and a cut message go to the slow path."""
    plan = parsing_kernels._plan(SPECS[:2])
    floats = b"".join(b"\x0d" + struct.pack("<f", v) for v in (1.5, -2.0))  # unpacked
    entry_a = _field(0x0A, b"a") + _field(0x12, _field(0x12, floats))
    entry_b = _field(0x0A, b"b") + _field(0x12, _field(0x1A, b"\x08\x05"))  # one varint
    data = _field(0x0A, _field(0x0A, entry_a) + _field(0x0A, entry_b))
    want = [np.array([1.5, -2.0], np.float32), np.array(5)]
    _same(parsing_kernels._one_example(data, SPECS[:2]), want)
    _same(plan.parse_one(data), want)
    twice = data + data.replace(b"\x08\x05", b"\x08\x06")
    assert plan.parse_one(twice) is None
    assert parsing_kernels._one_example(twice, SPECS[:2])[1].tolist() == 6
    assert plan.parse_one(data[:-1]) is None


async def test_a_dataset_map_parses_each_element_as_tf(path, monkeypatch):
    """A tf.data map of parse_single_example (the kernel called once per element, its
    key and default inputs the same arrays each call): TF's values for every element,
    then TF's error for a bad one, in place."""
    answers = []
    parse_one = parsing_jit.Plan.parse_one
    monkeypatch.setattr(parsing_jit.Plan, "parse_one",
                        lambda self, data: answers.append(parse_one(self, data)) or answers[-1])
    cases = ["plain", "missing_with_default", "value_first", "int64_extremes", "wrong_type"]
    with af.Graph().as_default():
        ds = af.data.Dataset.from_tensor_slices([SERIALIZED[c] for c in cases])
        ds = ds.map(lambda r: af.io.parse_single_example(r, _features()))
        nxt = af.data.make_one_shot_iterator(ds).get_next()
        async with af.Session() as sess:
            for case in cases[:-1]:
                got = {k: _as_json(v) for k, v in (await sess.run(nxt)).items()}
                assert got == TF["cases"][case]["single"]["value"]
            with pytest.raises(errors.InvalidArgumentError) as e:
                await sess.run(nxt)
            assert e.value.message.split("\n\t [[")[0] == TF["cases"]["wrong_type"]["single"][
                "message"]
    # the scan answered for the four good elements, not for the bad one
    assert [a is not None for a in answers[:4]] == ([True] * 4 if path == "fast" else [])
    assert not any(a is not None for a in answers[4:])
