"""Sparse kernels (SparseToDense, SparseTensorDenseMatMul, SparseReshape, SparseReorder,
SparseReduceSum(Sparse), SparseFillEmptyRows, SparseAdd, SparseSlice, SparseConcat) against
TensorFlow 2.21's own answers (tests/data/sparse_cases.*, made by make_sparse_fixtures.py):
the same values, or the same error class and message; then the builders, SparseTensor feeds
and fetches through a Session, and the inline/pool decision."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from kernel_testutil import create, run_kernel

from aioflow.framework import errors

DATA = os.path.join(os.path.dirname(__file__), "data")
with open(os.path.join(DATA, "sparse_cases.json")) as _f:
    CASES = json.load(_f)["cases"]
ARRAYS = np.load(os.path.join(DATA, "sparse_cases.npz"), allow_pickle=False)


def _value(key):
    value = ARRAYS[key]
    return value.astype(object) if value.dtype.kind == "S" else value


def _run_case(c):
    inputs = [_value(k) for k in c["inputs"]]
    attrs = dict(c["attrs"])
    if c["op"] == "SparseConcat":
        attrs["N"] = len(inputs) // 3
    return run_kernel(c["op"], inputs, **attrs)


def _assert_same(got, want, name):
    got = np.asarray(got)
    if want.dtype.kind == "S":
        want = want.astype(object)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)
    else:
        assert got.tolist() == want.tolist(), name


@pytest.mark.parametrize("c", CASES, ids=[c["name"] for c in CASES])
def test_as_tensorflow(c):
    if "error" in c:
        with pytest.raises(getattr(errors, c["error"])) as info:
            _run_case(c)
        assert info.value.message == c["message"]
        return
    outputs = _run_case(c)
    assert len(outputs) == len(c["outputs"])
    for got, key in zip(outputs, c["outputs"], strict=True):
        _assert_same(got, ARRAYS[key], key)
