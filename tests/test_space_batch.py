"""SpaceToBatchND, BatchToSpaceND, SpaceToBatch, BatchToSpace, SpaceToDepth and
DepthToSpace against TF 2.21 (tests/data/space_batch_tf.json, written by
tests/data/make_space_batch_tf.py): OpDefs field by field, values (inputs are
np.arange of each case's shape), TF's error messages; the builders, round trips, and a
dilated convolution built from them as TF 1 graphs have it, against conv2d's dilations."""

from __future__ import annotations

import json

import numpy as np
import pytest
from google.protobuf import text_format
from op_def_compare import ours, without_docs

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_def_library import apply_op
from aioflow.proto import op_def_pb2
from tests.conftest import DATA

TF = json.loads((DATA / "space_batch_tf.json").read_text())


@pytest.mark.parametrize("name", sorted(TF["opdefs"]))
def test_op_defs_equal_tf(name):
    assert ours(name) == without_docs(text_format.Parse(TF["opdefs"][name], op_def_pb2.OpDef()))


@pytest.mark.parametrize("case", sorted(TF["cases"]))
async def test_matches_tf(case):
    spec = TF["cases"][case]
    value = np.arange(int(np.prod(spec["shape"]))).astype(spec["dtype"]).reshape(spec["shape"])
    with af.Graph().as_default():
        x = af.placeholder(af.as_dtype(spec["dtype"]), None)
        feeds, kwargs = {x: value}, {}
        for key, arg in spec["args"].items():
            if key == "block_size":
                kwargs[key] = arg
                continue
            arg = np.asarray(arg, spec["arg_dtypes"][key])
            p = af.placeholder(af.as_dtype(arg.dtype), arg.shape)
            feeds[p] = arg
            kwargs[key] = p
        y = apply_op(spec["op"], input=x, **kwargs)
        async with af.Session() as sess:
            want = spec["result"]
            if "error" in want:
                with pytest.raises(errors.OpError) as e:
                    await sess.run(y, feeds)
                assert type(e.value).__name__ == want["error"]
                assert e.value.message.split("\n\t [[")[0] == want["message"]
                return
            got = await sess.run(y, feeds)
    assert list(got.shape) == want["shape"] and str(got.dtype) == want["dtype"]
    np.testing.assert_array_equal(got.reshape(-1), want["data"])


async def test_builders_round_trip_and_shapes():
    x = np.random.default_rng(0).standard_normal((2, 5, 7, 3)).astype(np.float32)
    with af.Graph().as_default():
        t = af.constant(x)
        s2b = af.space_to_batch_nd(t, [2, 3], [[1, 0], [1, 1]])
        back = af.batch_to_space_nd(s2b, [2, 3], [[1, 0], [1, 1]])
        s2d = af.nn.space_to_depth(af.constant(x[:, :4, :6]), 2)
        d2s = af.nn.depth_to_space(s2d, 2)
        legacy = af.batch_to_space(af.space_to_batch(af.constant(x[:, :4, :6]),
                                                     [[0, 0], [0, 0]], 2), [[0, 0], [0, 0]], 2)
        assert s2b.shape.as_list() == [12, 3, 3, 3]
        assert s2d.shape.as_list() == [2, 2, 3, 12]
        async with af.Session() as sess:
            got = await sess.run([back, d2s, legacy])
    np.testing.assert_array_equal(got[0], x)
    np.testing.assert_array_equal(got[1], x[:, :4, :6])
    np.testing.assert_array_equal(got[2], x[:, :4, :6])


async def test_dilated_convolution_as_tf1_builds_it():
    """SpaceToBatchND -> Conv2D -> BatchToSpaceND equals a conv2d with dilations 2."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 8, 8, 2)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
    with af.Graph().as_default():
        s2b = af.space_to_batch_nd(af.constant(x), [2, 2], [[2, 2], [2, 2]])
        conv = af.nn.conv2d(s2b, af.constant(w), [1, 1, 1, 1], "VALID")
        via_batch = af.batch_to_space_nd(conv, [2, 2], [[0, 0], [0, 0]])
        direct = af.nn.conv2d(af.constant(x), af.constant(w), [1, 1, 1, 1], "SAME",
                              dilations=[1, 2, 2, 1])
        async with af.Session() as sess:
            a, b = await sess.run([via_batch, direct])
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
