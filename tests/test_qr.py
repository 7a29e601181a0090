"""Qr (aioflow/kernels/math/linalg_kernels.py) and the orthogonal initializer against TensorFlow
2.21's
values (tests/data/make_qr_fixtures.py): TF's OpDef, q and r of each case to a few ulps
(LAPACK here, Eigen in TF: same Householder sign convention, other rounding), TF's errors."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest
from op_def_compare import assert_equal_to_tf

import aioflow as af
from aioflow.framework import errors
from aioflow.ops import init_ops
from aioflow.proto import op_def_pb2

DATA = pathlib.Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_qr_fixtures  # noqa: E402

TOL = {"float16": 2e-3, "float32": 2e-5, "complex64": 2e-5, "float64": 1e-12}


@pytest.fixture(scope="module")
def expected():
    with np.load(DATA / "qr_cases.npz", allow_pickle=False) as z:
        return {name: z[name] for name in z.files}


def test_op_def_is_tfs():
    assert_equal_to_tf([op_def_pb2.OpDef.FromString((DATA / "qr_op_def.pb").read_bytes())])


async def _run(fetches, feeds, graph):
    async with af.Session(graph=graph) as sess:
        return await sess.run(fetches, feeds)


@pytest.mark.parametrize("name", list(make_qr_fixtures.QR_CASES))
async def test_qr_gives_tfs_values(name, expected):
    shape, dtype, full = make_qr_fixtures.QR_CASES[name]
    x = make_qr_fixtures.qr_input(name)
    g = af.Graph()
    with g.as_default():
        p = af.placeholder(getattr(af, dtype), shape=shape)
        q, r = af.linalg.qr(p, full_matrices=full)
    assert q.shape.as_list() == list(expected[name + "/q"].shape)
    assert r.shape.as_list() == list(expected[name + "/r"].shape)
    got_q, got_r = await _run([q, r], {p: x}, g)
    for got, want in ((got_q, expected[name + "/q"]), (got_r, expected[name + "/r"])):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])
    if x.size:
        np.testing.assert_allclose(got_q.astype(np.complex128) @ got_r, x,
                                   rtol=10 * TOL[dtype], atol=10 * TOL[dtype])


def test_shape_function_refuses_rank_one():
    g = af.Graph()
    with g.as_default(), pytest.raises(ValueError, match="Shape must be at least rank 2 but is "
                                                          "rank 1 for '.*' \\(op: 'Qr'\\)"):
        af.linalg.qr(af.constant([1.0, 2.0]))


async def test_kernel_refuses_rank_one_fed_to_unknown_shape():
    g = af.Graph()
    with g.as_default():
        p = af.placeholder(af.float32)
        q, _ = af.linalg.qr(p)
    with pytest.raises(errors.InvalidArgumentError, match="Input tensor 0 must have rank >= 2, "
                                                          "got 1"):
        await _run(q, {p: [1.0, 2.0]}, g)


def test_bfloat16_is_not_an_allowed_type():
    g = af.Graph()
    with g.as_default(), pytest.raises(TypeError, match="bfloat16"):
        af.linalg.qr(af.constant(np.ones((2, 2)), dtype=af.bfloat16))


@pytest.mark.parametrize("name", list(make_qr_fixtures.ORTHOGONAL_CASES))
async def test_orthogonal_initializer_gives_tfs_values(name, expected):
    graph_seed, shape, gain, seed, dtype = make_qr_fixtures.ORTHOGONAL_CASES[name]
    g = af.Graph()
    with g.as_default():
        if graph_seed is not None:
            af.set_random_seed(graph_seed)
        init = af.orthogonal_initializer(gain=gain, seed=seed)
        v = af.get_variable("v", shape, dtype=getattr(af, dtype), initializer=init)
        init_all = af.global_variables_initializer()
    async with af.Session(graph=g) as sess:
        await sess.run(init_all)
        value = await sess.run(v)
    want = expected[name]
    assert value.dtype == want.dtype and value.shape == want.shape
    np.testing.assert_allclose(value, want, rtol=TOL[dtype], atol=TOL[dtype])
    flat = value.reshape(-1, shape[-1]) / gain
    small = min(flat.shape)
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)


def test_orthogonal_initializer_refuses_what_tf_refuses():
    with pytest.raises(ValueError, match=r"must be at least two-dimensional. Received "
                                         r"shape=\[3\]"):
        init_ops.orthogonal_initializer()([3])
    with pytest.raises(ValueError):
        init_ops.orthogonal_initializer(dtype=af.int32)
    assert init_ops.orthogonal_initializer(gain=2.0, seed=3).get_config() == {
        "gain": 2.0, "seed": 3, "dtype": "float32"}
