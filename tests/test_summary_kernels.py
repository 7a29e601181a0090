"""The summary kernels (ScalarSummary, HistogramSummary, TensorSummaryV2, MergeSummary):
OpDefs equal to TF 2.21's, and for every case of tests/data/make_summary_fixtures.py the
serialized Summary TF's kernel wrote, byte for byte, or TF's error class and message."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes  # noqa: F401  (numpy knows "bfloat16" by name)
import numpy as np
import pytest
from kernel_testutil import run_kernel
from op_def_compare import assert_equal_to_tf

from aioflow.framework import errors
from aioflow.proto import op_def_pb2, summary_pb2

DATA = Path(__file__).parent / "data"
FIXTURES = json.loads((DATA / "summary_cases.json").read_text())
CASES = {c["id"]: c for c in FIXTURES["cases"]}


def test_op_defs_equal_tf():
    tf_ops = op_def_pb2.OpList()
    tf_ops.ParseFromString((DATA / "summary_op_defs.pb").read_bytes())
    assert [op.name for op in tf_ops.op] == ["ScalarSummary", "HistogramSummary",
                                             "TensorSummaryV2", "MergeSummary"]
    assert_equal_to_tf(tf_ops)


def _input(spec):
    value, dtype = spec["value"], spec["dtype"]
    if dtype == "string":
        return np.array(np.vectorize(str.encode, otypes=[object])(np.array(value, dtype=object)),
                        dtype=object)
    if dtype == "bytes":
        if isinstance(value, list):
            return np.array([bytes.fromhex(v) for v in value], dtype=object)
        return np.array(bytes.fromhex(value), dtype=object)
    return np.array(value, dtype=dtype)


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_kernel_matches_tensorflow(case_id):
    case = CASES[case_id]
    inputs = [_input(spec) for spec in case["inputs"]]
    if case["outcome"] == "error":
        with pytest.raises(getattr(errors, case["error_class"])) as info:
            run_kernel(case["op"], inputs, name="summ")
        assert info.value.message == case["message"]
        return
    (out,) = run_kernel(case["op"], inputs, name="summ")
    assert out.shape == () and out.dtype == object
    got = out.item()
    if got != bytes.fromhex(case["output"]):  # a readable difference before the bytes
        want = summary_pb2.Summary.FromString(bytes.fromhex(case["output"]))
        assert summary_pb2.Summary.FromString(got) == want
    assert got.hex() == case["output"]


def test_histogram_collapses_empty_buckets_as_tf():
    """Each kept bucket is non-empty or the last of a run of empty ones, and the counts add
    up to the number of values (a property of TF's encoding, checked on a fresh sample)."""
    values = np.random.default_rng(3).standard_normal(500) * 100
    (out,) = run_kernel("HistogramSummary", [np.array(b"h", dtype=object), values])
    histo = summary_pb2.Summary.FromString(out.item()).value[0].histo
    assert sum(histo.bucket) == 500 and histo.num == 500
    assert histo.min == values.min() and histo.max == values.max()
    assert list(histo.bucket_limit) == sorted(histo.bucket_limit)
    zeros = [i for i, c in enumerate(histo.bucket) if c == 0]
    assert all(i + 1 < len(histo.bucket) and histo.bucket[i + 1] > 0 for i in zeros[:-1])
