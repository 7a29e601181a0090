"""The oneDNN fused convolution's residual addend (aioflow/kernels/onednn/conv_onednn.py):
an addend that only the call's argument list holds becomes the output, summed into by a
sum post-op (TF's forward_input); one held anywhere else is read by a binary post-op and
left as it was. Values against TF 2.21's (tests/data/residual_block.npz, made by
tests/data/make_residual_block_tf.py). Skipped without the onednn extra."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from kernel_testutil import const_array, create, make_node_def, rand_f32

from aioflow.framework import op_def_registry
from aioflow.framework.op_kernel import OpKernelConstruction
from aioflow.kernels.nn import fused_kernels
from aioflow.kernels.onednn import backend, dnnl_api

pytestmark = pytest.mark.skipif(not backend.AVAILABLE,
                                reason=f"oneDNN not loaded: {dnnl_api.load_error()}")

if backend.AVAILABLE:
    from aioflow.kernels.onednn import conv_onednn

#: TF's oneDNN-vs-Eigen tolerance for float32 convolutions (as test_onednn_kernels.py).
TOL = dict(rtol=1e-5, atol=1e-4)
FIXTURE = Path(__file__).parent / "data" / "residual_block.npz"
ATTRS = dict(strides=[1, 1, 1, 1], padding="SAME", fused_ops=["BiasAdd", "Add", "Relu"],
             num_args=2)


_rand = rand_f32
_const = const_array


def _numpy_kernel(inputs):
    node = make_node_def("_FusedConv2D", inputs, **ATTRS)
    kernel = fused_kernels.FusedConv2DOp(OpKernelConstruction(
        node, op_def_registry.get("_FusedConv2D")))
    return kernel.compute(None, inputs)[0]


@pytest.fixture()
def block_inputs():
    """x, filter, bias, addend of one fused call, and the NumPy kernel's output."""
    x, w = _rand(2, 9, 10, 6), _const(_rand(3, 3, 6, 16, seed=2) / 8)
    bias, addend = _const(_rand(16, seed=3)), _rand(2, 9, 10, 16, seed=4)
    return x, w, bias, addend, _numpy_kernel([x, w, bias, addend.copy()])


def test_an_addend_only_the_argument_list_holds_becomes_the_output(block_inputs):
    x, w, bias, addend, want = block_inputs
    kernel = create("_FusedConv2D", [x, w, bias, addend], **ATTRS)
    for _ in range(3):  # the full path, then replays
        inputs = [x, w, bias, addend.copy()]  # the list holds the only reference
        out = kernel.compute(None, inputs)[0]
        assert out is inputs[3]
        np.testing.assert_allclose(out, want, **TOL)
    assert kernel._replay is not None


def test_an_addend_held_elsewhere_is_read_and_left_as_it_was(block_inputs):
    x, w, bias, addend, want = block_inputs
    kernel = create("_FusedConv2D", [x, w, bias, addend], **ATTRS)
    before = addend.copy()
    for _ in range(3):
        out = kernel.compute(None, [x, w, bias, addend])[0]
        assert out is not addend
        np.testing.assert_allclose(out, want, **TOL)
        np.testing.assert_array_equal(addend, before)


@pytest.mark.parametrize("kind", ["view", "read_only", "float64"])
def test_an_addend_that_is_not_a_private_float32_buffer_is_not_written(kind, block_inputs):
    x, w, bias, addend, want = block_inputs
    if kind == "view":  # a view of a buffer other views may share
        addend = np.concatenate([addend, addend])[:2]
    elif kind == "read_only":
        addend = _const(addend)
    elif kind == "float64":  # (cast to a float32 copy first)
        addend = addend.astype(np.float64)
    base = addend.base
    kernel = create("_FusedConv2D", [x, w, bias, addend.astype(np.float32)], **ATTRS)
    inputs = [x, w, bias, addend]
    del addend
    out = kernel.compute(None, inputs)[0]
    assert out is not inputs[3]
    np.testing.assert_allclose(out, want, **TOL)
    if kind == "view":
        np.testing.assert_allclose(base[:2], inputs[3])


async def _run_block(fetch_h: bool, read_after: bool, monkeypatch):
    """The fixture's block in a session, every convolution on the executor's pool (as
    ResNet50's at batch 8): (fetched values, the residual modes of the primitives)."""
    import aioflow as af

    monkeypatch.setattr(backend, "INLINE_WORK", 0)
    d = dict(np.load(FIXTURE))
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 9, 10, 8])
        h = af.nn.relu(af.nn.conv2d(x, af.constant(d["w0"]), [1, 1, 1, 1], "SAME"))
        a = af.nn.relu(af.nn.conv2d(h, af.constant(d["w1"]), [1, 1, 1, 1], "SAME"))
        y = af.nn.relu(af.nn.bias_add(af.nn.conv2d(a, af.constant(d["w2"]), [1, 1, 1, 1],
                                                   "SAME"), af.constant(d["b"])) + h)
        fetches = [y]
        if fetch_h:
            fetches.append(h)
        if read_after:
            with af.control_dependencies([y]):
                fetches.append(af.reduce_sum(h))
    conv_onednn._CACHE.clear()
    async with af.Session(graph=g) as sess:
        for _ in range(3):  # the full path, then replays
            got = await sess.run(fetches, {x: d["x"]})
    modes = {key[8] for key in conv_onednn._CACHE._entries} - {None}
    return d, got, modes


async def test_in_a_session_the_blocks_input_is_summed_into(monkeypatch):
    d, (y,), modes = await _run_block(False, False, monkeypatch)
    np.testing.assert_allclose(y, d["y"], **TOL)
    assert modes == {conv_onednn.SUM}


async def test_in_a_session_an_addend_also_fetched_is_not_written(monkeypatch):
    d, (y, h), modes = await _run_block(True, False, monkeypatch)
    np.testing.assert_allclose(y, d["y"], **TOL)
    np.testing.assert_allclose(h, d["h"], **TOL)
    assert modes == {conv_onednn.BINARY}


async def test_in_a_session_an_addend_read_later_is_not_written(monkeypatch):
    d, (y, s), modes = await _run_block(False, True, monkeypatch)
    np.testing.assert_allclose(y, d["y"], **TOL)
    np.testing.assert_allclose(s, d["s"], rtol=1e-5)
    assert modes == {conv_onednn.BINARY}
