"""The convolution, pooling, normalisation and resizing gradient kernels against TF 2.21
(tests/data/grad_kernel_cases, made by tests/data/make_grad_kernel_fixtures_tf.py): the
same outputs, or the same error class and message; their OpDefs equal TF's; errors name
the node in a session; and the NumPy and compiled (numba) paths agree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from kernel_testutil import create
from op_def_compare import assert_equal_to_tf

import aioflow as af
from aioflow.framework import dtypes, errors
from aioflow.framework.op_def_library import apply_op
from aioflow.kernels.nn import depthwise_grad_jit, pooling_grad_jit
from aioflow.proto import op_def_pb2

DATA = Path(__file__).resolve().parent / "data"
_MANIFEST = json.loads((DATA / "grad_kernel_cases.json").read_text())
_ARRAYS = np.load(DATA / "grad_kernel_cases.npz", allow_pickle=False)
CASES = _MANIFEST["cases"]
_TYPE_ATTRS = ("T", "Targmax", "Tshape", "TInput", "U")


def _tolerance(dtype, op: str) -> dict:
    if dtype == np.float16 or dtype.name == "bfloat16":
        return dict(rtol=1e-2, atol=2e-2)
    if dtype == np.float64 and not op.startswith("Resize"):  # TF resizes in float32
        return dict(rtol=1e-9, atol=1e-9)
    if op.startswith("FusedBatchNorm") or op == "LRNGrad":
        return dict(rtol=1e-4, atol=1e-4)
    return dict(rtol=2e-5, atol=2e-5)


def _attrs(case) -> dict:
    return {k: (dtypes.as_dtype(v) if k in _TYPE_ATTRS else v)
            for k, v in case["attrs"].items()}


def _run(case):
    inputs = [_ARRAYS[key] for _, key in case["inputs"]]
    kernel = create(case["op"], inputs, **_attrs(case))
    with np.errstate(all="ignore"):
        return list(kernel.compute(None, inputs))


def _check(case):
    if case["outcome"] == "error":
        cls = getattr(errors, case["error"])
        with pytest.raises(cls) as info:
            _run(case)
        assert type(info.value) is cls
        assert info.value.message == case["message"]
        return
    outputs = _run(case)
    expected = [_ARRAYS[key] for key in case["outputs"]]
    assert len(outputs) == len(expected)
    if case["op"].startswith("FusedBatchNormGrad") and case.get("onednn"):
        # oneDNN's kernel (NCHW inference) returns scalar placeholders for the unused
        # reserve spaces; TF's own CPU kernel, as ours, returns them empty ([0]).
        outputs, expected = outputs[:3], expected[:3]
    for i, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        got = np.asarray(got)
        assert got.dtype == want.dtype, (i, got.dtype, want.dtype)
        assert got.shape == want.shape, (i, got.shape, want.shape)
        if want.size and np.issubdtype(want.dtype, np.floating):
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                       **_tolerance(want.dtype, case["op"]), err_msg=str(i))
        else:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_matches_tensorflow(case):
    _check(case)


@pytest.fixture(scope="module")
def compiled():
    """The numba loops compiled (the kernels run NumPy until then)."""
    if not (depthwise_grad_jit.wait_ready(120) and pooling_grad_jit.wait_ready(120)):
        pytest.skip("numba is not installed")


_JIT_OPS = ("DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter",
            "MaxPoolGrad", "MaxPoolGradV2", "MaxPoolGradGrad", "MaxPoolGradGradV2",
            "MaxPoolWithArgmax", "AvgPoolGrad")
JIT_CASES = [c for c in CASES if c["op"] in _JIT_OPS and c["outcome"] == "ok"]


@pytest.mark.parametrize("case", JIT_CASES, ids=[c["id"] for c in JIT_CASES])
def test_compiled_path_matches_tensorflow(case, compiled):
    _check(case)


def test_fixture_covers_every_op():
    ops = {c["op"] for c in CASES if c["outcome"] == "ok"}
    assert ops >= {"Conv2DBackpropFilter", "Conv2DBackpropInput",
                   "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter",
                   "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", "MaxPoolGrad",
                   "MaxPoolGradV2", "MaxPoolGradGrad", "MaxPoolGradGradV2", "AvgPoolGrad",
                   "MaxPool3DGrad", "AvgPool3DGrad", "MaxPool3DGradGrad", "MaxPoolWithArgmax",
                   "MaxPoolGradWithArgmax", "FusedBatchNormGrad", "FusedBatchNormGradV2",
                   "FusedBatchNormGradV3", "LRNGrad", "ResizeBilinearGrad",
                   "ResizeNearestNeighborGrad", "ResizeBicubicGrad"}


def test_op_defs_equal_tf():
    tf_ops = op_def_pb2.OpList()
    tf_ops.ParseFromString((DATA / "grad_kernel_op_defs.pb").read_bytes())
    assert len(tf_ops.op) == 26
    assert_equal_to_tf(tf_ops)


# -- the deprecated Conv3D gradients (TF 2.21 no longer builds them: compared with V2) ---------

def test_conv3d_v1_gradients_equal_v2():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 6, 7, 2)).astype(np.float32)
    w = rng.standard_normal((2, 3, 2, 2, 3)).astype(np.float32)
    dy = rng.standard_normal((2, 5, 3, 7, 3)).astype(np.float32)
    attrs = dict(strides=[1, 1, 2, 1, 1], padding="SAME")
    sizes = np.array(x.shape, np.int32)
    fsizes = np.array(w.shape, np.int32)
    v2_in = create("Conv3DBackpropInputV2", [sizes, w, dy], **attrs).compute(None,
                                                                             [sizes, w, dy])
    v1_in = create("Conv3DBackpropInput", [x, w, dy], **attrs).compute(None, [x, w, dy])
    np.testing.assert_array_equal(v1_in[0], v2_in[0])
    v2_f = create("Conv3DBackpropFilterV2", [x, fsizes, dy], **attrs).compute(
        None, [x, fsizes, dy])
    v1_f = create("Conv3DBackpropFilter", [x, w, dy], **attrs).compute(None, [x, w, dy])
    np.testing.assert_array_equal(v1_f[0], v2_f[0])


# -- adjointness at model shapes (the blocked and threaded paths) ------------------------------

@pytest.mark.parametrize("k,s,c,o", [(3, 1, 16, 8), (3, 2, 3, 8), (1, 2, 16, 32), (5, 1, 4, 4)])
def test_filter_gradient_is_the_adjoint_of_conv2d(k, s, c, o):
    """<conv(x, w), dy> = <w, dW(x, dy)> for every w: dW is exact to rounding."""
    rng = np.random.default_rng(k * 10 + s)
    x = rng.standard_normal((3, 23, 19, c))
    w = rng.standard_normal((k, k, c, o))
    y = create("Conv2D", [x, w], strides=[1, s, s, 1], padding="SAME").compute(None, [x, w])[0]
    dy = rng.standard_normal(y.shape)
    dw = create("Conv2DBackpropFilter", [x, np.array(w.shape, np.int32), dy],
                strides=[1, s, s, 1], padding="SAME").compute(
        None, [x, np.array(w.shape, np.int32), dy])[0]
    assert np.isclose(np.vdot(y, dy), np.vdot(w, dw), rtol=1e-10)


# -- errors in a session -----------------------------------------------------------------------

def test_kernel_error_names_the_node():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, name="x")
        dy = af.placeholder(af.float32, name="dy")
        dw = apply_op("Conv2DBackpropFilter", input=x, filter_sizes=[3, 3, 3, 4],
                      out_backprop=dy, strides=[1, 1, 1, 1], padding="SAME",
                      name="filter_grad")
    with af.SyncSession(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match=re.escape("filter and out_backprop must have the same "
                                           "out_depth") + r"[\s\S]*\{\{node filter_grad\}\}"):
            sess.run(dw, {x: np.ones((1, 5, 5, 3), np.float32),
                          dy: np.ones((1, 5, 5, 2), np.float32)})
