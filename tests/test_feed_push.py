"""A small feed another task uses goes with that task's RunGraph (feed_push.py): that
task's _Recv names its own device as the sender and the client's partition has no
_Send for it (one RecvTensor call less per step); a feed of unknown or large shape is
still pulled. Values are the same either way."""

from __future__ import annotations

import numpy as np
from test_cluster_fixtures import InProcessCluster

import aioflow as af


def _transfers(md) -> dict:
    """{device: [(op, tensor_name, send_device)]} of the partitions' _Send/_Recv."""
    out = {}
    for part in md.partition_graphs:
        for node in part.node:
            if node.op in ("_Send", "_Recv"):
                out.setdefault(node.device, []).append(
                    (node.op, node.attr["tensor_name"].s.decode(),
                     node.attr["send_device"].s.decode()))
    return out


async def test_small_feed_is_pushed_and_large_one_pulled():
    cluster = InProcessCluster({"worker": 2})
    try:
        with af.Graph().as_default() as g:
            small = af.placeholder(af.float32, [3], name="small")
            big = af.placeholder(af.float32, [None], name="big")
            with af.device("/job:worker/task:1"):
                total = af.reduce_sum(small * 2.0) + af.reduce_sum(big)
        options = af.RunOptions(output_partition_graphs=True)
        task0 = "/job:worker/replica:0/task:0/device:CPU:0"
        task1 = "/job:worker/replica:0/task:1/device:CPU:0"
        async with af.Session(cluster.target("worker", 0), graph=g) as sess:
            for i in range(2):
                md = af.RunMetadata()
                got = await sess.run(total, {small: [1.0, 2.0, float(i)], big: [4.0, 5.0]},
                                     options=options, run_metadata=md)
                assert got == 2 * (3.0 + i) + 9.0
        transfers = _transfers(md)
        sends0 = [t for t in transfers[task0] if t[0] == "_Send"]
        recvs1 = [t for t in transfers[task1] if t[0] == "_Recv"]
        # big: cut into _Send (task 0) / _Recv (task 1) as TF's; small: no _Send, its
        # _Recv on task 1 is sent from task 1 itself (the master's RunGraph brings it)
        assert [s[1] for s in sends0 if s[1].startswith("edge_")] == [
            r[1] for r in recvs1 if r[2] == task0]
        assert len([r for r in recvs1 if r[2] == task0]) == 1
        assert len([r for r in recvs1 if r[2] == task1]) == 1
    finally:
        cluster.stop()


async def test_a_pushed_feed_used_on_two_tasks_and_the_client():
    cluster = InProcessCluster({"worker": 3})
    try:
        with af.Graph().as_default() as g:
            x = af.placeholder(af.float32, [2], name="x")
            with af.device("/job:worker/task:1"):
                a = x * 3.0
            with af.device("/job:worker/task:2"):
                b = x + a
            c = af.reduce_sum(b * x)
        async with af.Session(cluster.target("worker", 0), graph=g) as sess:
            value = np.array([1.0, -2.0], np.float32)
            assert await sess.run(c, {x: value}) == float(np.sum((value + 3 * value) * value))
            assert (await sess.run([a, c], {x: value}))[0].tolist() == [3.0, -6.0]
    finally:
        cluster.stop()
