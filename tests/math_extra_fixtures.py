"""TF 2.21's results for the math-extra kernels (tests/data/math_extra_cases.*, written by
tests/data/make_math_extra_fixtures.py) and a check that aioflow's kernel gives the same:
the same values (dtype, shape, NaN where TF has NaN; floats within a tolerance per op where
TF's own float algorithm differs), or the same error class and message."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from kernel_testutil import create

from aioflow.framework import dtypes, errors

_DATA = os.path.join(os.path.dirname(__file__), "data")
with open(os.path.join(_DATA, "math_extra_cases.json")) as _f:
    CASES = {c["id"]: c for c in json.load(_f)}
_ARRAYS = np.load(os.path.join(_DATA, "math_extra_cases.npz"), allow_pickle=False)

# Relative tolerances where TF's float algorithm is not aioflow's (others: exact).
_RTOL = {
    ("Lgamma", "float32"): 2e-6, ("Lgamma", "float64"): 1e-13, ("Lgamma", "float16"): 1e-3,
    ("Digamma", "float32"): 2e-6, ("Digamma", "float64"): 1e-13, ("Digamma", "float16"): 1e-3,
    ("Einsum", "float32"): 1e-5, ("Einsum", "float64"): 1e-12, ("Einsum", "float16"): 1e-3,
    ("Einsum", "complex64"): 1e-5,
    ("BatchMatMulV3", "float32"): 1e-5, ("BatchMatMulV3", "float64"): 1e-12,
    ("SparseSegmentSqrtN", "float32"): 1e-6, ("SparseSegmentSqrtNWithNumSegments", "float32"):
    1e-6, ("SparseSegmentSqrtN", "float16"): 1e-3,
    ("SegmentMean", "float64"): 1e-15, ("SegmentProd", "float64"): 1e-15,
    ("SegmentSum", "float64"): 1e-15, ("UnsortedSegmentProd", "float32"): 1e-6,
    ("UnsortedSegmentSum", "float32"): 1e-6,
}


def _array(key):
    value = _ARRAYS[key]
    if value.dtype.kind == "S":
        return value.astype(object)
    return value


def _attr(value):
    if isinstance(value, dict) and "dtype" in value:
        return dtypes.as_dtype(value["dtype"])
    return value


def case_inputs(case) -> list:
    """The case's inputs, a list input flattened (as the NodeDef lists them)."""
    out = []
    for i, n in enumerate(case["n_inputs"]):
        if n is None:
            out.append(_array(f"in:{case['id']}:{i}"))
        else:
            out.extend(_array(f"in:{case['id']}:{i}:{j}") for j in range(n))
    return out


def ids(prefixes) -> list:
    """The case ids starting with one of `prefixes`."""
    return [k for k in CASES if k.startswith(tuple(prefixes))]


def run_case(case):
    """The kernel's outputs for the case (creation errors included)."""
    inputs = case_inputs(case)
    attrs = {k: _attr(v) for k, v in case["attrs"].items()}
    with np.errstate(all="ignore"):  # as the executor runs every kernel
        kernel = create(case["op"], inputs, **attrs)
        return list(kernel.compute(None, inputs))


def check_case(case_id: str) -> None:
    """aioflow's kernel gives what TF gave for this case."""
    case = CASES[case_id]
    if case["outcome"] == "error":
        cls = getattr(errors, case["error_class"])
        with pytest.raises(cls) as info:
            run_case(case)
        if cls is not errors.NotFoundError:  # TF's placer words it; aioflow's registry here
            assert info.value.message == case["message"]
        return
    outs = run_case(case)
    assert len(outs) == case["n_outputs"]
    for i, got in enumerate(outs):
        want = _array(f"out:{case_id}:{i}")
        got = np.asarray(got)
        assert got.shape == want.shape, (i, got.shape, want.shape)
        if want.dtype == object:
            assert got.tolist() == want.tolist()
            continue
        assert got.dtype == want.dtype, (i, got.dtype, want.dtype)
        rtol = _RTOL.get((case["op"], want.dtype.name), 0)
        if want.dtype.kind in "fc" and rtol:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 10, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)
