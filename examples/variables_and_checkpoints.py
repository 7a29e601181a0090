"""State that lives across runs: a variable updated by many concurrent runs, saved to a
TensorFlow-format checkpoint and restored into a fresh session."""

import asyncio
import pathlib
import tempfile

import aioflow as af

g = af.Graph()
with g.as_default():
    af.set_random_seed(1)
    total = af.get_variable("total", [], initializer=af.initializers.zeros())
    weights = af.get_variable("weights", [2, 3])  # glorot_uniform, TF's values for seed 1
    step = af.placeholder(af.float32, [], name="step")
    add = af.assign_add(total, step)
    init = af.global_variables_initializer()
    saver = af.train.Saver()


async def main():
    ckpt_dir = pathlib.Path(tempfile.mkdtemp())
    async with af.Session(graph=g) as sess:
        await sess.run(init)
        # 100 runs at once on one loop: every update lands (the variable's lock).
        await asyncio.gather(*(sess.run(add, {step: 1.0}) for _ in range(100)))
        print("total after 100 concurrent assign_add:", await sess.run(total))
        path = await saver.save(sess, str(ckpt_dir / "model"), global_step=1)
        print("saved", pathlib.Path(path).name, "->", sorted(
            p.name for p in ckpt_dir.iterdir()))
    async with af.Session(graph=g) as sess:  # a fresh session: restore instead of init
        await saver.restore(sess, af.train.latest_checkpoint(str(ckpt_dir)))
        print("restored total:", await sess.run(total))
        print("weights (the same after the restore):")
        print(await sess.run(weights))


asyncio.run(main())
