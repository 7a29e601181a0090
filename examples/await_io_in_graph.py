"""A graph that awaits I/O mid-run: `af.async_py_func` awaits a coroutine on the event
loop without holding a thread, so concurrent runs overlap their waits."""

import asyncio
import time

import numpy as np

import aioflow as af

FAKE_DB = {i: float(i) * 10.0 for i in range(100)}


async def lookup(ids):
    """Stands for an awaited database query or HTTP call."""
    await asyncio.sleep(0.05)
    return np.asarray([FAKE_DB[int(i)] for i in ids], np.float32)


async def main():
    g = af.Graph()
    with g.as_default():
        ids = af.placeholder(af.int32, shape=[None], name="ids")
        values = af.async_py_func(lookup, [ids], af.float32, name="lookup")
        score = af.reduce_sum(values * 0.5, name="score")
    async with af.Session(graph=g) as sess:
        await sess.run(score, {ids: [0]})  # the first run builds the executor
        start = time.perf_counter()
        scores = await asyncio.gather(*(sess.run(score, {ids: [i, i + 1]}) for i in range(20)))
        elapsed = time.perf_counter() - start
    print("scores:", [float(s) for s in scores[:5]], "...")
    print(f"20 runs each awaiting 50 ms of I/O took {elapsed * 1e3:.0f} ms together")


if __name__ == "__main__":
    asyncio.run(main())
