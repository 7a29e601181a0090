"""The plugin's fixtures and assertions, as a user's tests use them."""

import numpy as np
import pytest

import aioflow as af
from aioflow.testing import assert_graph_equal, assert_near


def test_af_graph_is_a_fresh_default_graph(af_graph):
    assert af.get_default_graph() is af_graph
    assert af_graph.get_operations() == []


async def test_af_session_runs_the_graph(af_graph, af_session):
    x = af.placeholder(af.float32, [3], name="x")
    y = af.nn.softmax(x * 2.0)
    got = await af_session.run(y, {x: np.array([1.0, 2.0, 3.0], np.float32)})
    e = np.exp(np.array([2.0, 4.0, 6.0]))
    assert_near(got, (e / e.sum()).astype(np.float32))


def test_graphs_equal_whatever_the_node_order():
    def build(order):
        g = af.Graph()
        with g.as_default():
            for name in order:
                af.constant(1.0, name=name)
        return g

    assert_graph_equal(build("ab"), build("ba"))
    with pytest.raises(AssertionError, match="node 'b' .* only in the first graph"):
        assert_graph_equal(build("ab"), build("a"))


def test_schedule_seed_is_none_unless_shuffling(af_schedule_seed, pytestconfig):
    shuffling = pytestconfig.getoption("--aioflow-shuffle-schedules") > 0
    assert (af_schedule_seed is not None) == shuffling
