"""tf.Example parsing (ParseExampleV2 through af.io.parse_example / parse_single_example,
and the older ParseExample and ParseSingleExample ops) against TF 2.21: OpDefs field by
field, parsed values of dense, variable-length dense and sparse features, and TF's error
messages (tests/data/parse_example_tf.json, written by
tests/data/make_parse_example_tf.py; strings kept as latin-1, a code point per byte)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from google.protobuf import text_format
from op_def_compare import ours, without_docs

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_def_library import apply_op
from aioflow.proto import example_pb2, op_def_pb2
from tests.conftest import DATA

TF = json.loads((DATA / "parse_example_tf.json").read_text())
SERIALIZED = {k: bytes.fromhex(v) for k, v in TF["serialized"].items()}


def _features(spec: dict) -> dict:
    out = {}
    for key, (kind, dtype, shape, default) in spec.items():
        dt = af.as_dtype(dtype)
        if kind == "fixed":
            out[key] = af.io.FixedLenFeature(shape, dt, default_value=default)
        elif kind == "seq":
            out[key] = af.io.FixedLenSequenceFeature(shape, dt, allow_missing=True,
                                                     default_value=default)
        else:
            out[key] = af.io.VarLenFeature(dt)
    return out


def _check(got, want: dict) -> None:
    assert list(np.shape(got)) == want["shape"]
    if want["dtype"] == "string":
        assert [bytes(v) for v in np.ravel(got)] == [v.encode("latin-1") for v in want["data"]]
    else:
        assert np.asarray(got).dtype == np.dtype(want["dtype"])
        np.testing.assert_array_equal(np.ravel(got), want["data"])


def _check_parsed(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for key, expected in want.items():
        value = got[key]
        if "indices" in expected:
            _check(value.indices, expected["indices"])
            _check(value.values, expected["values"])
            _check(value.dense_shape, expected["dense_shape"])
        else:
            _check(value, expected)


def test_tf_written_examples_read_with_our_proto():
    """aioflow's Example proto reads the bytes TF's wrote (the wire format is TF's)."""
    proto = example_pb2.Example.FromString(SERIALIZED["full"])
    assert list(proto.features.feature["ids"].int64_list.value) == [7, 8, 9]
    assert list(proto.features.feature["tags"].bytes_list.value) == [b"a", b"b\xff"]
    assert example_pb2.Example.FromString(proto.SerializeToString()) == proto


@pytest.mark.parametrize("name", ["ParseExample", "ParseExampleV2", "ParseSingleExample"])
def test_op_defs_equal_tf(name):
    assert ours(name) == without_docs(text_format.Parse(TF["opdefs"][name], op_def_pb2.OpDef()))


@pytest.mark.parametrize("case", sorted(TF["cases"]))
async def test_parse_example_matches_tf(case):
    spec = TF["cases"][case]
    data = [SERIALIZED[e] for e in spec["examples"]]
    with af.Graph().as_default():
        serialized = af.constant(np.array(data, dtype=object), af.string, shape=[len(data)])
        parsed = af.io.parse_example(serialized, _features(spec["spec"]),
                                     example_names=spec["names"])
        async with af.Session() as sess:
            want = spec["result"]
            if "error" in want:
                with pytest.raises(errors.OpError) as e:
                    await sess.run(parsed)
                assert type(e.value).__name__ == want["error"]
                assert e.value.message.split("\n\t [[")[0] == want["message"]
                assert e.value.node_def.name == "ParseExample/ParseExampleV2"  # names the node
            else:
                _check_parsed(await sess.run(parsed), want["value"])


async def test_parse_single_example_matches_tf():
    with af.Graph().as_default():
        parsed = af.io.parse_single_example(SERIALIZED["full"], _features(TF["spec"]))
        async with af.Session() as sess:
            _check_parsed(await sess.run(parsed), TF["single"]["value"])


async def test_older_ops_match_tf():
    data = [SERIALIZED["full"], SERIALIZED["sparse"]]
    with af.Graph().as_default():
        v1 = apply_op("ParseExample", serialized=data, names=af.constant([], af.string),
                      sparse_keys=[af.constant("ids")],
                      dense_keys=[af.constant("score"), af.constant("age")],
                      dense_defaults=[af.zeros([0], af.float32), af.constant([-1], af.int64)],
                      sparse_types=[af.int64], dense_shapes=[[2], [1]])
        single = apply_op("ParseSingleExample", serialized=data[0],
                          dense_defaults=[af.zeros([0], af.float32)], num_sparse=1,
                          sparse_keys=["tags"], dense_keys=["score"], sparse_types=[af.string],
                          dense_shapes=[[2]])
        async with af.Session() as sess:
            got_v1, got_single = await sess.run([list(v1), list(single)])
    for got, want in zip(got_v1, TF["raw_ops"]["ParseExample"]["value"], strict=True):
        _check(got, want)
    for got, want in zip(got_single, TF["raw_ops"]["ParseSingleExample"]["value"], strict=True):
        _check(got, want)


def test_builder_errors():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="requires allow_missing to be True"):
            af.io.parse_example(["x"], {"a": af.io.FixedLenSequenceFeature([], af.float32)})
        with pytest.raises(ValueError, match="features cannot be None"):
            af.io.parse_example(["x"], {})
        with pytest.raises(ValueError, match="must be a scalar"):
            af.io.parse_single_example(["x"], {"a": af.io.VarLenFeature(af.int64)})


async def test_bad_defaults_and_names_are_invalid_argument():
    with af.Graph().as_default():
        wrong_default = apply_op(
            "ParseExampleV2", serialized=[SERIALIZED["full"]], names=af.constant([], af.string),
            sparse_keys=af.constant([], af.string), dense_keys=af.constant(["score"]),
            ragged_keys=af.constant([], af.string),
            dense_defaults=[af.constant([1.0, 2.0, 3.0])], num_sparse=0, sparse_types=[],
            ragged_value_types=[], ragged_split_types=[], dense_shapes=[[2]])
        parsed = af.io.parse_example([SERIALIZED["full"]], {"age": af.io.FixedLenFeature(
            [], af.int64)}, example_names=["a", "b"])
        async with af.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match=r"dense_defaults\[0\]"):
                await sess.run(wrong_default)
            with pytest.raises(errors.InvalidArgumentError, match="len\\(names\\)"):
                await sess.run(parsed)


async def test_a_large_batch_parses_on_the_pool_to_the_same_values():
    examples = []
    for i in range(100):
        proto = example_pb2.Example()
        proto.features.feature["x"].float_list.value.extend([i, i + 0.5])
        proto.features.feature["ids"].int64_list.value.extend(range(i % 4))
        examples.append(proto.SerializeToString())
    with af.Graph().as_default():
        parsed = af.io.parse_example(examples, {"x": af.io.FixedLenFeature([2], af.float32),
                                                "ids": af.io.VarLenFeature(af.int64)})
        async with af.Session() as sess:
            got = await sess.run(parsed)
    np.testing.assert_array_equal(got["x"], [[i, i + 0.5] for i in range(100)])
    assert got["ids"].dense_shape.tolist() == [100, 3]
    assert got["ids"].values.tolist() == [j for i in range(100) for j in range(i % 4)]
