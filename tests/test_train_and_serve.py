"""Training beside serving on one loop (aioflow/train/snapshots.py): a snapshot holds the
variables read in one run between training steps, never half an update; requests keep
the snapshot they took while newer ones are published; a hook publishes from a
MonitoredSession. (examples/train_and_serve.py runs the whole pattern: tests/
test_examples.py.)"""

from __future__ import annotations

import asyncio

import numpy as np

import aioflow as af


def _two_counters():
    g = af.Graph()
    with g.as_default():
        a = af.get_variable("a", [3], initializer=af.zeros_initializer())
        b = af.get_variable("b", [3], initializer=af.zeros_initializer())
        step = af.train.get_or_create_global_step()
        with af.control_dependencies([af.assign_add(a, af.ones([3]))]):
            update = af.group(af.assign_add(b, af.ones([3])), af.assign_add(step, 1))
        init = af.global_variables_initializer()
    return g, a, b, step, update, init


async def test_snapshots_are_consistent_and_versioned():
    g, a, b, step, update, init = _two_counters()
    with g.as_default():
        publisher = af.train.SnapshotPublisher([a, b], global_step=step)
    async with af.Session(graph=g) as sess:
        await sess.run(init)
        seen = []

        async def train():
            for i in range(30):
                await sess.run(update)
                if i % 5 == 4:
                    await publisher.publish(sess)
                await asyncio.sleep(0)

        async def reader():
            version = 0
            while version < 6:
                snap = await publisher.wait_for_newer(version)
                version = snap.version
                seen.append(snap)

        await asyncio.gather(train(), reader())
    assert [s.version for s in seen] == [1, 2, 3, 4, 5, 6]
    for snap in seen:
        np.testing.assert_array_equal(snap.values["a"], snap.values["b"])
        np.testing.assert_array_equal(snap.values["a"], np.full(3, snap.step))
        assert not snap.values["a"].flags.writeable
    assert seen[0].step == 5 and seen[-1].step == 30


async def test_a_request_keeps_its_snapshot_across_a_swap():
    g, a, b, step, update, init = _two_counters()
    with g.as_default():
        publisher = af.train.SnapshotPublisher([a, b])
        weights = af.train.placeholders_for([a, b])
        served = weights["a"] + weights["b"]
    async with af.Session(graph=g) as sess:
        await sess.run(init)
        old = await publisher.publish(sess)
        await sess.run(update)
        new = await publisher.publish(sess)
        out_old, out_new = await asyncio.gather(sess.run(served, old.feed_dict(weights)),
                                                sess.run(served, new.feed_dict(weights)))
    np.testing.assert_array_equal(out_old, [0, 0, 0])
    np.testing.assert_array_equal(out_new, [2, 2, 2])
    assert publisher.current is new


async def test_publishing_hook_in_a_monitored_session():
    g, a, b, step, update, init = _two_counters()
    with g.as_default():
        publisher = af.train.SnapshotPublisher([a, b], global_step=step)
        async with af.train.MonitoredSession(hooks=[publisher.hook(every_n_steps=4)]) as s:
            for _ in range(9):
                await s.run(update)
    assert publisher.current.version == 3  # at creation, after runs 4 and 8
    assert publisher.current.step == 8
