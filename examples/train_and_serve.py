"""Train and serve on one event loop.

A regression model trains in a task of this loop while 64 request handlers of the same
loop ask for predictions; a batcher answers the requests waiting together with one run,
from the latest published snapshot of the weights (published every 25 steps, between two
steps, so never half-applied). A heartbeat task measures how late the loop wakes it. At
the end: every request answered (none failed across the swaps), each answer equal to the
model of the snapshot it used, the heartbeat's p99, and the loss falling as training goes.

    python examples/train_and_serve.py
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time

import numpy as np

import aioflow as af

rng = np.random.default_rng(0)
TRUE_W = rng.normal(size=(8, 1)).astype(np.float32)
X_TRAIN = rng.normal(size=(256, 8)).astype(np.float32)
Y_TRAIN = X_TRAIN @ TRUE_W + 0.5
STEPS, PUBLISH_EVERY, CLIENTS = 400, 25, 64


def model(x, w, b):
    hidden = af.nn.relu(af.matmul(x, w["w1"]) + b["b1"])
    return af.matmul(hidden, w["w2"]) + b["b2"]


def build():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 8], name="x")
        y = af.placeholder(af.float32, [None, 1], name="y")
        init = af.glorot_uniform_initializer(seed=1)
        w = {"w1": af.get_variable("w1", [8, 16], initializer=init),
             "w2": af.get_variable("w2", [16, 1], initializer=init)}
        b = {"b1": af.get_variable("b1", [16], initializer=af.zeros_initializer()),
             "b2": af.get_variable("b2", [1], initializer=af.zeros_initializer())}
        loss = af.reduce_mean(af.square(model(x, w, b) - y))
        step = af.train.get_or_create_global_step()
        train = af.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
        variables = [*w.values(), *b.values()]
        publisher = af.train.SnapshotPublisher(variables, global_step=step)
        # the serving graph: the same model, its weights fed from a snapshot
        weights = af.train.placeholders_for(variables)
        served = model(x, {k: weights[k] for k in w}, {k: weights[k] for k in b})
        init_op = af.global_variables_initializer()
    return g, dict(x=x, y=y, loss=loss, train=train, init=init_op, served=served,
                   weights=weights, publisher=publisher)


async def trainer(sess, m, done: asyncio.Event):
    for i in range(STEPS):
        batch = rng.integers(0, len(X_TRAIN), size=32)
        await sess.run(m["train"], {m["x"]: X_TRAIN[batch], m["y"]: Y_TRAIN[batch]})
        if (i + 1) % PUBLISH_EVERY == 0:
            await m["publisher"].publish(sess)  # between two steps: consistent
        await asyncio.sleep(0)  # a step that ran inline: let the loop serve before the next
    done.set()


class Batcher:
    """Requests waiting together are answered by one run of the serving graph, with the
    snapshot current when the batch starts (TF Serving batches the same way)."""

    def __init__(self, sess, m):
        self.sess, self.m = sess, m
        self.waiting: list = []
        self.busy = False

    async def predict(self, x):
        future = asyncio.get_running_loop().create_future()
        self.waiting.append((x, future))
        if not self.busy:
            self.busy = True
            asyncio.ensure_future(self._serve())
        return await future

    async def _serve(self):
        while self.waiting:
            batch, self.waiting = self.waiting, []
            snapshot = self.m["publisher"].current  # one version for the whole batch
            feed = {self.m["x"]: np.concatenate([x for x, _ in batch]),
                    **snapshot.feed_dict(self.m["weights"])}
            try:
                out = await self.sess.run(self.m["served"], feed)
            except Exception as e:  # a failed run fails its requests, not the server
                for _, future in batch:
                    future.set_exception(e)
                continue
            start = 0
            for x, future in batch:
                future.set_result((snapshot, out[start:start + len(x)]))
                start += len(x)
        self.busy = False


async def client(batcher: Batcher, done: asyncio.Event, answers: list):
    x = rng.normal(size=(4, 8)).astype(np.float32)
    while not done.is_set():
        snapshot, out = await batcher.predict(x)
        answers.append((snapshot, x, out))


async def heartbeat(done: asyncio.Event, lags: list):
    while not done.is_set():
        start = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(time.perf_counter() - start - 0.001)
    if "--lags" in sys.argv:
        print("largest lags (ms):", sorted(round(x * 1000, 2) for x in lags)[-8:])


def numpy_model(values, x):
    hidden = np.maximum(x @ values["w1"] + values["b1"], 0)
    return hidden @ values["w2"] + values["b2"]


async def main():
    g, m = build()
    async with af.Session(graph=g) as sess:
        await sess.run(m["init"])
        first = await m["publisher"].publish(sess)
        # warm up: each run signature is built once (a server warms up before it listens)
        await sess.run(m["served"], {m["x"]: X_TRAIN[:4], **first.feed_dict(m["weights"])})
        await sess.run(m["train"], {m["x"]: X_TRAIN[:32], m["y"]: Y_TRAIN[:32]})
        await sess.run(m["loss"], {m["x"]: X_TRAIN[:4], m["y"]: Y_TRAIN[:4]})
        gc.freeze()  # the graph and session built: keep them out of the collector's passes
        done = asyncio.Event()
        answers, lags = [], []
        batcher = Batcher(sess, m)
        await asyncio.gather(trainer(sess, m, done), heartbeat(done, lags),
                             *(client(batcher, done, answers) for _ in range(CLIENTS)))
        final_loss = await sess.run(m["loss"], {m["x"]: X_TRAIN, m["y"]: Y_TRAIN})
    consistent = all(np.allclose(out, numpy_model(snap.values, x), rtol=1e-4, atol=1e-5)
                     for snap, x, out in answers)
    versions = sorted({snap.version for snap, _, _ in answers})
    p99 = float(np.percentile(lags, 99)) * 1000
    first_loss = float(np.mean((numpy_model(first.values, X_TRAIN) - Y_TRAIN) ** 2))
    print(f"{STEPS} training steps beside {CLIENTS} clients: {len(answers)} requests "
          f"answered, none failed; snapshots served: {len(versions)}")
    print(f"every answer matches its snapshot's weights: {consistent}")
    print(f"loss: {first_loss:.4f} at the first snapshot, {float(final_loss):.4f} at the end")
    print(f"heartbeat p99: {p99:.2f} ms (under 5 ms: {p99 < 5})")


if __name__ == "__main__":
    asyncio.run(main())
