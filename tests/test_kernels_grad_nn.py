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
from aioflow.kernels.image import resize_grad_jit
from aioflow.kernels.nn import batch_norm_grad_jit, depthwise_grad_jit, pooling_grad_jit
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
    loops = (depthwise_grad_jit, pooling_grad_jit, batch_norm_grad_jit, resize_grad_jit)
    if not all(loop.wait_ready(120) for loop in loops):
        pytest.skip("numba is not installed")


_JIT_OPS = ("DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter",
            "MaxPoolGrad", "MaxPoolGradV2", "MaxPoolGradGrad", "MaxPoolGradGradV2",
            "MaxPoolWithArgmax", "FusedBatchNormGrad", "FusedBatchNormGradV2",
            "FusedBatchNormGradV3", "ResizeBilinearGrad", "ResizeBicubicGrad",
            "ResizeNearestNeighborGrad")
JIT_CASES = [c for c in CASES if c["op"] in _JIT_OPS and c["outcome"] == "ok"]


@pytest.mark.parametrize("case", JIT_CASES, ids=[c["id"] for c in JIT_CASES])
def test_compiled_path_matches_tensorflow(case, compiled):
    _check(case)


@pytest.fixture
def numpy_only(monkeypatch):
    """The NumPy paths (what runs until the compiled loops are ready, or without numba)."""
    for loops in (depthwise_grad_jit, pooling_grad_jit, batch_norm_grad_jit, resize_grad_jit):
        monkeypatch.setattr(loops, "usable", lambda *args: False)
    from aioflow.kernels.nn import conv_kernels

    monkeypatch.setattr(conv_kernels, "_COMPILED_DEPTHWISE", False)


@pytest.mark.parametrize("case", JIT_CASES, ids=[c["id"] for c in JIT_CASES])
def test_numpy_path_matches_tensorflow(case, numpy_only):
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


def test_shape_functions():
    """Each gradient's static shape is what it is the gradient of (TF's shape functions)."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [8, 9, 10, 3])
        dy = af.placeholder(af.float32, [8, 5, 5, 4])
        y = af.placeholder(af.float32, [8, 5, 5, 3])
        shapes = {
            "filter": apply_op("Conv2DBackpropFilter", input=x, filter_sizes=[3, 2, 3, 4],
                               out_backprop=dy, strides=[1, 2, 2, 1], padding="SAME"),
            "input": apply_op("DepthwiseConv2dNativeBackpropInput", input_sizes=[8, 9, 10, 3],
                              filter=af.placeholder(af.float32), out_backprop=dy,
                              strides=[1, 2, 2, 1], padding="SAME"),
            "maxpool": apply_op("MaxPoolGrad", orig_input=x, orig_output=y, grad=y,
                                ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"),
            "gradgrad": apply_op("MaxPoolGradGrad", orig_input=x, orig_output=y, grad=x,
                                 ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"),
            "avg": apply_op("AvgPoolGrad", orig_input_shape=[8, 9, 10, 3], grad=y,
                            ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"),
            "argmax": apply_op("MaxPoolWithArgmax", input=x, ksize=[1, 3, 3, 1],
                               strides=[1, 2, 2, 1], padding="SAME")[1],
            "resize": apply_op("ResizeBilinearGrad", grads=af.placeholder(af.float32,
                                                                          [8, 20, 21, 3]),
                               original_image=x),
            "nearest": apply_op("ResizeNearestNeighborGrad",
                                grads=af.placeholder(af.float32, [8, 20, 21, 3]),
                                size=[9, 10]),
        }
        bn = apply_op("FusedBatchNormGradV3", y_backprop=x, x=x,
                      scale=af.placeholder(af.float32, [3]),
                      reserve_space_1=af.placeholder(af.float32, [3]),
                      reserve_space_2=af.placeholder(af.float32, [3]),
                      reserve_space_3=af.placeholder(af.float32))
    assert {k: t.shape.as_list() for k, t in shapes.items()} == {
        "filter": [3, 2, 3, 4], "input": [8, 9, 10, 3], "maxpool": [8, 9, 10, 3],
        "gradgrad": [8, 5, 5, 3], "avg": [8, 9, 10, 3], "argmax": [8, 5, 5, 3],
        "resize": [8, 9, 10, 3], "nearest": [8, 9, 10, 3]}
    assert [t.shape.as_list() for t in bn] == [[8, 9, 10, 3], [3], [3], [0], [0]]



# Static shapes (or the ValueError's start) TF 2.21 gives, built with tf.compat.v1
# placeholders of these shapes (None: unknown rank).
_DENSE, _SPARSE = "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits"
_BROADCAST = "Shape must be broadcasted with rank 2, but is rank "
_XENT_SHAPES = [
    (_DENSE, [], [3], _BROADCAST + "1"),
    (_DENSE, [3], [3], _BROADCAST + "1"),
    (_DENSE, [2, 3, 4], [2, 3, 4], _BROADCAST + "3"),
    (_DENSE, [2, 3], None, ([2], [2, 3])),
    (_DENSE, None, [2, 3], ([2], [2, 3])),
    (_DENSE, [], None, _BROADCAST + "is unknown."),
    (_DENSE, None, [], _BROADCAST + "is unknown."),
    (_DENSE, [3], None, _BROADCAST + "is unknown."),
    (_DENSE, [2, 1], [1, 3], ([2], [2, 3])),
    (_DENSE, [2, 3], [3], ([2], [2, 3])),
    (_SPARSE, [], [3], "Shape must be rank 2 but is rank 0"),
    (_SPARSE, [3], [3], "Shape must be rank 2 but is rank 1"),
    (_SPARSE, [2, 3], [], "Shape must be rank 1 but is rank 0"),
    (_SPARSE, [2, 3], None, ([2], [2, 3])),
    (_SPARSE, None, [2], ([2], [2, None])),
    (_SPARSE, [2, 3], [2, 3], "Shape must be rank 1 but is rank 2"),
    (_SPARSE, [2, 3, 4], [2, 3], "Shape must be rank 2 but is rank 3"),
    (_SPARSE, [2, 3], [4], "Dimensions must be equal, but are 2 and 4"),
]


@pytest.mark.parametrize("op_type, features, labels, want", _XENT_SHAPES)
def test_cross_entropy_shape_functions_as_tf(op_type, features, labels, want):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, features)
        y = af.placeholder(af.int32 if op_type.startswith("Sparse") else af.float32, labels)
        if isinstance(want, str):
            with pytest.raises(ValueError, match=re.escape(want)):
                apply_op(op_type, features=x, labels=y)
            return
        loss, backprop = apply_op(op_type, features=x, labels=y)
    assert (loss.shape.as_list(), backprop.shape.as_list()) == want


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


@pytest.mark.parametrize("k,s,d,pad", [(3, 1, 1, "SAME"), (3, 2, 1, "SAME"), (3, 2, 1, "VALID"),
                                       (2, 3, 1, "SAME"), (5, 2, 1, "SAME"), (1, 2, 1, "VALID"),
                                       (3, 1, 2, "SAME"), (3, 2, 2, "SAME"), (4, 3, 1, "VALID")])
def test_input_gradient_is_the_adjoint_of_conv2d(k, s, d, pad):
    """<conv(x, w), dy> = <x, dX(w, dy)> for every x: each stride phase's convolution, the
    dilated and the scattered (stride and dilation) paths are exact to rounding."""
    rng = np.random.default_rng(k * 100 + s * 10 + d)
    x = rng.standard_normal((2, 17, 14, 5))
    w = rng.standard_normal((k, k, 5, 6))
    attrs = dict(strides=[1, s, s, 1], padding=pad, dilations=[1, d, d, 1])
    y = create("Conv2D", [x, w], **attrs).compute(None, [x, w])[0]
    dy = rng.standard_normal(y.shape)
    sizes = np.array(x.shape, np.int32)
    dx = create("Conv2DBackpropInput", [sizes, w, dy], **attrs).compute(None, [sizes, w, dy])[0]
    assert dx.shape == x.shape
    assert np.isclose(np.vdot(y, dy), np.vdot(x, dx), rtol=1e-10)


def _depthwise_adjoint(m: int, s: int) -> None:
    rng = np.random.default_rng(m * 10 + s)
    x = rng.standard_normal((2, 11, 9, 4))
    w = rng.standard_normal((3, 3, 4, m))
    attrs = dict(strides=[1, s, s, 1], padding="SAME")
    y = create("DepthwiseConv2dNative", [x, w], **attrs).compute(None, [x, w])[0]
    dy = rng.standard_normal(y.shape)
    ins = [np.array(x.shape, np.int32), w, dy]
    dx = create("DepthwiseConv2dNativeBackpropInput", ins, **attrs).compute(None, ins)[0]
    ins = [x, np.array(w.shape, np.int32), dy]
    dw = create("DepthwiseConv2dNativeBackpropFilter", ins, **attrs).compute(None, ins)[0]
    assert np.isclose(np.vdot(y, dy), np.vdot(x, dx), rtol=1e-10)
    assert np.isclose(np.vdot(y, dy), np.vdot(w, dw), rtol=1e-10)


@pytest.mark.parametrize("m,s", [(1, 1), (1, 2), (1, 3), (3, 1), (3, 2)])
def test_depthwise_gradients_are_adjoints_compiled(m, s, compiled):
    _depthwise_adjoint(m, s)


@pytest.mark.parametrize("m,s", [(1, 1), (1, 2), (3, 2)])
def test_depthwise_gradients_are_adjoints_numpy(m, s, numpy_only):
    _depthwise_adjoint(m, s)


def test_conv3d_input_gradient_is_the_adjoint():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 7, 9, 8, 3))
    w = rng.standard_normal((3, 2, 3, 3, 4))
    attrs = dict(strides=[1, 2, 1, 3, 1], padding="SAME")
    y = create("Conv3D", [x, w], **attrs).compute(None, [x, w])[0]
    dy = rng.standard_normal(y.shape)
    sizes = np.array(x.shape, np.int32)
    dx = create("Conv3DBackpropInputV2", [sizes, w, dy], **attrs).compute(
        None, [sizes, w, dy])[0]
    assert np.isclose(np.vdot(y, dy), np.vdot(x, dx), rtol=1e-10)


@pytest.mark.parametrize("s,d", [((1, 1, 1), (1, 1, 1)), ((2, 1, 3), (1, 1, 1)),
                                 ((1, 1, 1), (2, 1, 2))])
def test_conv3d_filter_gradient_is_the_adjoint(s, d):
    """Each depth plane's patches shared by the depth taps reading it: exact to rounding."""
    rng = np.random.default_rng(sum(s) * 10 + sum(d))
    x = rng.standard_normal((2, 7, 9, 8, 5))
    w = rng.standard_normal((3, 2, 3, 5, 4))
    attrs = dict(strides=[1, *s, 1], padding="SAME", dilations=[1, *d, 1])
    y = create("Conv3D", [x, w], **attrs).compute(None, [x, w])[0]
    dy = rng.standard_normal(y.shape)
    ins = [x, np.array(w.shape, np.int32), dy]
    dw = create("Conv3DBackpropFilterV2", ins, **attrs).compute(None, ins)[0]
    assert np.isclose(np.vdot(y, dy), np.vdot(w, dw), rtol=1e-10)


def test_conv2d_1x1_with_explicit_padding():
    """The 1x1 path pads the input first (it used to crop it: a shape error)."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 4, 4, 2)).astype(np.float32)
    w = rng.standard_normal((1, 1, 2, 3)).astype(np.float32)
    y = create("Conv2D", [x, w], strides=[1, 2, 1, 1], padding="EXPLICIT",
               explicit_paddings=[0, 0, 1, 2, 1, 0, 0, 0]).compute(None, [x, w])[0]
    want = np.einsum("nhwc,co->nhwo", np.pad(x, [(0, 0), (1, 2), (1, 0), (0, 0)])[:, ::2],
                     w[0, 0])
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


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


def test_mirror_pad_grad_and_fake_quant_vars_grad_refuse_bad_inputs_with_tfs_words():
    """The long fuzz run's two open findings: paddings past the output (a raw broadcast
    ValueError before) and non-scalar min/max (a raw IndexError before)."""
    from tests.kernel_testutil import run_kernel

    g = np.ones((3, 4), np.float32)
    with pytest.raises(errors.InvalidArgumentError,
                       match="paddings must be no greater than the output dimension size"):
        run_kernel("MirrorPadGrad", [g, np.array([[1, 1], [2, 1]], np.int32)], mode="REFLECT")
    with pytest.raises(errors.InvalidArgumentError, match="Paddings must be non-negative"):
        run_kernel("MirrorPadGrad", [g, np.array([[-1, 0], [0, 0]], np.int32)],
                   mode="SYMMETRIC")
    x = np.zeros((2, 2), np.float32)
    with pytest.raises(errors.InvalidArgumentError, match="`min` must be rank 0 but is rank 1"):
        run_kernel("FakeQuantWithMinMaxVarsGradient",
                   [x, x, np.zeros(2, np.float32), np.float32(1)])


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_grad_blocks_shared_among_threads(training, compiled, monkeypatch):
    """The compiled batch-norm gradient in blocks shared among threads (per-thread sums)
    gives the one-call values, up to the float64 sums' order."""
    from aioflow.kernels.nn import conv_kernels, normalization_grad_kernels

    rng = np.random.default_rng(11)
    x, dy = (rng.standard_normal((4, 9, 9, 24)).astype(np.float32) for _ in range(2))
    scale, mean = rng.standard_normal(24).astype(np.float32), x.mean(axis=(0, 1, 2))
    var = x.var(axis=(0, 1, 2)).astype(np.float32)
    inputs = [dy, x, scale, mean, var, np.zeros(0, np.float32)]
    whole = create("FusedBatchNormGradV3", inputs, is_training=training,
                   epsilon=0.001).compute(None, inputs)
    monkeypatch.setattr(conv_kernels, "PARALLEL_WORK", 0)
    monkeypatch.setattr(normalization_grad_kernels, "_BLOCK_BYTES", 1)
    blocked = create("FusedBatchNormGradV3", inputs, is_training=training,
                     epsilon=0.001).compute(None, inputs)
    for got, want in zip(blocked[:3], whole[:3], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
