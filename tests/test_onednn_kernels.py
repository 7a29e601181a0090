"""The oneDNN backend (aioflow/kernels/onednn/, the `onednn` extra): its kernels chosen over
the NumPy ones for float32 and falling back to them otherwise, their results against the
NumPy kernels (the reference; TF's fixtures run on them in test_kernels_conv.py and
test_kernels_grad_nn.py) at the shapes, strides, paddings, groups and fused chains
MobileNetV2 and ResNet50 use, the gradients, the primitive, weights and chain caches,
the thread budget, and AIOFLOW_ONEDNN=0. Skipped without the extra."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from kernel_testutil import const_array, create, make_node_def, rand_f32

from aioflow.framework import op_def_registry
from aioflow.framework.intra_op_threads import BlasThreads
from aioflow.framework.op_kernel import OpKernelConstruction
from aioflow.kernels.nn import (
    batch_norm_grad_jit,
    conv_grad_kernels,
    conv_kernels,
    fused_kernels,
    normalization_grad_kernels,
    normalization_jit,
    normalization_kernels,
    pooling_grad_kernels,
    pooling_kernels,
)
from aioflow.kernels.onednn import backend, dnnl_api

pytestmark = pytest.mark.skipif(not backend.AVAILABLE,
                                reason=f"oneDNN not loaded: {dnnl_api.load_error()}")

#: TF's oneDNN-vs-Eigen tolerance for float32 convolutions (conv_ops_test: 1e-5 relative,
#: here with an absolute part for sums of hundreds of products near zero).
TOL = dict(rtol=1e-5, atol=1e-4)

_REFERENCE = {"Conv2D": conv_kernels.Conv2DOp, "Conv3D": conv_kernels.Conv3DOp,
              "DepthwiseConv2dNative": conv_kernels.DepthwiseConv2dNativeOp,
              "_FusedConv2D": fused_kernels.FusedConv2DOp,
              "_FusedDepthwiseConv2dNative": fused_kernels.FusedDepthwiseConv2dNativeOp,
              "MaxPool": pooling_kernels.MaxPoolOp, "AvgPool": pooling_kernels.AvgPoolOp,
              "MaxPool3D": pooling_kernels.MaxPool3DOp,
              "AvgPool3D": pooling_kernels.AvgPool3DOp,
              "Conv2DBackpropInput": conv_grad_kernels.Conv2DBackpropInputOp,
              "Conv2DBackpropFilter": conv_grad_kernels.Conv2DBackpropFilterOp,
              "Conv3DBackpropInputV2": conv_grad_kernels.Conv3DBackpropInputV2Op,
              "Conv3DBackpropFilterV2": conv_grad_kernels.Conv3DBackpropFilterV2Op,
              "Conv3DBackpropInput": conv_grad_kernels.Conv3DBackpropInputOp,
              "Conv3DBackpropFilter": conv_grad_kernels.Conv3DBackpropFilterOp,
              "DepthwiseConv2dNativeBackpropInput":
                  conv_grad_kernels.DepthwiseConv2dNativeBackpropInputOp,
              "DepthwiseConv2dNativeBackpropFilter":
                  conv_grad_kernels.DepthwiseConv2dNativeBackpropFilterOp,
              "MaxPoolGrad": pooling_grad_kernels.MaxPoolGradOp,
              "AvgPoolGrad": pooling_grad_kernels.AvgPoolGradOp,
              "AvgPool3DGrad": pooling_grad_kernels.AvgPool3DGradOp,
              "FusedBatchNorm": normalization_kernels.FusedBatchNormOp,
              "FusedBatchNormV2": normalization_kernels.FusedBatchNormV2Op,
              "FusedBatchNormV3": normalization_kernels.FusedBatchNormV3Op,
              "_FusedBatchNormEx": normalization_kernels.FusedBatchNormExOp,
              "FusedBatchNormGrad": normalization_grad_kernels.FusedBatchNormGradOp,
              "FusedBatchNormGradV2": normalization_grad_kernels.FusedBatchNormGradV2Op,
              "FusedBatchNormGradV3": normalization_grad_kernels.FusedBatchNormGradV3Op}


def _both(op, inputs, **attrs):
    """(the oneDNN kernel's outputs, the NumPy kernel's) for one node."""
    kernel = create(op, inputs, **attrs)
    assert type(kernel).__module__.startswith("aioflow.kernels.onednn"), type(kernel)
    got = [np.asarray(v) for v in kernel.compute(None, inputs)]
    node = make_node_def(op, inputs, **attrs)
    reference = _REFERENCE[op](OpKernelConstruction(node, op_def_registry.get(op)))
    want = [np.asarray(v) for v in reference.compute(None, inputs)]
    return got, want


_rand = rand_f32
_const = const_array


def test_version_is_a_supported_one():
    assert dnnl_api.version()[:2] in dnnl_api.SUPPORTED
    assert dnnl_api.info()["version"] == dnnl_api.version()


# -- convolutions ---------------------------------------------------------------------------------

# (input NHWC, filter HWIO, strides, padding, dilations): MobileNetV2/ResNet50 shapes, shrunk
_CONVS = [
    ((1, 16, 16, 3), (3, 3, 3, 8), 2, "SAME", 1),       # the RGB stem
    ((2, 14, 14, 16), (1, 1, 16, 24), 1, "VALID", 1),   # pointwise
    ((1, 15, 15, 16), (1, 1, 16, 8), 2, "SAME", 1),     # strided 1x1 (ResNet's shortcut)
    ((2, 12, 12, 8), (3, 3, 8, 8), 1, "SAME", 1),
    ((1, 13, 11, 8), (3, 3, 8, 12), 2, "VALID", 1),
    ((1, 17, 17, 4), (7, 7, 4, 8), 2, "SAME", 1),       # ResNet's 7x7 stem
    ((1, 12, 12, 6), (3, 3, 6, 4), 1, "SAME", 2),       # dilated
    ((1, 10, 10, 8), (3, 3, 4, 6), 1, "SAME", 1),       # grouped: 2 groups
]


@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation", _CONVS)
def test_conv2d_matches_numpy(x_shape, w_shape, stride, padding, dilation):
    got, want = _both("Conv2D", [_rand(*x_shape), _const(_rand(*w_shape, seed=1))],
                      strides=[1, stride, stride, 1], padding=padding,
                      dilations=[1, dilation, dilation, 1])
    np.testing.assert_allclose(got[0], want[0], **TOL)


def test_conv2d_nchw_and_explicit_padding_match_numpy():
    x, w = _rand(1, 6, 9, 8), _const(_rand(3, 3, 6, 5, seed=1))
    got, want = _both("Conv2D", [x, w], strides=[1, 1, 2, 1], padding="EXPLICIT",
                      explicit_paddings=[0, 0, 0, 0, 2, 1, 0, 3], data_format="NCHW")
    np.testing.assert_allclose(got[0], want[0], **TOL)


@pytest.mark.parametrize("x_shape, w_shape, stride, padding", [
    ((1, 16, 16, 8), (3, 3, 8, 1), 1, "SAME"),
    ((2, 15, 15, 8), (3, 3, 8, 1), 2, "SAME"),
    ((1, 9, 9, 4), (3, 3, 4, 2), 1, "VALID"),  # channel_multiplier 2
    ((1, 14, 14, 6), (5, 5, 6, 1), 2, "SAME"),
])
def test_depthwise_matches_numpy(x_shape, w_shape, stride, padding):
    got, want = _both("DepthwiseConv2dNative", [_rand(*x_shape), _const(_rand(*w_shape))],
                      strides=[1, stride, stride, 1], padding=padding)
    np.testing.assert_allclose(got[0], want[0], **TOL)


_CHAINS = [(["BiasAdd"], 0.2), (["BiasAdd", "Relu"], 0.2), (["BiasAdd", "Relu6"], 0.2),
           (["BiasAdd", "Elu"], 0.2), (["BiasAdd", "LeakyRelu"], 0.3),
           (["BiasAdd", "LeakyRelu"], 1.5), (["FusedBatchNorm"], 0.2),
           (["FusedBatchNorm", "Relu6"], 0.2), (["BiasAdd", "_MklSwish"], 0.2),
           (["FusedBatchNorm", "_MklSwish"], 0.2)]


def _chain_args(fused_ops, channels):
    if fused_ops[0] == "BiasAdd":
        return [_rand(channels, seed=3) * 3]
    rng = np.random.default_rng(4)
    return [rng.uniform(0.5, 2, channels).astype(np.float32),
            rng.standard_normal(channels).astype(np.float32),
            rng.standard_normal(channels).astype(np.float32),
            rng.uniform(0.1, 3, channels).astype(np.float32)]


@pytest.mark.parametrize("fused_ops, alpha", _CHAINS)
def test_fused_conv2d_matches_numpy(fused_ops, alpha):
    x, w = _rand(2, 9, 10, 6), _const(_rand(3, 3, 6, 16, seed=2))
    args = _chain_args(fused_ops, 16)
    got, want = _both("_FusedConv2D", [x, w, *args], strides=[1, 1, 1, 1], padding="SAME",
                      fused_ops=fused_ops, num_args=len(args), epsilon=0.001,
                      leakyrelu_alpha=alpha)
    np.testing.assert_allclose(got[0], want[0], **TOL)


@pytest.mark.parametrize("fused_ops, alpha", [c for c in _CHAINS if c[0] != ["BiasAdd", "Elu"]])
def test_fused_depthwise_matches_numpy(fused_ops, alpha):
    x, w = _rand(1, 11, 11, 8), _const(_rand(3, 3, 8, 2, seed=2))
    args = _chain_args(fused_ops, 16)
    got, want = _both("_FusedDepthwiseConv2dNative", [x, w, *args], strides=[1, 2, 2, 1],
                      padding="SAME", fused_ops=fused_ops, num_args=len(args),
                      epsilon=0.001, leakyrelu_alpha=alpha)
    np.testing.assert_allclose(got[0], want[0], **TOL)


def test_fused_chain_errors_are_the_numpy_kernels():
    from aioflow.framework import errors
    x, w = _rand(1, 5, 5, 3), _const(_rand(3, 3, 3, 4))
    with pytest.raises(errors.InvalidArgumentError, match="bias must be 1-dimensional of size 4"):
        create("_FusedConv2D", [x, w, _rand(5)], strides=[1, 1, 1, 1], padding="SAME",
               fused_ops=["BiasAdd"], num_args=1).compute(None, [x, w, _rand(5)])


# -- falling back, caches ---------------------------------------------------------------------

def test_other_types_use_the_numpy_kernels():
    x64 = _rand(1, 5, 5, 3).astype(np.float64)
    w64 = _rand(3, 3, 3, 4).astype(np.float64)
    assert type(create("Conv2D", [x64, w64], strides=[1, 1, 1, 1], padding="SAME")) is \
        conv_kernels.Conv2DOp
    x16 = x64.astype(np.float16)
    assert type(create("MaxPool", [x16], ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                       padding="VALID")) is pooling_kernels.MaxPoolOp


def test_empty_input_falls_back():
    got, want = _both("Conv2D", [np.zeros((0, 5, 5, 3), np.float32), _const(_rand(3, 3, 3, 4))],
                      strides=[1, 1, 1, 1], padding="SAME")
    assert got[0].shape == want[0].shape == (0, 5, 5, 4)


def test_primitives_are_cached_by_geometry():
    from aioflow.kernels.onednn import conv_onednn
    x, w = _rand(1, 7, 9, 5), _const(_rand(3, 3, 5, 7))
    kernel = create("Conv2D", [x, w], strides=[1, 1, 1, 1], padding="SAME")
    kernel.compute(None, [x, w])
    size = len(conv_onednn._CACHE)
    kernel.compute(None, [x + 1, w])
    create("Conv2D", [x, w], strides=[1, 1, 1, 1], padding="SAME").compute(None, [x, w])
    assert len(conv_onednn._CACHE) == size
    kernel.compute(None, [_rand(2, 7, 9, 5), w])
    assert len(conv_onednn._CACHE) == size + 1


def test_constant_filter_is_reordered_once_and_a_writable_one_every_call():
    x = _rand(1, 8, 8, 16)
    w = _rand(3, 3, 16, 16)
    kernel = create("Conv2D", [x, w], strides=[1, 1, 1, 1], padding="SAME")
    first = kernel.compute(None, [x, w])[0]
    w *= 2  # a writable filter changed in place: never served from the cache
    np.testing.assert_allclose(kernel.compute(None, [x, w])[0], 2 * first, **TOL)
    assert kernel._weights._entry is None
    wc = _const(w)
    kernel.compute(None, [x, wc])
    entry = kernel._weights._entry
    assert entry is not None and entry[0] is wc
    kernel.compute(None, [x, wc])
    assert kernel._weights._entry is entry


def test_read_only_view_of_a_writable_buffer_is_not_cached():
    """A ref variable's read: a read-only view of a buffer Assign writes in place."""
    x = _rand(1, 8, 8, 16)
    buf = _rand(3, 3, 16, 16)
    view = buf.view()
    view.flags.writeable = False
    kernel = create("Conv2D", [x, view], strides=[1, 1, 1, 1], padding="SAME")
    first = kernel.compute(None, [x, view])[0]
    buf *= -1
    np.testing.assert_allclose(kernel.compute(None, [x, view])[0], -first, **TOL)


# -- pooling and batch norm ----------------------------------------------------------------------

@pytest.mark.parametrize("op", ["MaxPool", "AvgPool"])
@pytest.mark.parametrize("shape, k, s, padding", [
    ((2, 13, 11, 5), 3, 2, "SAME"),
    ((1, 12, 12, 16), 3, 2, "SAME"),     # ResNet50's max pool, shrunk
    ((3, 9, 8, 3), 2, 2, "VALID"),
    ((1, 7, 7, 32), 7, 1, "VALID"),      # global average pooling
    ((2, 2, 3, 4), 5, 3, "SAME"),        # the window larger than the input
])
def test_pooling_matches_numpy(op, shape, k, s, padding):
    got, want = _both(op, [_rand(*shape)], ksize=[1, k, k, 1], strides=[1, s, s, 1],
                      padding=padding)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["MaxPool3D", "AvgPool3D"])
def test_pooling_3d_matches_numpy(op):
    got, want = _both(op, [_rand(1, 5, 6, 7, 3)], ksize=[1, 2, 3, 2, 1],
                      strides=[1, 2, 2, 1, 1], padding="SAME")
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def test_max_pool_ignores_nan_as_tensorflow_does():
    """TF 2.21's MaxPool (oneDNN) returns the window's largest number beside a NaN."""
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    x[0, 0, 0, 0] = np.nan
    kernel = create("MaxPool", [x], ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
    np.testing.assert_array_equal(kernel.compute(None, [x])[0].ravel(), [5, 7, 13, 15])


# -- turned off ------------------------------------------------------------------------------

def test_environment_variable_turns_the_backend_off():
    code = ("from aioflow.runtime.kernel_library import load_builtin_kernels\n"
            "load_builtin_kernels()\n"
            "from aioflow.kernels.onednn import backend, dnnl_api\n"
            "from aioflow.framework.op_kernel import registered_kernels\n"
            "names = [c.__name__ for c in registered_kernels()[('Conv2D', 'CPU')]]\n"
            "print(backend.AVAILABLE, dnnl_api.load_error(), names)\n")
    env = dict(os.environ, AIOFLOW_ONEDNN="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "False turned off by AIOFLOW_ONEDNN ['Conv2DOp']"


def test_kernels_registered_ahead_of_numpy():
    from aioflow.framework.op_kernel import registered_kernels
    for op in ("Conv2D", "DepthwiseConv2dNative", "_FusedConv2D", "MaxPool", "AvgPool",
               "Conv2DBackpropInput"):
        classes = registered_kernels()[(op, "CPU")]
        assert classes[0].__module__.startswith("aioflow.kernels.onednn"), op
        # the NumPy kernel stays registered behind it
        assert any(c.__module__.startswith("aioflow.kernels.nn") for c in classes), op


@pytest.mark.parametrize("stride, padding", [(1, "SAME"), (2, "VALID")])
def test_conv3d_matches_numpy(stride, padding):
    got, want = _both("Conv3D", [_rand(1, 6, 7, 8, 3), _const(_rand(3, 3, 3, 3, 8, seed=1))],
                      strides=[1, stride, stride, stride, 1], padding=padding)
    np.testing.assert_allclose(got[0], want[0], **TOL)


@pytest.mark.parametrize("fused_ops, addend_shape", [
    (["BiasAdd", "Add"], (2, 9, 10, 16)),
    (["BiasAdd", "Add", "Relu"], (2, 9, 10, 16)),
    (["BiasAdd", "Add", "Relu6"], (16,)),  # broadcast: added after the primitive
])
def test_fused_conv2d_residual_add_matches_numpy(fused_ops, addend_shape):
    x, w = _rand(2, 9, 10, 6), _const(_rand(3, 3, 6, 16, seed=2))
    args = [_rand(16, seed=3), _rand(*addend_shape, seed=4)]
    from aioflow.kernels.onednn import conv_onednn

    conv_onednn._CACHE.clear()
    got, want = _both("_FusedConv2D", [x, w, *args], strides=[1, 1, 1, 1], padding="SAME",
                      fused_ops=fused_ops, num_args=2)
    np.testing.assert_allclose(got[0], want[0], **TOL)
    # a whole-tensor addend is the primitive's post-op (read in place: the test holds it),
    # not NumPy's add
    assert [key[8] for key in conv_onednn._CACHE._entries] == [
        conv_onednn.BINARY if len(addend_shape) == 4 else None]


def _reference(op, inputs, **attrs):
    node = make_node_def(op, inputs, **attrs)
    return _REFERENCE[op](OpKernelConstruction(node, op_def_registry.get(op))).compute(
        None, inputs)[0]


def test_a_repeated_call_replays_the_last_one():
    """Same shapes, the same read-only filter and bias: the call is replayed (the full
    path, which would check and build everything again, is not taken), with the new
    input's and the new addend's values."""
    attrs = dict(strides=[1, 1, 1, 1], padding="SAME", fused_ops=["BiasAdd", "Add", "Relu"],
                 num_args=2)
    w, bias = _const(_rand(3, 3, 6, 16, seed=2)), _const(_rand(16, seed=3))
    first = [_rand(2, 9, 10, 6), w, bias, _rand(2, 9, 10, 16, seed=4)]
    kernel = create("_FusedConv2D", first, **attrs)
    # (the reference first: the list alone holds the addend, which the call may take over)
    want = _reference("_FusedConv2D", first, **attrs)
    np.testing.assert_allclose(kernel.compute(None, first)[0], want, **TOL)
    kernel.convolve = None  # the full path would call it: replays only from here
    for seed in (5, 6):
        again = [_rand(2, 9, 10, 6, seed=seed), w, bias, _rand(2, 9, 10, 16, seed=seed + 9)]
        want = _reference("_FusedConv2D", again, **attrs)
        np.testing.assert_allclose(kernel.compute(None, again)[0], want, **TOL)


def test_anything_else_takes_the_full_path():
    """Another filter object, another input shape, a strided view as input, a writable
    filter (a variable's: changed in place between calls): the full path, right values."""
    attrs = dict(strides=[1, 1, 1, 1], padding="SAME")
    w = _const(_rand(3, 3, 6, 8, seed=2))
    kernel = create("Conv2D", [_rand(1, 9, 10, 6), w], **attrs)
    calls = []
    full = kernel.convolve

    def counted(*args):
        calls.append(1)
        return full(*args)

    kernel.convolve = counted
    cases = [[_rand(1, 9, 10, 6), w], [_rand(1, 9, 10, 6, seed=1), w],  # replayed
             [_rand(1, 9, 10, 6), _const(_rand(3, 3, 6, 8, seed=3))],  # another filter
             [_rand(2, 9, 10, 6), w],  # another shape
             [_rand(1, 9, 20, 6)[:, :, ::2], w]]  # not contiguous
    for inputs in cases:
        np.testing.assert_allclose(kernel.compute(None, inputs)[0],
                                   _reference("Conv2D", inputs, **attrs), **TOL)
    assert len(calls) == 4
    writable = _rand(3, 3, 6, 8, seed=4)
    x = _rand(1, 9, 10, 6)
    kernel.compute(None, [x, writable])
    writable *= 2  # as an Assign to a ref variable would
    np.testing.assert_allclose(kernel.compute(None, [x, writable])[0],
                               _reference("Conv2D", [x, writable], **attrs), **TOL)
    assert kernel._replay is None and len(calls) == 6


# -- gradients ----------------------------------------------------------------------------------

_GRADS = [((2, 9, 9, 4), (3, 3, 4, 6), 1, "SAME", 1),
          ((1, 14, 14, 8), (3, 3, 8, 4), 2, "SAME", 1),   # a decoder's transposed conv
          ((1, 11, 12, 3), (5, 5, 3, 4), 2, "VALID", 1),
          ((1, 10, 10, 4), (1, 1, 4, 8), 2, "VALID", 1),
          ((1, 12, 12, 2), (3, 3, 2, 3), 1, "SAME", 2)]


def _out_shape(x_shape, w_shape, stride, padding, dilation):
    eff = (w_shape[0] - 1) * dilation + 1
    size = [-(-d // stride) if padding == "SAME" else (d - eff + stride) // stride
            for d in x_shape[1:3]]
    return (x_shape[0], *size, w_shape[3])


@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation", _GRADS)
def test_conv2d_backprop_input_matches_numpy(x_shape, w_shape, stride, padding, dilation):
    dy = _rand(*_out_shape(x_shape, w_shape, stride, padding, dilation))
    got, want = _both("Conv2DBackpropInput", [np.array(x_shape, np.int32),
                                              _const(_rand(*w_shape, seed=1)), dy],
                      strides=[1, stride, stride, 1], padding=padding,
                      dilations=[1, dilation, dilation, 1])
    np.testing.assert_allclose(got[0], want[0], **TOL)


@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation", _GRADS)
def test_conv2d_backprop_filter_matches_numpy(x_shape, w_shape, stride, padding, dilation):
    dy = _rand(*_out_shape(x_shape, w_shape, stride, padding, dilation))
    got, want = _both("Conv2DBackpropFilter", [_rand(*x_shape), np.array(w_shape, np.int32),
                                               dy],
                      strides=[1, stride, stride, 1], padding=padding,
                      dilations=[1, dilation, dilation, 1])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op, small, big, attrs", [
    ("Conv2D", [(1, 28, 28, 32), (3, 3, 32, 32)], [(2, 56, 56, 64), (3, 3, 64, 64)],
     dict(strides=[1, 1, 1, 1], padding="SAME")),
    ("DepthwiseConv2dNative", [(1, 112, 112, 32), (3, 3, 32, 1)],
     [(16, 112, 112, 96), (3, 3, 96, 1)], dict(strides=[1, 1, 1, 1], padding="SAME")),
    ("MaxPool", [(1, 112, 112, 64)], [(8, 112, 112, 256)],
     dict(ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="SAME")),
])
def test_pool_or_inline_by_work(op, small, big, attrs):
    """Up to backend.INLINE_WORK multiply-adds (taps) a call runs on the event loop, above
    on the executor's pool: the executor asks per call (expensive None), never learning
    a cost from the input's size, and never inside a compiled segment (which would run
    many primitives in one call on the loop)."""
    from aioflow.runtime.executor import _mode_of
    from aioflow.runtime.node_item import MAYBE

    small_in = [np.ones(s, np.float32) for s in small]
    big_in = [np.ones(s, np.float32) for s in big]
    kernel = create(op, small_in, **attrs)
    assert not kernel.is_async and kernel.expensive is None
    assert _mode_of(kernel, len(small_in), False) == MAYBE
    assert not kernel.learns_cost and not kernel.compilable
    assert not kernel.is_expensive(small_in)
    assert kernel.is_expensive(big_in)


def _shaped(*shapes):
    """Inputs of these shapes (a broadcast 1: only their sizes are read)."""
    return [np.broadcast_to(np.float32(1), s) for s in shapes]


_MAX_POOL_2X2 = dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")


@pytest.mark.parametrize("op, step, big, attrs", [
    ("FusedBatchNormV3", [(32, 28, 28, 16), (16,), (16,), (16,), (16,)],
     [(16, 112, 112, 64), (64,), (64,), (64,), (64,)], dict(is_training=True)),
    ("FusedBatchNormGradV3", [(32, 28, 28, 16), (32, 28, 28, 16)] + [(16,)] * 4,
     [(16, 112, 112, 64), (16, 112, 112, 64)] + [(64,)] * 4, dict(is_training=True)),
    ("MaxPoolGrad", [(32, 28, 28, 16), (32, 14, 14, 16), (32, 14, 14, 16)],
     [(64, 112, 112, 64), (64, 56, 56, 64), (64, 56, 56, 64)], _MAX_POOL_2X2),
    ("AvgPoolGrad", [(4,), (32, 14, 14, 16)], [(4,), (64, 56, 56, 256)], _MAX_POOL_2X2),
])
def test_training_chain_kernels_run_on_the_loop_up_to_inline_work(op, step, big, attrs):
    """A training step's batch norms and pooling gradients (benchmarks/training.py's
    cnn_bn: 32x28x28x16) are placed as the forward convolutions are (backend.LoopOrThread:
    by their work): on the event loop up to backend.INLINE_WORK, above it (a ResNet-sized
    batch) off the loop."""
    kernel = create(op, _shaped(*step), **attrs)
    assert isinstance(kernel, backend.LoopOrThread)
    assert kernel.work(_shaped(*step)) <= backend.INLINE_WORK < kernel.work(_shaped(*big))


def test_a_call_worth_a_team_is_worth_a_thread():
    """A call of at least TEAM_WORK may go to a free pool thread when the loop has other
    work (the executor decides: tests/test_pool_chains.py); a smaller one never does."""
    tiny = [np.ones((1, 7, 7, 8), np.float32), np.ones((1, 1, 8, 8), np.float32)]
    medium = [np.ones((1, 28, 28, 32), np.float32), np.ones((3, 3, 32, 32), np.float32)]
    kernel = create("Conv2D", medium, strides=[1, 1, 1, 1], padding="SAME")
    assert kernel.work(tiny) < backend.TEAM_WORK <= kernel.work(medium) <= backend.INLINE_WORK
    assert not kernel.worth_a_thread(tiny)
    assert kernel.worth_a_thread(medium) and not kernel.is_expensive(medium)


def test_primitives_run_alone_while_cores_are_shared(monkeypatch):
    """While a job runs on a pool thread beside the loop's own work, every core has a
    thread of ours: a primitive worth a team runs on its calling thread alone."""
    from aioflow.framework import intra_op_threads

    monkeypatch.setattr(backend, "intra_op_threads", lambda: 2)
    assert backend.team_size(backend.TEAM_WORK) == 2
    intra_op_threads.begin_sharing()
    try:
        assert backend.team_size(backend.TEAM_WORK) == 1
    finally:
        intra_op_threads.end_sharing()
    assert backend.team_size(backend.TEAM_WORK) == 2 and backend.team_size(1) == 1


async def test_session_runs_convolutions_inline_and_on_threads():
    """In a session the large convolution runs off the loop, the small one inline, both
    with the NumPy kernels' values; an error off the loop names its node."""
    import aioflow as af
    from aioflow.framework import errors

    x = _rand(2, 56, 56, 64)
    # (scaled by 1 / sqrt(fan-in): values near 1 after both layers, as TOL assumes)
    w_big, w_small = _rand(3, 3, 64, 64, seed=1) / 24, _rand(1, 1, 64, 8, seed=2) / 8
    g = af.Graph()
    with g.as_default():
        xp = af.placeholder(af.float32, [None, 56, 56, None])
        y = af.nn.conv2d(xp, af.constant(w_big), [1, 1, 1, 1], "SAME", name="big")
        z = af.nn.conv2d(y, af.constant(w_small), [1, 2, 2, 1], "SAME", name="small")
    async with af.Session(graph=g) as sess:
        got = await sess.run(z, {xp: x})
        with pytest.raises(errors.InvalidArgumentError, match="big"):
            await sess.run(z, {xp: np.ones((2, 56, 56, 3), np.float32)})
    want_y = _REFERENCE["Conv2D"](OpKernelConstruction(make_node_def(
        "Conv2D", [x, w_big], strides=[1, 1, 1, 1], padding="SAME"),
        op_def_registry.get("Conv2D"))).compute(None, [x, w_big])[0]
    want = _REFERENCE["Conv2D"](OpKernelConstruction(make_node_def(
        "Conv2D", [want_y, w_small], strides=[1, 2, 2, 1], padding="SAME"),
        op_def_registry.get("Conv2D"))).compute(None, [want_y, w_small])[0]
    np.testing.assert_allclose(got, want, **TOL)


async def test_a_layers_input_and_filter_gradients_run_side_by_side(monkeypatch):
    """Below TEAM_WORK a backward primitive runs on its calling thread alone, so the
    oneDNN gradients do not queue behind the device's BLAS gate (one BLAS-threaded kernel
    at a time when the intra-op threads cover the cores): a layer's input and filter
    gradients run at once on the pool's two threads. Each waits here for the other (a
    barrier: behind the gate the second never starts while the first waits, and the
    step fails)."""
    import threading

    import aioflow as af
    from aioflow.kernels.onednn import conv_grad_onednn

    barrier = threading.Barrier(2, timeout=20)

    def after_the_barrier(original):
        def waiting(self, *args):
            barrier.wait()
            return original(self, *args)
        return waiting

    for cls, name in [(conv_grad_onednn._OnednnInputGrad, "input_grad"),
                      (conv_grad_onednn._OnednnFilterGrad, "filter_grad")]:
        monkeypatch.setattr(cls, name, after_the_barrier(getattr(cls, name)))
    x, w, dy = _rand(8, 14, 14, 16), _rand(3, 3, 16, 32, seed=1) / 12, _rand(8, 14, 14, 32)
    g = af.Graph()
    with g.as_default():
        xp, wp = af.placeholder(af.float32, x.shape), af.placeholder(af.float32, w.shape)
        y = af.nn.conv2d(xp, wp, [1, 1, 1, 1], "SAME")
        dx, dw = af.gradients(y, [xp, wp], grad_ys=af.constant(dy))
    cores = os.cpu_count() or 1
    config = af.ConfigProto(inter_op_parallelism_threads=2,
                            intra_op_parallelism_threads=cores)
    async with af.Session(graph=g, config=config) as sess:
        got = await sess.run([dx, dw], {xp: x, wp: w})
    monkeypatch.undo()
    attrs = dict(strides=[1, 1, 1, 1], padding="SAME")
    sizes = np.array(x.shape, np.int32)
    want_dx = create("Conv2DBackpropInput", [sizes, w, dy], **attrs).compute(
        None, [sizes, w, dy])[0]
    want_dw = create("Conv2DBackpropFilter", [x, np.array(w.shape, np.int32), dy],
                     **attrs).compute(None, [x, np.array(w.shape, np.int32), dy])[0]
    np.testing.assert_allclose(got[0], want_dx, **TOL)
    np.testing.assert_allclose(got[1], want_dw, **TOL)


def test_filter_cached_only_when_nothing_can_write_it():
    from aioflow.framework.var import Var
    from aioflow.kernels.onednn.primitives import never_written

    folded = np.ones((3, 3, 2, 2), np.float32) * 2  # a folded Const: a view only it holds
    const = folded.view()
    const.flags.writeable = False
    del folded
    assert never_written(const)
    assert never_written(_const(np.ones(3)))
    assert not never_written(np.ones(3))
    var = Var("v", None)
    var.value = np.ones((3, 3, 2, 2), np.float32)
    assert not never_written(var.read_ref("v"))  # the Var holds (and may write) the buffer


_POOL_GRADS = [((2, 13, 11, 5), 3, 2, "SAME"), ((1, 12, 12, 16), 3, 2, "SAME"),
               ((3, 9, 8, 3), 2, 2, "VALID"), ((1, 7, 7, 8), 7, 1, "VALID")]


@pytest.mark.parametrize("shape, k, s, padding", _POOL_GRADS)
def test_max_pool_grad_matches_numpy(shape, k, s, padding):
    attrs = dict(ksize=[1, k, k, 1], strides=[1, s, s, 1], padding=padding)
    x = _rand(*shape)
    y = create("MaxPool", [x], **attrs).compute(None, [x])[0]
    got, want = _both("MaxPoolGrad", [x, y, _rand(*y.shape, seed=9)], **attrs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def test_max_pool_grad_goes_to_the_first_maximum_as_tensorflows():
    x = np.zeros((1, 4, 4, 1), np.float32)  # every window a tie
    attrs = dict(ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="VALID")
    y = create("MaxPool", [x], **attrs).compute(None, [x])[0]
    got, want = _both("MaxPoolGrad", [x, y, np.ones(y.shape, np.float32)], **attrs)
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("shape, k, s, padding", _POOL_GRADS)
def test_avg_pool_grad_matches_numpy(shape, k, s, padding):
    attrs = dict(ksize=[1, k, k, 1], strides=[1, s, s, 1], padding=padding)
    x = _rand(*shape)
    y = create("AvgPool", [x], **attrs).compute(None, [x])[0]
    got, want = _both("AvgPoolGrad", [np.array(shape, np.int32), _rand(*y.shape, seed=9)],
                      **attrs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def test_avg_pool_3d_grad_matches_numpy():
    attrs = dict(ksize=[1, 2, 3, 2, 1], strides=[1, 2, 2, 1, 1], padding="SAME")
    shape = (1, 5, 6, 7, 3)
    y = create("AvgPool3D", [_rand(*shape)], **attrs).compute(None, [_rand(*shape)])[0]
    got, want = _both("AvgPool3DGrad", [np.array(shape, np.int32), _rand(*y.shape, seed=9)],
                      **attrs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("x_shape, w_shape, stride, padding", [
    ((2, 9, 9, 4), (3, 3, 4, 1), 1, "SAME"), ((1, 14, 14, 8), (3, 3, 8, 2), 2, "SAME"),
    ((1, 11, 12, 3), (5, 5, 3, 1), 2, "VALID")])
def test_depthwise_gradients_match_numpy(x_shape, w_shape, stride, padding):
    attrs = dict(strides=[1, stride, stride, 1], padding=padding)
    dy = _rand(*_out_shape(x_shape, (*w_shape[:3], w_shape[2] * w_shape[3]), stride, padding,
                           1))
    got, want = _both("DepthwiseConv2dNativeBackpropInput",
                      [np.array(x_shape, np.int32), _const(_rand(*w_shape, seed=1)), dy],
                      **attrs)
    np.testing.assert_allclose(got[0], want[0], **TOL)
    got, want = _both("DepthwiseConv2dNativeBackpropFilter",
                      [_rand(*x_shape), np.array(w_shape, np.int32), dy], **attrs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)


def test_a_geometry_onednn_refuses_runs_the_numpy_code(monkeypatch):
    from aioflow.kernels.onednn import conv_onednn

    def refuse(*args, **kwargs):
        raise dnnl_api.DnnlError("dnnl_convolution_forward_primitive_desc_create",
                                 dnnl_api.UNIMPLEMENTED)

    monkeypatch.setattr(conv_onednn, "ConvPlan", refuse)
    monkeypatch.setattr(conv_onednn, "_CACHE", conv_onednn.PrimitiveCache())
    got, want = _both("Conv2D", [_rand(1, 6, 6, 3), _const(_rand(3, 3, 3, 4))],
                      strides=[1, 1, 1, 1], padding="SAME")
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.skipif(BlasThreads.find() is None, reason="needs numpy on a pthreads OpenBLAS")
def test_team_size_follows_intra_op_threads():
    """intra_op_parallelism_threads (BLAS's count, as the CPU device sets it) sizes the
    OpenMP team of a large primitive; a small one runs on one thread."""
    blas = BlasThreads.find()
    before = blas.get()
    try:
        blas.set(1)
        assert backend.team_size(1 << 30) == 1
        blas.set(2)
        assert backend.team_size(1 << 30) == min(2, conv_kernels._CORES)
        assert backend.team_size(1000) == 1
    finally:
        blas.set(before)


def test_one_primitive_runs_in_several_threads_at_once():
    """Runs in flight share a kernel and its primitive: each thread binds its own
    memories (and oneDNN's scratchpad is per thread)."""
    import threading

    w = _const(_rand(3, 3, 8, 8, seed=1))
    xs = [_rand(2, 12, 12, 8, seed=s) for s in range(6)]
    kernel = create("Conv2D", [xs[0], w], strides=[1, 1, 1, 1], padding="SAME")
    want = [kernel.compute(None, [x, w])[0] for x in xs]
    got = [None] * len(xs)
    barrier = threading.Barrier(len(xs))

    def run(i):
        barrier.wait()
        for _ in range(20):
            got[i] = kernel.compute(None, [xs[i], w])[0]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g, w_ in zip(got, want, strict=True):
        # (a primitive of another team size when the cores are taken: another sum order)
        np.testing.assert_allclose(g, w_, **TOL)


def test_teams_never_oversubscribe_the_cores(monkeypatch):
    """A primitive gets its team only when that many cores are free of other primitives'
    threads; else it runs on one thread (many runs in flight)."""
    monkeypatch.setattr(backend, "team_size", lambda work: 2)
    monkeypatch.setattr(backend, "_CORES", 3)
    assert backend.busy_threads() == 0
    with backend.team(1 << 30) as first:
        assert first == 2 and backend.busy_threads() == 2
        with backend.team(1 << 30) as second:
            assert second == 1 and backend.busy_threads() == 3
            with backend.team(1 << 30) as third:
                assert third == 1  # oversubscribed only by single threads, never by teams
        assert backend.busy_threads() == 2
    assert backend.busy_threads() == 0


def test_primitives_run_from_many_threads_at_once_with_their_own_scratchpads():
    """A cached primitive runs on the loop and on worker threads at once: each call
    passes its thread's scratchpad (a library scratchpad belongs to the creating thread,
    and two runs sharing it gave wrong values). Every thread's outputs equal one call's."""
    from concurrent.futures import ThreadPoolExecutor

    from aioflow.kernels.onednn import primitives

    x, w = _rand(2, 28, 28, 64), _const(_rand(3, 3, 64, 64) / 24)
    kernel = create("Conv2D", [x, w], strides=[1, 1, 1, 1], padding="SAME")
    want = kernel.compute(None, [x, w])[0]
    plan = next(p for p in conv_onednn_cache() if p.src_md == primitives.array_desc(
        x, (0, 3, 1, 2)))
    assert primitives.scratchpad_mode(plan.prim.pd) == dnnl_api.SCRATCHPAD_MODE_USER
    assert plan.prim.scratch_size > 0

    def calls(_):
        return all(np.array_equal(kernel.compute(None, [x, w])[0], want) for _ in range(20))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(calls, range(4)))


def test_a_cached_primitive_follows_each_calls_buffers():
    """A primitive's memories are re-pointed only at buffers that moved: the same filter
    and bias stay, new inputs and outputs are read and written where they are."""
    w, b = _const(_rand(3, 3, 4, 8, seed=1) / 6), _const(_rand(8, seed=2))
    xs = [_rand(1, 9, 9, 4, seed=s) for s in (3, 4)]
    kernel = create("_FusedConv2D", [xs[0], w, b], strides=[1, 1, 1, 1], padding="SAME",
                    fused_ops=["BiasAdd", "Relu"], num_args=1)
    reference = _REFERENCE["_FusedConv2D"](OpKernelConstruction(
        make_node_def("_FusedConv2D", [xs[0], w, b], strides=[1, 1, 1, 1], padding="SAME",
                      fused_ops=["BiasAdd", "Relu"], num_args=1),
        op_def_registry.get("_FusedConv2D")))
    for x in (xs[0], xs[1], xs[0], xs[1].copy()):
        got = kernel.compute(None, [x, w, b])[0]
        np.testing.assert_allclose(got, reference.compute(None, [x, w, b])[0], **TOL)


def conv_onednn_cache():
    from aioflow.kernels.onednn import conv_onednn

    return list(conv_onednn._CACHE._entries.values())


def test_a_primitive_leaving_the_scratchpad_to_the_library_is_refused():
    """Such a primitive shares its creating thread's scratchpad, so running it from the
    loop and a worker thread at once gives wrong values: Primitive refuses it."""
    from aioflow.kernels.onednn import primitives

    x = _rand(1, 4, 4, 2)
    md = primitives.array_desc(x, (0, 3, 1, 2))
    eng = primitives.engine()

    def create(attr):
        return lambda pd: dnnl_api._lib.dnnl_reorder_primitive_desc_create(
            pd, md.handle, eng, md.handle, eng, attr)

    with pytest.raises(ValueError, match="scratchpad"):
        primitives.Primitive(create(None), "dnnl_reorder_primitive_desc_create")
    made = primitives.Primitive(create(primitives.user_scratchpad()), "reorder")
    assert primitives.scratchpad_mode(made.pd) == dnnl_api.SCRATCHPAD_MODE_USER


def _gradient_calls():
    """(kernel, inputs) of the oneDNN kernels a training step runs on the pool: backward
    weights, backward data (brgconv, and the channels-first GEMM route of 3 input
    channels), max and average pooling's backward, batch norm's forward training and
    backward."""
    calls = []
    for x_shape, w_shape in [((4, 16, 16, 8), (3, 3, 8, 8)), ((4, 12, 12, 3), (3, 3, 3, 8))]:
        x, w = _rand(*x_shape), _const(_rand(*w_shape, seed=1) / 8)
        dy = _rand(*x_shape[:3], w_shape[3], seed=2)
        attrs = dict(strides=[1, 1, 1, 1], padding="SAME")
        for op, inputs in [("Conv2DBackpropFilter", [x, np.array(w_shape, np.int32), dy]),
                           ("Conv2DBackpropInput", [np.array(x_shape, np.int32), w, dy])]:
            calls.append((create(op, inputs, **attrs), inputs))
    x = _rand(4, 16, 16, 8, seed=3)
    attrs = dict(ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
    y = create("MaxPool", [x], **attrs).compute(None, [x])[0]
    g = _rand(*y.shape, seed=4)
    calls.append((create("MaxPoolGrad", [x, y, g], **attrs), [x, y, g]))
    shape = np.array(x.shape, np.int32)
    calls.append((create("AvgPoolGrad", [shape, g], **attrs), [shape, g]))
    x, scale, offset, mean, var = _batch_norm_inputs((4, 16, 16, 8), "NHWC")
    bn = [x, scale, offset, mean, var]
    calls.append((create("FusedBatchNormV3", bn, is_training=True), bn))
    outs = calls[-1][0].compute(None, bn)
    bn_grad = [_rand(*x.shape, seed=5), x, scale, outs[3], outs[4], outs[5]]
    calls.append((create("FusedBatchNormGradV3", bn_grad, is_training=True), bn_grad))
    return calls


def test_training_primitives_run_from_many_threads_at_once(monkeypatch):
    """The training primitives (the backward ones, batch norm's forward training) are
    cached process-wide and run on the executor's pool threads side by side (no lock):
    each call passes its thread's scratchpad. On teams of two threads (as large
    gradients take) backward weights keeps a reduction scratchpad too. Every thread's
    outputs equal one call's."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from aioflow.kernels.onednn import (
        batch_norm_onednn,
        conv_grad_onednn,
        pooling_grad_onednn,
        primitives,
    )

    monkeypatch.setattr(backend, "team_size", lambda work: 2)
    monkeypatch.setattr(backend, "_CORES", 64)  # every call its team of two
    for cache in (conv_grad_onednn._CACHE, pooling_grad_onednn._CACHE,
                  batch_norm_onednn._CACHE):
        cache.clear()
    calls = _gradient_calls()
    want = [kernel.compute(None, inputs)[0] for kernel, inputs in calls]
    prims = [plan.prim for plan in conv_grad_onednn._CACHE._entries.values()]
    prims += [p for plan in pooling_grad_onednn._CACHE._entries.values()
              for p in (plan.forward, plan.backward)]
    prims += [plan.prim for plan in batch_norm_onednn._CACHE._entries.values()]
    # 4 convolution gradients, 2 pooling ones (forward, backward), batch norm's 2
    assert len(prims) == 10
    assert all(primitives.scratchpad_mode(p.pd) == dnnl_api.SCRATCHPAD_MODE_USER
               for p in prims)
    assert sum(p.scratch_size > 0 for p in prims) >= 3
    barrier = threading.Barrier(6)

    def run(_):
        barrier.wait()
        return all(np.array_equal(kernel.compute(None, inputs)[0], w)
                   for _ in range(8) for (kernel, inputs), w in zip(calls, want, strict=True))

    with ThreadPoolExecutor(6) as pool:
        assert all(pool.map(run, range(6)))


@pytest.mark.parametrize("op", ["Conv2DBackpropFilter", "Conv2DBackpropInput", "MaxPoolGrad"])
def test_gradients_take_a_team_only_from_their_threshold(op, monkeypatch):
    """A training step's small gradients run on one thread (a two-thread team's barriers
    cost more than it saves there); from conv_grad_onednn.TEAM_WORK, the team
    backend.team_size gives."""
    from aioflow.kernels.onednn import conv_grad_onednn

    asked = []
    monkeypatch.setattr(backend, "team_size", lambda work: asked.append(work) or 2)
    monkeypatch.setattr(backend, "_CORES", 4)
    x = _rand(2, 8, 8, 4)
    if op == "MaxPoolGrad":
        attrs = dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
        y = pooling_kernels.MaxPoolOp(OpKernelConstruction(
            make_node_def("MaxPool", [x], **attrs), op_def_registry.get("MaxPool"))
        ).compute(None, [x])[0]
        inputs = [x, y, _rand(2, 4, 4, 4, seed=2)]
    else:
        attrs = dict(strides=[1, 1, 1, 1], padding="SAME")
        dy = _rand(2, 8, 8, 6, seed=3)
        inputs = ([x, np.array([3, 3, 4, 6], np.int32), dy] if op == "Conv2DBackpropFilter"
                  else [np.array(x.shape, np.int32), _const(_rand(3, 3, 4, 6, seed=1)), dy])
    got, want = _both(op, inputs, **attrs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
    assert asked == [0]  # below the threshold: the work asked about is none
    with conv_grad_onednn.grad_team(conv_grad_onednn.TEAM_WORK) as threads:
        assert threads == 2 and asked[-1] == conv_grad_onednn.TEAM_WORK


@pytest.mark.parametrize("stride, padding, dilation", [
    (1, "SAME", 1), (2, "SAME", 1), (1, "VALID", 1), (2, "VALID", 1), (1, "SAME", 2)])
@pytest.mark.parametrize("v2", [True, False])
def test_conv3d_gradients_match_numpy(stride, padding, dilation, v2):
    """Conv3DBackpropInput/Filter (and V2) on oneDNN's backward primitives."""
    if dilation > 1 and not v2:
        pytest.skip("the deprecated ops have no dilations attr")
    x_shape, w_shape = (2, 5, 7, 6, 3), (3, 2, 3, 3, 4)
    eff = [(k - 1) * dilation + 1 for k in w_shape[:3]]
    out = [-(-d // stride) if padding == "SAME" else (d - e + stride) // stride
           for d, e in zip(x_shape[1:4], eff, strict=True)]
    dy = _rand(2, *out, 4, seed=5)
    x, w = _rand(*x_shape), _const(_rand(*w_shape, seed=1))
    attrs = dict(strides=[1, stride, stride, stride, 1], padding=padding)
    if v2:
        attrs["dilations"] = [1, dilation, dilation, dilation, 1]
    suffix = "V2" if v2 else ""
    first = np.array(x_shape, np.int32) if v2 else x
    got, want = _both("Conv3DBackpropInput" + suffix, [first, w, dy], **attrs)
    np.testing.assert_allclose(got[0], want[0], **TOL)
    second = np.array(w_shape, np.int32) if v2 else w
    got, want = _both("Conv3DBackpropFilter" + suffix, [x, second, dy], **attrs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("stride, padding", [(1, "SAME"), (2, "SAME"), (2, "VALID")])
def test_input_gradient_of_few_channels_computed_channels_first(channels, stride, padding):
    """Below conv_grad_onednn.PLANAR_BELOW input channels (a first layer's gray or RGB
    image), Conv2DBackpropInput and Conv3DBackpropInputV2 run oneDNN's channels-first
    route (out_backprop reordered in, the gradient out): the NumPy kernels' values."""
    from aioflow.kernels.onednn import conv_grad_onednn

    planar = channels < conv_grad_onednn.PLANAR_BELOW
    for spatial in ((9, 11), (5, 6, 7)):
        nd = len(spatial)
        x_shape, w_shape = (2, *spatial, channels), (*(3,) * nd, channels, 5)
        out = [-(-d // stride) if padding == "SAME" else (d - 3 + stride) // stride
               for d in spatial]
        dy = _rand(2, *out, 5, seed=channels)
        op = "Conv2DBackpropInput" if nd == 2 else "Conv3DBackpropInputV2"
        conv_grad_onednn._CACHE.clear()
        got, want = _both(op, [np.array(x_shape, np.int32), _const(_rand(*w_shape, seed=1)),
                               dy], strides=[1, *(stride,) * nd, 1], padding=padding)
        np.testing.assert_allclose(got[0], want[0], **TOL)
        plans = list(conv_grad_onednn._CACHE._entries.values())
        assert [p.dy_reorder is not None for p in plans] == [planar]


# -- batch normalization ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def compiled_batch_norm():
    """The NumPy kernels' reference: their compiled passes (what runs without oneDNN)."""
    assert normalization_jit.wait_ready(300) and batch_norm_grad_jit.wait_ready(300)


_BATCH_NORMS = [((8, 14, 14, 16), "NHWC"), ((2, 5, 7, 3), "NHWC"), ((2, 3, 5, 7), "NCHW"),
                ((2, 3, 4, 5, 6), "NDHWC"), ((2, 4, 3, 5, 2), "NCDHW"), ((1, 1, 1, 4), "NHWC")]


def _batch_norm_inputs(shape, data_format, seed=0):
    channels = shape[1] if data_format.startswith("NC") else shape[-1]
    x = _rand(*shape, seed=seed) * 3 + 1
    return [x, _rand(channels, seed=seed + 1), _rand(channels, seed=seed + 2),
            _rand(channels, seed=seed + 3), np.abs(_rand(channels, seed=seed + 4))]


@pytest.mark.parametrize("shape, data_format", _BATCH_NORMS)
@pytest.mark.parametrize("factor", [1.0, 0.25])
def test_batch_norm_training_matches_numpy(shape, data_format, factor, compiled_batch_norm):
    """y, the (blended) running statistics and the saved batch statistics, every layout
    (oneDNN's forward training); one element per channel gives a zero variance."""
    inputs = _batch_norm_inputs(shape, data_format)
    got, want = _both("FusedBatchNormV3", inputs, epsilon=1e-3, is_training=True,
                      data_format=data_format, exponential_avg_factor=factor)
    assert len(got) == 6
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("op", ["FusedBatchNorm", "FusedBatchNormV2"])
def test_batch_norm_v1_v2_training_run_on_onednn(op, compiled_batch_norm):
    inputs = _batch_norm_inputs((4, 6, 6, 8), "NHWC")
    got, want = _both(op, inputs, epsilon=1e-3, is_training=True)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("shape, data_format, op", [
    (shape, fmt, op) for shape, fmt in _BATCH_NORMS
    for op in ["FusedBatchNormGradV3", "FusedBatchNormGrad"][:2 if len(shape) == 4 else 1]])
def test_batch_norm_gradient_matches_numpy(shape, data_format, op, compiled_batch_norm):
    """dx, dscale and doffset from the saved batch mean and biased variance (oneDNN's
    backward); the reserve_space outputs empty, as TF's CPU kernel leaves them."""
    x, scale, offset, mean, var = _batch_norm_inputs(shape, data_format)
    attrs = dict(epsilon=1e-3, is_training=True, data_format=data_format)
    forward = create("FusedBatchNormV3", [x, scale, offset, mean, var], **attrs)
    outs = forward.compute(None, [x, scale, offset, mean, var])
    dy = _rand(*shape, seed=7)
    inputs = [dy, x, scale, outs[3], outs[4]] + ([outs[5]] if op.endswith("V3") else [])
    got, want = _both(op, inputs, **attrs)
    assert [g.shape for g in got] == [w.shape for w in want]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)
    scale_of_sums = np.abs(dy).sum() / scale.size  # float32 sums against float64 ones
    for g, w in zip(got[1:3], want[1:3], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6 * scale_of_sums)


@pytest.mark.parametrize("shape, data_format", [s for s in _BATCH_NORMS if len(s[0]) == 4])
@pytest.mark.parametrize("sides", [0, 1])
def test_fused_batch_norm_ex_matches_numpy(shape, data_format, sides, compiled_batch_norm):
    """_FusedBatchNormEx (the remapper's batch norm + Relu) in training: the Relu inside
    oneDNN's batch norm (fuse_norm_relu) without a side input; with one, added after."""
    from aioflow.kernels.onednn import batch_norm_onednn

    batch_norm_onednn._CACHE.clear()
    inputs = _batch_norm_inputs(shape, data_format)
    inputs += [_rand(*shape, seed=9)] * sides
    got, want = _both("_FusedBatchNormEx", inputs, epsilon=1e-3, is_training=True,
                      data_format=data_format, activation_mode="Relu", num_side_inputs=sides)
    assert (got[0] >= 0).all()
    # (a plan's key ends with whether its primitive fuses the Relu)
    assert [key[-1] for key in batch_norm_onednn._CACHE._entries] == [sides == 0]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-5)


def test_batch_norm_gradient_of_inference_is_the_numpy_kernels(compiled_batch_norm):
    """is_training false: dy scaled per channel by the population statistics, the NumPy
    kernel's code (no oneDNN primitive made)."""
    from aioflow.kernels.onednn import batch_norm_onednn

    batch_norm_onednn._CACHE.clear()
    x, scale, _, mean, var = _batch_norm_inputs((2, 4, 4, 3), "NHWC")
    got, want = _both("FusedBatchNormGradV3", [_rand(2, 4, 4, 3, seed=5), x, scale, mean,
                                               var, np.zeros(0, np.float32)],
                      epsilon=1e-3, is_training=False)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert len(batch_norm_onednn._CACHE) == 0
