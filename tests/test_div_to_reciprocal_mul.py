"""Division by a constant as TF's default session computes it: grappler rewrites x / c
as x * (1 / c) (aioflow/passes/div_to_reciprocal_mul.py), and with grappler off it is a
true division. Both against TF 2.21 (tests/data/make_div_reciprocal_tf.py), bit for bit."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
from aioflow.proto import config_pb2, rewriter_config_pb2

DATA = Path(__file__).parent / "data"
WANT = np.load(DATA / "div_reciprocal_tf.npz")


def _module():
    spec = importlib.util.spec_from_file_location("make_div_reciprocal_tf",
                                                  DATA / "make_div_reciprocal_tf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _program():
    return _module().program


def _config(**rewrites) -> config_pb2.ConfigProto:
    config = config_pb2.ConfigProto()
    for key, value in rewrites.items():
        setattr(config.graph_options.rewrite_options, key, value)
    return config


async def _run(config=None) -> dict:
    g = af.Graph()
    with g.as_default():
        fetches = _program()(af)
    feeds = {g.get_tensor_by_name(k[len("feed:"):] + ":0"): WANT[k] for k in WANT.files
             if k.startswith("feed:")}
    async with af.Session(graph=g, config=config) as sess:
        return await sess.run(fetches, feeds)


def _assert_equal(got: dict, prefix: str) -> None:
    for name, value in got.items():
        want = WANT[f"{prefix}:{name}"]
        assert value.dtype == want.dtype, name
        np.testing.assert_array_equal(value, want, err_msg=name)


async def test_the_default_session_multiplies_by_the_reciprocal_as_tensorflows():
    _assert_equal(await _run(), "default")


@pytest.mark.parametrize("rewrites", [
    {"disable_meta_optimizer": True},
    {"constant_folding": rewriter_config_pb2.RewriterConfig.OFF}])
async def test_with_grappler_off_it_is_a_true_division(rewrites):
    _assert_equal(await _run(_config(**rewrites)), "plain")


def test_the_fixture_really_tells_the_two_apart():
    """Guard: for these inputs the reciprocal and the true division differ (so the tests
    above cannot both pass by accident)."""
    for name in ("by_255", "by_3_f64", "by_3_f16", "in_loop"):
        assert not np.array_equal(WANT[f"default:{name}"], WANT[f"plain:{name}"]), name


@pytest.mark.parametrize("extra, least", [(0, 0), (1, 0), (0, -1)])
async def test_a_graph_under_min_graph_nodes_is_left_alone(extra, least):
    """Grappler skips a session graph of fewer than RewriterConfig.min_graph_nodes nodes
    (4 when 0; never when negative): x / 255 alone (3 nodes) is a true division, one
    more unrelated node makes it a multiplication."""
    g = af.Graph()
    with g.as_default():
        y = _module().small_program(af, extra)
    async with af.Session(graph=g, config=_config(min_graph_nodes=least)) as sess:
        got = await sess.run(y, {"x:0": WANT["feed:x32"]})
    want = WANT[f"small_{extra}_{least}"]
    np.testing.assert_array_equal(got, want)
    reciprocal = WANT["feed:x32"] * np.float32(1 / 255)
    assert np.array_equal(want, reciprocal) == (extra > 0 or least < 0)
