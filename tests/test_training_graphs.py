"""TF-written training graphs run here (tests/data/training_graphs.*, made by
tests/data/make_training_graph_fixtures_tf.py): GraphDefs TF 2.21's tf.compat.v1 built
with their optimizers' update ops and gradients (an MLP under SGD, Momentum, Nesterov,
Adam, RMSProp and Adagrad; embeddings with sparse updates; a CNN with batch
normalization in training mode) import, run their init op and 10 training steps on TF's
batches, and reach TF's losses at every step and TF's weights, slots and moving
statistics after the last (rtol 1e-4)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
from aioflow.proto import graph_pb2

DATA = Path(__file__).parent / "data"
FIXTURES = json.loads((DATA / "training_graphs.json").read_text())
ARRAYS = np.load(DATA / "training_graphs.npz")
STEPS = 10


@pytest.mark.parametrize("name", sorted(FIXTURES))
async def test_tf_training_graph_reaches_tf_values(name):
    spec = FIXTURES[name]
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_pb2.GraphDef.FromString(
            ARRAYS[f"{name}/graph_def"].tobytes()), name="")
    async with af.Session(graph=g) as sess:
        await sess.run(spec["init"])
        losses = []
        for k in range(STEPS):
            feed = {key: ARRAYS[f"{name}/feed{k}/{key}"] for key in spec["feeds"]}
            losses.append(await sess.run(spec["loss"], feed))
            await sess.run(spec["train"], feed)
        after = await sess.run({v: spec["reads"][v] for v in spec["variables"]})
    np.testing.assert_allclose(losses, ARRAYS[f"{name}/losses"], rtol=1e-4)
    for v in spec["variables"]:
        np.testing.assert_allclose(after[v], ARRAYS[f"{name}/after/{v}"], rtol=1e-4,
                                   atol=1e-6, err_msg=f"{name}: {v}")
