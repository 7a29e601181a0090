"""Serve a Keras model exported by TensorFlow 2 (`model.export()`): load the SavedModel,
call its `serving_default` signature for many requests at once on one event loop.

The model is the LSTM of tests/data/saved_model_v2 (made by
tests/data/make_saved_model_v2_fixtures.py with TensorFlow 2.21), with TF's own outputs
for the same inputs beside it.

    python examples/serve_saved_model.py
"""

import asyncio
import pathlib
import time

import numpy as np

import aioflow as af

DATA = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data" / "saved_model_v2"


async def main():
    with np.load(DATA / "lstm.npz") as z:
        sequences, expected = z["input:seq"], z["output:output_0"]
    async with await af.saved_model.load(DATA / "lstm") as model:
        serve = model.signatures["serving_default"]
        print(serve)
        # one request per sequence, all in flight together
        start = time.perf_counter()
        replies = await asyncio.gather(*(serve(seq=s[None]) for s in sequences))
        elapsed = time.perf_counter() - start
    got = np.concatenate([r["output_0"] for r in replies])
    print(f"{len(replies)} concurrent requests in {elapsed * 1e3:.1f} ms")
    print("outputs:", np.array2string(got, precision=4))
    print("match TensorFlow:", bool(np.allclose(got, expected, rtol=1e-5, atol=1e-6)))


if __name__ == "__main__":
    asyncio.run(main())
