"""TF's Placer heuristics and ReplicateConstantsPass across two CPU devices, against the
partition graphs TF 2.21 wrote (tests/data/placer_heuristics_tf.json, made by
tests/data/make_placer_heuristics_tf.py): a generator goes with its consumers when they
share a device, Shape/Rank and a plain Identity go with their input, a small constant
with consumers on both devices is copied to each, and a later extension that gives a
generator its consumer moves it."""

from __future__ import annotations

import json

import numpy as np

import aioflow as af
from tests.conftest import DATA
from tests.data.make_placer_heuristics_tf import build, extension

TF = json.loads((DATA / "placer_heuristics_tf.json").read_text())

CONFIG = af.ConfigProto(
    device_count={"CPU": 2},
    graph_options=af.GraphOptions(optimizer_options=af.OptimizerOptions(
        opt_level=af.OptimizerOptions.L0, do_constant_folding=False,
        do_common_subexpression_elimination=False, do_function_inlining=False)))


def _described(run_metadata) -> list:
    return sorted([n.name, n.op, n.device] for g in run_metadata.partition_graphs
                  for n in g.node)


async def test_partition_graphs_and_values_match_tf(graph):
    fetches, feeds, late = build(af)
    options = af.RunOptions(output_partition_graphs=True)
    async with af.Session(config=CONFIG) as sess:
        first = af.RunMetadata()
        values = await sess.run(fetches, feeds, options=options, run_metadata=first)
        assert _described(first) == TF["first"]
        for value, expected in zip(values, TF["values"], strict=True):
            np.testing.assert_array_equal(value, expected)
        late_user = extension(af, late)
        second = af.RunMetadata()
        value = await sess.run(late_user, options=options, run_metadata=second)
        assert _described(second) == TF["second"]
        np.testing.assert_array_equal(value, TF["late_user"])
