"""Ops imported graphs often carry, against TF 2.21 (tests/data/misc_ops_tf.json, written
by tests/data/make_misc_ops_tf.py): DynamicPartition, DynamicStitch and
ParallelDynamicStitch, Roll, InvertPermutation, ListDiff, LinSpace, Bincount,
Acosh/Asinh/Atanh, FakeQuantWithMinMax{Args,Vars,VarsPerChannel}, NonMaxSuppression(V2),
Timestamp: OpDefs field by field, values, and TF's error messages. Every input is fed
through a placeholder of its shape, as the fixture script does."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from google.protobuf import text_format
from op_def_compare import ours, without_docs

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_def_library import apply_op
from aioflow.proto import op_def_pb2
from tests.conftest import DATA

TF = json.loads((DATA / "misc_ops_tf.json").read_text())


@pytest.mark.parametrize("name", sorted(TF["opdefs"]))
def test_op_defs_equal_tf(name):
    assert ours(name) == without_docs(text_format.Parse(TF["opdefs"][name], op_def_pb2.OpDef()))


def _check(got, want: dict) -> None:
    got = np.asarray(got)
    assert list(got.shape) == want["shape"]
    if want["dtype"] == "string":
        assert [bytes(v) for v in got.reshape(-1)] == [v.encode("latin-1") for v in want["data"]]
        return
    assert str(got.dtype) == want["dtype"]
    flat = got.reshape(-1)
    if want["nan"] is not None:
        np.testing.assert_array_equal(np.isnan(flat), want["nan"])
        keep = ~np.asarray(want["nan"], bool)
        expected = np.asarray([v for v in want["data"] if v is not None], got.dtype)
        np.testing.assert_allclose(flat[keep], expected, rtol=2e-7, atol=0)
    else:
        np.testing.assert_array_equal(flat, want["data"])


@pytest.mark.parametrize("case", sorted(TF["cases"]))
async def test_matches_tf(case):
    spec = TF["cases"][case]
    want = spec["result"]
    with af.Graph().as_default():
        feeds, kwargs = {}, {}
        for key, expr in spec["inputs"].items():
            holders = []
            for e in expr if isinstance(expr, list) else [expr]:
                value = eval(e)  # noqa: S307 - the fixture's NumPy expressions
                p = af.placeholder(af.as_dtype(np.asarray(value).dtype), np.shape(value))
                feeds[p] = value
                holders.append(p)
            kwargs[key] = holders if isinstance(expr, list) else holders[0]
        attrs = {k: (af.as_dtype(v) if k == "out_idx" else v) for k, v in spec["attrs"].items()}
        try:
            out = apply_op(spec["op"], **kwargs, **attrs)
        except ValueError as e:  # a shape-function error, at graph construction as TF's
            assert want.get("error") == "ValueError"
            assert str(e).split(" for ")[0] == want["message"].split(" for ")[0]
            return
        async with af.Session() as sess:
            if "error" in want:
                with pytest.raises(errors.OpError) as e:
                    await sess.run(out, feeds)
                assert type(e.value).__name__ == want["error"]
                assert e.value.message.split("\n\t [[")[0] == want["message"]
                return
            got = await sess.run(list(out) if isinstance(out, (list, tuple)) else [out], feeds)
    assert len(got) == len(want["outputs"])
    for g, w in zip(got, want["outputs"], strict=True):
        _check(g, w)


async def test_builders():
    with af.Graph().as_default():
        parts = af.dynamic_partition(af.constant([10, 20, 30, 40]), af.constant([1, 0, 1, 1]),
                                     2)
        stitched = af.dynamic_stitch([af.constant([1]), af.constant([0, 2])],
                                     [af.constant([7.0]), af.constant([5.0, 9.0])])
        diff, idx = af.setdiff1d(af.constant([4, 1, 4, 2]), af.constant([4]))
        before = time.time()
        async with af.Session() as sess:
            got = await sess.run([parts, stitched, diff, idx, af.roll(af.range(5), 2, 0),
                                  af.invert_permutation(af.constant([1, 2, 0])),
                                  af.linspace(0.0, 1.0, 5), af.timestamp(),
                                  af.math.asinh(af.constant([0.0, 1.0]))])
        after = time.time()
    assert [p.tolist() for p in got[0]] == [[20], [10, 30, 40]]
    assert got[1].tolist() == [5.0, 7.0, 9.0]
    assert got[2].tolist() == [1, 2] and got[3].tolist() == [1, 3]
    assert got[4].tolist() == [3, 4, 0, 1, 2]
    assert got[5].tolist() == [2, 0, 1]
    np.testing.assert_allclose(got[6], [0, 0.25, 0.5, 0.75, 1.0])
    assert got[7].dtype == np.float64 and before <= got[7] <= after
    np.testing.assert_allclose(got[8], np.arcsinh([0.0, 1.0]), rtol=1e-6)
