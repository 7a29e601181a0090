"""A TF 1.x cluster hosted by Ray: one aioflow server per task, each in a Ray actor
(`pip install 'aioflow[ray]'`). The same graph then runs across the ps and worker tasks
as in one process; a task whose actor dies is restarted by Ray and served again, and
the session's next step succeeds.

Run as `python ray_cluster.py` (a local Ray cluster starts) or
`python ray_cluster.py ADDRESS` to use a running one (a real cluster's head, "auto").
"""

from __future__ import annotations

import asyncio
import sys

import numpy as np
import ray

import aioflow as af


def build():
    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [None], name="x")
        with af.device("/job:ps/task:0"):
            scale = af.Variable(2.0, name="scale")
        with af.device("/job:worker/task:1"):
            y = af.reduce_sum(af.square(x * scale), name="y")
        out = af.sqrt(y, name="norm")
    return g, x, scale, out


async def main(address: str | None) -> None:
    if address is None:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    else:
        ray.init(address=address, log_to_driver=False)
    cluster = af.distributed.ray_cluster(jobs={"ps": 1, "worker": 2})
    try:
        print("tasks:", cluster.cluster_spec)
        g, x, scale, out = build()
        feed = {x: np.array([3.0, 4.0], np.float32)}
        async with af.Session(cluster.target, graph=g) as sess:
            await sess.run(scale.initializer)
            print(f"norm across 3 actors: {await sess.run(out, feed)}")
            cluster.kill("worker", 1)  # Ray restarts the actor, the watcher serves it again
            while not cluster.restarts[("worker", 1)]:
                await asyncio.sleep(0.1)
            print(f"after worker 1 restarted: {await sess.run(out, feed)}")
    finally:
        cluster.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else None))
