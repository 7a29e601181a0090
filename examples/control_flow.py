"""TensorFlow v1 control flow: cond, while_loop and a TensorArray accumulating per step."""

import asyncio

import aioflow as af


async def main():
    g = af.Graph()
    with g.as_default():
        n = af.placeholder(af.int32, shape=[], name="n")
        x = af.placeholder(af.float32, shape=[], name="x")
        sign = af.cond(x > 0, lambda: af.constant(1.0), lambda: af.constant(-1.0))
        squares = af.TensorArray(af.int32, size=n)

        def body(i, total, ta):
            return i + 1, total + i, ta.write(i, i * i)

        _, total, squares = af.while_loop(lambda i, t, ta: i < n, body,
                                          [af.constant(0), af.constant(0), squares])
        stacked = squares.stack()
    async with af.Session(graph=g) as sess:
        s, t, sq = await sess.run([sign, total, stacked], {n: 6, x: -2.5})
    print("sign:", s, "sum(0..5):", t, "squares:", sq)


if __name__ == "__main__":
    asyncio.run(main())
