"""TF 1.x's initializers (aioflow/ops/init_ops.py) against the values TensorFlow 2.21 gives
for the same seeded programs (tests/data/make_initializer_fixtures.py), bit for bit; and
their argument checks and fans."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import aioflow as af
from aioflow.ops import init_ops

DATA = pathlib.Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_initializer_fixtures  # noqa: E402

CASES = make_initializer_fixtures.CASES


@pytest.fixture(scope="module")
def expected():
    with np.load(DATA / "initializer_cases.npz", allow_pickle=False) as z:
        return {name: z[name] for name in z.files}


@pytest.mark.parametrize("name", list(CASES))
async def test_seeded_initializer_gives_tfs_values(name, expected):
    graph_seed, shape, factory, dtype = CASES[name]
    g = af.Graph()
    with g.as_default():
        if graph_seed is not None:
            af.set_random_seed(graph_seed)
        init = factory(init_ops) if factory is not None else None
        v = af.get_variable("v", shape, dtype=getattr(af, dtype), initializer=init)
        init_all = af.global_variables_initializer()
    async with af.Session(graph=g) as sess:
        await sess.run(init_all)
        value = await sess.run(v)
    want = expected[name]
    assert value.dtype == want.dtype and value.shape == want.shape
    np.testing.assert_array_equal(value, want)


@pytest.mark.parametrize("shape, fans", [
    ([], (1.0, 1.0)), ([5], (5.0, 5.0)), ([3, 4], (3.0, 4.0)), ([3, 3, 8, 16], (72.0, 144.0)),
])
def test_fans_are_tfs(shape, fans):
    assert init_ops.compute_fans(shape) == fans


@pytest.mark.parametrize("kwargs, message", [
    ({"scale": 0.0}, "`scale` must be positive float."),
    ({"mode": "fan_sideways"}, "Invalid `mode` argument:"),
    ({"distribution": "cauchy"}, "Invalid `distribution` argument:"),
])
def test_variance_scaling_refuses_what_tf_refuses(kwargs, message):
    with pytest.raises(ValueError, match=message):
        init_ops.variance_scaling_initializer(**kwargs)


def test_normal_initializers_want_floats():
    with pytest.raises(ValueError, match="Expected floating point type, got int32."):
        init_ops.random_normal_initializer(dtype=af.int32)
