"""Build a small graph, run it, and run it many times concurrently on one event loop."""

import asyncio

import numpy as np

import aioflow as af


def build():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, shape=[None, 3], name="x")
        w = af.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        b = af.constant([0.1, -0.1], name="b")
        logits = af.matmul(x, w) + b
        probs = af.nn.softmax(logits, name="probs")
        label = af.argmax(probs, axis=1, name="label")
    return g, x, probs, label


async def main():
    g, x, probs, label = build()
    async with af.Session(graph=g) as sess:
        p, l = await sess.run([probs, label], feed_dict={x: [[1, 0, 0], [0, 0, 1]]})
        print("probs:\n", p, "\nlabels:", l)
        # Many runs interleave on one loop; each gets its own answer.
        batches = [np.full((1, 3), i, np.float32) for i in range(8)]
        outs = await asyncio.gather(*(sess.run(label, {x: v}) for v in batches))
        print("8 concurrent runs:", [int(o[0]) for o in outs])


if __name__ == "__main__":
    asyncio.run(main())
