"""Keras 3 SavedModels (issue 30, 13), written by TF 2.21's tf.saved_model.save
(tests/data/make_keras3_fixtures_tf.py): a model whose layers hold
`tf.TrackableConstant`s (Normalization's mean and variance) and one whose StringLookup
table is a `tf.StaticHashTable` created and filled by functions at load time. Both load,
and their signatures answer TF's values, through af.saved_model.load and `aioflow serve`'s
loader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aioflow as af

DATA = Path(__file__).parent / "data" / "saved_model_keras3"


def _fixture(name: str):
    with np.load(DATA / f"{name}.npz", allow_pickle=True) as npz:
        inputs = {k.split(":", 1)[1]: npz[k] for k in npz.files if k.startswith("input:")}
        outputs = {k.split(":", 1)[1]: npz[k] for k in npz.files if k.startswith("output:")}
    return inputs, outputs


@pytest.mark.parametrize("name", ["norm", "lookup"])
async def test_keras3_saved_model_loads_and_answers_tfs_values(name):
    inputs, expected = _fixture(name)
    async with await af.saved_model.load(str(DATA / name)) as model:
        got = await model.signatures["serving_default"](**inputs)
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(np.asarray(got[key]), value, rtol=1e-6, atol=1e-7)
        assert np.asarray(got[key]).dtype == value.dtype


@pytest.mark.parametrize("name", ["norm", "lookup"])
async def test_keras3_saved_model_is_served(name):
    pytest.importorskip("grpc")
    from aioflow.serving.loader import load_servable

    inputs, expected = _fixture(name)
    servable = await load_servable(DATA / name)
    try:
        sig = servable.signatures["serving_default"]
        got = await sig.run(inputs, tuple(sig.outputs))
    finally:
        await servable.close()
    for key, value in expected.items():
        np.testing.assert_allclose(np.asarray(got[key]), value, rtol=1e-6, atol=1e-7)
