"""A oneDNN convolution gradient's batch cut into chunks (aioflow/kernels/onednn/
batch_split.py): how the batch is cut, the split gradients' values (TF 2.21's fixtures of
tests/data/grad_kernel_cases, made by make_grad_kernel_fixtures_tf.py, and the NumPy
kernels at uneven cuts, channels-first input gradients and strides), that helper threads
take chunks beside the caller, and that a call never waits for a helper that does not
come. Skipped without the onednn extra."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from kernel_testutil import create, make_node_def, stopped_warm_helper

from aioflow.framework import op_def_registry
from aioflow.framework.op_kernel import OpKernelConstruction
from aioflow.kernels import element_threads
from aioflow.kernels.nn import conv_grad_kernels
from aioflow.kernels.onednn import backend, batch_split, conv_grad_onednn, dnnl_api

pytestmark = pytest.mark.skipif(not backend.AVAILABLE,
                                reason=f"oneDNN not loaded: {dnnl_api.load_error()}")

DATA = Path(__file__).resolve().parent / "data"
_REFERENCE = {"Conv2DBackpropInput": conv_grad_kernels.Conv2DBackpropInputOp,
              "Conv2DBackpropFilter": conv_grad_kernels.Conv2DBackpropFilterOp}
TOL = dict(rtol=2e-5, atol=2e-5)


@pytest.fixture
def split_everything(monkeypatch):
    """Every gradient call split into chunks of one item on two threads (the budget as on
    four cores, so that the team is never refused)."""
    monkeypatch.setattr(backend, "team_size", lambda work: 2 if work else 1)
    monkeypatch.setattr(backend, "_CORES", 4)
    monkeypatch.setattr(batch_split, "SPLIT_WORK", 1)
    monkeypatch.setattr(batch_split, "CHUNK_WORK", 1)
    monkeypatch.setattr(conv_grad_onednn, "FILTER_SPLIT_POSITIONS", 1)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _onednn_and_numpy(op, inputs, **attrs):
    kernel = create(op, inputs, **attrs)
    assert type(kernel).__module__ == conv_grad_onednn.__name__
    got = kernel.compute(None, inputs)[0]
    node = make_node_def(op, inputs, **attrs)
    want = _REFERENCE[op](OpKernelConstruction(node, op_def_registry.get(op))).compute(
        None, inputs)[0]
    return got, want


def _inputs(op, x_shape, w_shape, dy):
    if op == "Conv2DBackpropFilter":
        return [_rand(*x_shape), np.array(w_shape, np.int32), dy]
    return [np.array(x_shape, np.int32), _rand(*w_shape, seed=1), dy]


def test_chunks_cut_the_batch_about_twice_per_thread(monkeypatch):
    big = batch_split.SPLIT_WORK * 4
    assert batch_split.chunks(32, batch_split.SPLIT_WORK - 1, 2) == [(0, 32)]
    assert batch_split.chunks(32, big, 1) == [(0, 32)]
    assert batch_split.chunks(1, big, 2) == [(0, 1)]
    assert batch_split.chunks(32, big, 2) == [(0, 8), (8, 16), (16, 24), (24, 32)]
    # no chunk below CHUNK_WORK where the work allows: 2 chunks of the minimum
    monkeypatch.setattr(batch_split, "SPLIT_WORK", batch_split.CHUNK_WORK)
    assert batch_split.chunks(32, 2 * batch_split.CHUNK_WORK + 1, 2) == [(0, 16), (16, 32)]
    uneven = batch_split.chunks(5, big, 2)
    assert uneven == [(0, 2), (2, 4), (4, 5)]


def _tf_cases():
    manifest = json.loads((DATA / "grad_kernel_cases.json").read_text())
    arrays = np.load(DATA / "grad_kernel_cases.npz", allow_pickle=False)
    for case in manifest["cases"]:
        if case["op"] in _REFERENCE and case["outcome"] == "ok":
            inputs = [arrays[key] for _, key in case["inputs"]]
            if inputs[-1].dtype == np.float32 and inputs[-1].shape[0] >= 2:
                yield pytest.param(case, inputs, arrays[case["outputs"][0]], id=case["id"])


@pytest.mark.parametrize("case, inputs, want", list(_tf_cases()))
def test_split_gradients_match_tensorflow(case, inputs, want, split_everything):
    """TF 2.21's conv gradients (strides, dilations, SAME/VALID/EXPLICIT, NCHW, 1x1),
    computed one batch item per chunk."""
    calls = []
    real = batch_split.run_chunks
    with pytest.MonkeyPatch.context() as m:
        m.setattr(conv_grad_onednn, "run_chunks",
                  lambda ranges, fn, threads: calls.append(ranges) or real(ranges, fn, threads))
        kernel = create(case["op"], inputs, **case["attrs"])
        got = kernel.compute(None, inputs)[0]
    assert calls and all(len(r) == inputs[-1].shape[0] for r in calls)  # really split
    np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("op", ["Conv2DBackpropInput", "Conv2DBackpropFilter"])
@pytest.mark.parametrize("x_shape, w_shape, stride", [
    ((5, 9, 9, 16), (3, 3, 16, 32), 1),   # 5 in 3 chunks: two primitives, two layouts
    ((4, 12, 12, 8), (3, 3, 8, 16), 2),
    ((6, 10, 10, 1), (3, 3, 1, 16), 1),   # one input channel: computed channels first
    ((3, 10, 10, 3), (5, 5, 3, 8), 1),    # three: channels first, reordered back
])
def test_split_gradients_match_numpy(op, x_shape, w_shape, stride, split_everything,
                                     monkeypatch):
    monkeypatch.setattr(batch_split, "CHUNK_WORK", 1 << 40)  # 2 chunks ...
    monkeypatch.setattr(batch_split, "chunks", lambda batch, work, threads: [
        (lo, min(lo + 2, batch)) for lo in range(0, batch, 2)])  # ... of two items
    strides = [1, stride, stride, 1]
    out = (x_shape[0], -(-x_shape[1] // stride), -(-x_shape[2] // stride), w_shape[-1])
    inputs = _inputs(op, x_shape, w_shape, _rand(*out, seed=2))
    got, want = _onednn_and_numpy(op, inputs, strides=strides, padding="SAME")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["Conv2DBackpropInput", "Conv2DBackpropFilter"])
def test_a_helper_thread_takes_chunks_beside_the_caller(op, split_everything):
    """Each thread's first chunk waits at a barrier of two: only passed when a helper
    thread runs a chunk while the caller runs one."""
    barrier = threading.Barrier(2, timeout=20)
    seen = set()
    real = batch_split.run_chunks

    def run_chunks(ranges, fn, threads):
        def chunk(lo, hi):
            me = threading.get_ident()
            if me not in seen:
                seen.add(me)
                barrier.wait()
            fn(lo, hi)
        real(ranges, chunk, threads)

    inputs = _inputs(op, (8, 8, 8, 16), (3, 3, 16, 16), _rand(8, 8, 8, 16, seed=2))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(conv_grad_onednn, "run_chunks", run_chunks)
        got = create(op, inputs, strides=[1, 1, 1, 1], padding="SAME").compute(None, inputs)
    assert len(seen) == 2
    want = _onednn_and_numpy(op, inputs, strides=[1, 1, 1, 1], padding="SAME")[1]
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["Conv2DBackpropInput", "Conv2DBackpropFilter"])
def test_a_call_never_waits_for_a_helper_that_does_not_come(op, split_everything,
                                                          monkeypatch):
    """With the helper threads busy (a job holding each until the call is done) and the
    warm helper not coming, the caller runs every chunk itself and returns."""
    stopped_warm_helper(monkeypatch)
    pool = element_threads._helper_pool()
    release = threading.Event()
    holding = [pool.submit(release.wait, 20) for _ in range(pool._max_workers)]
    try:
        inputs = _inputs(op, (8, 8, 8, 16), (3, 3, 16, 16), _rand(8, 8, 8, 16, seed=2))
        callers = set()
        real_execute = conv_grad_onednn.Primitive.execute

        def execute(self, args, key=None):
            callers.add(threading.get_ident())
            return real_execute(self, args, key)

        with pytest.MonkeyPatch.context() as m:
            m.setattr(conv_grad_onednn.Primitive, "execute", execute)
            got = create(op, inputs, strides=[1, 1, 1, 1], padding="SAME").compute(
                None, inputs)
        assert callers == {threading.get_ident()}
    finally:
        release.set()
        for f in holding:
            f.result()
    want = _onednn_and_numpy(op, inputs, strides=[1, 1, 1, 1], padding="SAME")[1]
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4)


def test_one_chunk_keeps_the_openmp_team_from_its_threshold(monkeypatch):
    """A batch of one is not split: from conv_grad_onednn.TEAM_WORK its primitive takes
    the team (as before the split), below it one thread."""
    monkeypatch.setattr(backend, "team_size", lambda work: 2 if work else 1)
    monkeypatch.setattr(backend, "_CORES", 4)
    with batch_split.split_team(1, conv_grad_onednn.TEAM_WORK, conv_grad_onednn.TEAM_WORK) \
            as split:
        assert split.ranges == [(0, 1)] and split.primitive_threads == 2
    with batch_split.split_team(1, batch_split.SPLIT_WORK, conv_grad_onednn.TEAM_WORK) \
            as split:
        assert split.ranges == [(0, 1)] and split.primitive_threads == 1
    with batch_split.split_team(8, batch_split.SPLIT_WORK, conv_grad_onednn.TEAM_WORK) \
            as split:
        assert len(split.ranges) > 1 and split.primitive_threads == 1 and split.threads == 2


def test_a_split_call_shares_its_chunks_while_other_primitives_hold_the_cores(monkeypatch):
    """Its primitives are single-threaded, so a split call shares its chunks even when
    backend.team's budget is spent (the layer's other gradient running beside it): the
    helper takes them once the other call's are done. A call not split gets one thread
    there, as an OpenMP team would oversubscribe the cores."""
    monkeypatch.setattr(backend, "team_size", lambda work: 2 if work else 1)
    monkeypatch.setattr(backend._Budget, "busy", backend._CORES)
    with batch_split.split_team(8, batch_split.SPLIT_WORK, conv_grad_onednn.TEAM_WORK) \
            as split:
        assert len(split.ranges) > 1 and split.threads == 2 and split.primitive_threads == 1
    with batch_split.split_team(1, conv_grad_onednn.TEAM_WORK, conv_grad_onednn.TEAM_WORK) \
            as split:
        assert split.ranges == [(0, 1)] and split.primitive_threads == 1
    assert backend._Budget.busy == backend._CORES


@pytest.mark.parametrize("channels", [1, 3])  # 1: computed channels first, 3: and back
def test_split_conv3d_gradients_match_numpy(channels, split_everything):
    """Conv3DBackpropInputV2/FilterV2, one batch item per chunk (odd batch: 3 chunks)."""
    from aioflow.kernels.nn.conv_grad_kernels import (
        Conv3DBackpropFilterV2Op,
        Conv3DBackpropInputV2Op,
    )

    x_shape, w_shape = (3, 5, 6, 4, channels), (3, 2, 3, channels, 4)
    dy = _rand(3, 5, 6, 4, 4, seed=5)
    attrs = dict(strides=[1, 1, 1, 1, 1], padding="SAME")
    for op, reference, inputs in [
            ("Conv3DBackpropInputV2", Conv3DBackpropInputV2Op,
             [np.array(x_shape, np.int32), _rand(*w_shape, seed=1), dy]),
            ("Conv3DBackpropFilterV2", Conv3DBackpropFilterV2Op,
             [_rand(*x_shape), np.array(w_shape, np.int32), dy])]:
        kernel = create(op, inputs, **attrs)
        assert type(kernel).__module__ == conv_grad_onednn.__name__
        got = kernel.compute(None, inputs)[0]
        want = reference(OpKernelConstruction(make_node_def(op, inputs, **attrs),
                                              op_def_registry.get(op))).compute(None, inputs)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_large_filter_over_few_positions_is_not_split(split_everything, monkeypatch):
    """Each chunk of a filter gradient computes a whole partial filter: below
    FILTER_SPLIT_POSITIONS output positions (batch x spatial) the call runs whole."""
    calls = []
    real = batch_split.run_chunks
    monkeypatch.setattr(conv_grad_onednn, "run_chunks",
                        lambda ranges, fn, threads: calls.append(ranges) or real(ranges, fn,
                                                                                 threads))
    inputs = _inputs("Conv2DBackpropFilter", (4, 3, 3, 8), (3, 3, 8, 8),
                     _rand(4, 3, 3, 8, seed=2))  # 36 positions
    monkeypatch.setattr(conv_grad_onednn, "FILTER_SPLIT_POSITIONS", 37)
    got, want = _onednn_and_numpy("Conv2DBackpropFilter", inputs, strides=[1, 1, 1, 1],
                                  padding="SAME")
    monkeypatch.setattr(conv_grad_onednn, "FILTER_SPLIT_POSITIONS", 36)
    got_split = create("Conv2DBackpropFilter", inputs, strides=[1, 1, 1, 1],
                       padding="SAME").compute(None, inputs)[0]
    assert calls == [[(0, 4)], [(0, 1), (1, 2), (2, 3), (3, 4)]]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_split, want, rtol=1e-4, atol=1e-4)
