"""tf.data on the event loop: what is aioflow's own. IteratorGetNext waits on the loop
(a source that has nothing yet holds no thread); a run cancelled while it waits
(mid-prefetch, mid-function) loses and duplicates nothing; runs sharing an iterator get
distinct elements; an iterator's state serialized and restored resumes at the
next element; from_async_generator and af.data.iterate."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_def_library import apply_op


class Source:
    """An async source the test feeds: an asyncio.Queue read by an async generator
    (None ends it)."""

    def __init__(self):
        self.queue: asyncio.Queue = asyncio.Queue()
        self.started = 0
        self.waiting = asyncio.Event()   # the pipeline waits on the queue

    async def items(self):
        self.started += 1
        while True:
            if self.queue.empty():
                self.waiting.set()
            item = await self.queue.get()
            if item is None:
                return
            yield item


def _pipeline(source, *transforms):
    graph = af.Graph()
    with graph.as_default():
        ds = af.data.Dataset.from_async_generator(source.items,
                                                  af.TensorSpec([], af.int64))
        for t in transforms:
            ds = t(ds)
        it = af.data.make_initializable_iterator(ds)
        nxt = it.get_next()
    return graph, it, nxt


async def _wait(event: asyncio.Event) -> None:
    await asyncio.wait_for(event.wait(), 30)


@pytest.mark.parametrize("transforms", [
    (), (lambda d: d.prefetch(2),), (lambda d: d.map(lambda x: x * 10).prefetch(1),),
    (lambda d: d.prefetch(3).map(lambda x: x * 10),)], ids=["plain", "prefetch",
                                                          "map-prefetch", "prefetch-map"])
async def test_cancelled_run_loses_nothing(transforms):
    source = Source()
    graph, it, nxt = _pipeline(source, *transforms)
    async with af.Session(graph=graph) as sess:
        await sess.run(it.initializer)
        waiting = asyncio.ensure_future(sess.run(nxt))
        await _wait(source.waiting)
        for _ in range(5):
            await asyncio.sleep(0)
        assert not waiting.done()          # nothing yet: the run waits on the loop
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        for i in range(4):
            source.queue.put_nowait(i)
        source.queue.put_nowait(None)
        got = [int(await sess.run(nxt)) for _ in range(4)]
        with pytest.raises(errors.OutOfRangeError):
            await sess.run(nxt)
    assert got in ([0, 1, 2, 3], [0, 10, 20, 30])


async def test_cancelled_mid_function_the_element_goes_to_the_next_run():
    """A map whose function awaits (async_py_func): cancelling the run while the function
    waits does not lose the element being mapped."""
    gate = asyncio.Event()
    called = asyncio.Event()
    calls = []

    async def slow(x):
        calls.append(int(x))
        called.set()
        await gate.wait()
        return x + 100

    graph = af.Graph()
    with graph.as_default():
        ds = af.data.Dataset.range(3).map(
            lambda x: af.async_py_func(slow, [x], af.int64))
        it = af.data.make_initializable_iterator(ds)
        nxt = it.get_next()
    async with af.Session(graph=graph) as sess:
        await sess.run(it.initializer)
        first = asyncio.ensure_future(sess.run(nxt))
        await _wait(called)
        assert calls == [0]
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        gate.set()
        got = [int(await sess.run(nxt)) for _ in range(3)]
        with pytest.raises(errors.OutOfRangeError):
            await sess.run(nxt)
    assert got == [100, 101, 102]
    assert calls == [0, 1, 2]              # element 0 was mapped once


async def test_runs_sharing_an_iterator_get_distinct_elements():
    source = Source()
    graph, it, nxt = _pipeline(source, lambda d: d.map(lambda x: x + 1).prefetch(4))
    async with af.Session(graph=graph) as sess:
        await sess.run(it.initializer)
        runs = [asyncio.ensure_future(sess.run(nxt)) for _ in range(20)]
        await _wait(source.waiting)
        for i in range(20):
            source.queue.put_nowait(i)
            await asyncio.sleep(0)
        got = [int(v) for v in await asyncio.gather(*runs)]
        source.queue.put_nowait(None)
        with pytest.raises(errors.OutOfRangeError):
            await sess.run(nxt)
    assert sorted(got) == list(range(1, 21))   # each element once: none lost, none twice


async def test_runs_sharing_a_synchronous_pipeline():
    graph = af.Graph()
    with graph.as_default():
        ds = af.data.Dataset.range(100).shuffle(10, seed=3).batch(2)
        nxt = af.data.make_one_shot_iterator(ds).get_next()
    async with af.Session(graph=graph) as sess:
        batches = await asyncio.gather(*(sess.run(nxt) for _ in range(50)))
    values = np.concatenate(batches)
    assert sorted(values.tolist()) == list(range(100))


async def test_get_next_waits_without_a_thread():
    """While the source is empty, the loop keeps running other work promptly."""
    source = Source()
    graph, it, nxt = _pipeline(source, lambda d: d.prefetch(1))
    async with af.Session(graph=graph) as sess:
        await sess.run(it.initializer)
        waiting = asyncio.ensure_future(sess.run(nxt))
        ticks = 0
        for _ in range(50):
            await asyncio.sleep(0)
            ticks += 1
        assert ticks == 50 and not waiting.done()
        source.queue.put_nowait(7)
        assert int(await waiting) == 7


def _serializing_graph(make):
    graph = af.Graph()
    with graph.as_default():
        ds = make()
        it = af.data.make_initializable_iterator(ds)
        nxt = it.get_next()
        state = apply_op("SerializeIterator", resource_handle=it._iterator_resource)
        fed = af.placeholder(af.variant, [], name="state")
        restore = apply_op("DeserializeIterator",
                                   resource_handle=it._iterator_resource, serialized=fed)
    return graph, it, nxt, state, fed, restore


@pytest.mark.parametrize("make", [
    lambda: af.data.Dataset.range(20).shuffle(7, seed=5).batch(3),
    lambda: af.data.Dataset.range(10).repeat(3).skip(2).take(25),
    lambda: af.data.Dataset.range(6).interleave(
        lambda x: af.data.Dataset.range(x).map(lambda y: y * 10), cycle_length=2),
    lambda: af.data.Dataset.zip((af.data.Dataset.range(9),
                                 af.data.Dataset.range(9).prefetch(2))).concatenate(
        af.data.Dataset.zip((af.data.Dataset.range(3), af.data.Dataset.range(3)))),
], ids=["shuffle-batch", "repeat-skip-take", "interleave-map", "zip-prefetch-concat"])
async def test_restored_iterator_resumes_at_the_next_element(make):
    graph, it, nxt, state, fed, restore = _serializing_graph(make)
    async with af.Session(graph=graph) as sess:
        await sess.run(it.initializer)
        head = [await sess.run(nxt) for _ in range(4)]
        saved = await sess.run(state)
        rest = []
        while True:
            try:
                rest.append(await sess.run(nxt))
            except errors.OutOfRangeError:
                break
        await sess.run(it.initializer)          # start over, then restore
        await sess.run(nxt)
        await sess.run(restore, {fed: saved})
        again = []
        while True:
            try:
                again.append(await sess.run(nxt))
            except errors.OutOfRangeError:
                break
    assert head
    assert len(again) == len(rest) > 0
    for a, b in zip(again, rest, strict=True):
        np.testing.assert_array_equal(np.asarray(a, dtype=object),
                                      np.asarray(b, dtype=object))


async def test_iterate_yields_the_elements():
    async def agen():
        for i in range(5):
            await asyncio.sleep(0)
            yield {"x": i, "name": f"n{i}"}

    graph = af.Graph()
    with graph.as_default():
        ds = af.data.Dataset.from_async_generator(
            agen, {"x": af.TensorSpec([], af.int64), "name": af.TensorSpec([], af.string)})
        ds = ds.filter(lambda d: af.equal(d["x"] % 2, 0)).map(lambda d: (d["x"] * 3, d["name"]))
    async with af.Session(graph=graph) as sess:
        got = [(int(x), n) async for x, n in af.data.iterate(ds, sess)]
    assert got == [(0, b"n0"), (6, b"n2"), (12, b"n4")]


async def test_async_source_values_are_checked():
    async def agen():
        yield [1, 2, 3]

    graph = af.Graph()
    with graph.as_default():
        ds = af.data.Dataset.from_async_generator(agen, af.TensorSpec([2], af.int64))
        nxt = af.data.make_one_shot_iterator(ds).get_next()
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"shape \(3,\) where an "
                                                              r"element of shape \(2,\)"):
            await sess.run(nxt)


async def test_from_generator_runs_per_iteration():
    made = []

    def gen(n):
        made.append(int(n))
        yield from range(int(n))

    graph = af.Graph()
    with graph.as_default():
        ds = af.data.Dataset.from_generator(gen, af.int64, [], args=(3,)).repeat(2)
        nxt = af.data.make_one_shot_iterator(ds).get_next()
    async with af.Session(graph=graph) as sess:
        got = [int(await sess.run(nxt)) for _ in range(6)]
        with pytest.raises(errors.OutOfRangeError):
            await sess.run(nxt)
    assert got == [0, 1, 2, 0, 1, 2]
    assert made == [3, 3]


async def test_uninitialized_iterator_is_failed_precondition():
    graph = af.Graph()
    with graph.as_default():
        it = af.data.make_initializable_iterator(af.data.Dataset.range(3))
        nxt = it.get_next()
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.FailedPreconditionError, match="has not been initialized"):
            await sess.run(nxt)


@pytest.mark.parametrize("make", [
    lambda: af.data.Dataset.range(20).shuffle(7, seed=5).batch(3),
    lambda: af.data.Dataset.from_tensor_slices((["a", "b", "c", "d", "e"], [1, 2, 3, 4, 5]))
    .repeat(2).prefetch(2),
    lambda: af.data.TFRecordDataset(["tests/data/data_files/records.tfrecord"] * 2),
], ids=["shuffle-batch", "strings-repeat-prefetch", "tfrecord"])
async def test_iterator_saved_in_a_checkpoint_resumes_at_the_next_element(tmp_path, make,
                                                                          monkeypatch):
    monkeypatch.chdir(Path(__file__).parent.parent)
    graph = af.Graph()
    with graph.as_default():
        it = af.data.make_initializable_iterator(make())
        nxt = it.get_next()
        af.add_to_collection(af.GraphKeys.SAVEABLE_OBJECTS,
                             af.data.experimental.make_saveable_from_iterator(it))
        counter = af.Variable(0, name="counter")
        saver = af.train.Saver()
    prefix = str(tmp_path / "ckpt")
    async with af.Session(graph=graph) as sess:
        await sess.run([it.initializer, counter.initializer])
        for _ in range(3):
            await sess.run(nxt)
        await saver.save(sess, prefix)
        rest = await _drain(sess, nxt)
    async with af.Session(graph=graph) as sess:   # a new session: restored from disk
        await sess.run(it.initializer)
        await saver.restore(sess, prefix)
        again = await _drain(sess, nxt)
    assert len(again) == len(rest) > 0
    for a, b in zip(again, rest, strict=True):
        assert repr(a) == repr(b)


async def _drain(sess, nxt) -> list:
    out = []
    while True:
        try:
            out.append(await sess.run(nxt))
        except errors.OutOfRangeError:
            return out


async def test_saving_waits_for_a_prefetch_in_the_middle_of_an_element():
    """The prefetch task is awaiting a map function when the state is serialized: the
    save waits for that element, so the restored iterator misses and repeats nothing."""
    gate = asyncio.Event()
    blocked = asyncio.Event()

    async def slow(x):
        if int(x) >= 2:
            blocked.set()
            await gate.wait()
        return x * 10

    def make():
        return af.data.Dataset.range(6).map(
            lambda x: af.async_py_func(slow, [x], af.int64)).prefetch(2)

    graph, it, nxt, state, fed, restore = _serializing_graph(make)
    async with af.Session(graph=graph) as sess:
        await sess.run(it.initializer)
        assert int(await sess.run(nxt)) == 0
        await _wait(blocked)                       # the producer waits inside element 2
        saving = asyncio.ensure_future(sess.run(state))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not saving.done()                   # the save waits for that element
        gate.set()
        saved = await saving
        rest = [int(v) for v in await _drain(sess, nxt)]
        await sess.run(it.initializer)
        await sess.run(restore, {fed: saved})
        again = [int(v) for v in await _drain(sess, nxt)]
    assert rest == [10, 20, 30, 40, 50]
    assert again == rest


async def test_file_cache_is_written_once_then_read(tmp_path):
    """cache(filename): the first complete pass writes the file; later iterators, in this
    session or another, read it (the source is not run again); a pass cut short leaves
    no cache."""
    made = []

    def gen():
        made.append(1)
        yield from range(5)

    cache = str(tmp_path / "c")
    graph = af.Graph()
    with graph.as_default():
        ds = af.data.Dataset.from_generator(gen, af.int64, []).map(lambda x: x * 3)
        it = af.data.make_initializable_iterator(ds.cache(cache))
        nxt = it.get_next()
    async with af.Session(graph=graph) as sess:
        await sess.run(it.initializer)
        assert int(await sess.run(nxt)) == 0          # a pass cut short: no cache
        await sess.run(it.initializer)
        first = [int(v) for v in await _drain(sess, nxt)]
        await sess.run(it.initializer)
        second = [int(v) for v in await _drain(sess, nxt)]
    async with af.Session(graph=graph) as sess:
        await sess.run(it.initializer)
        third = [int(v) for v in await _drain(sess, nxt)]
    assert first == second == third == [0, 3, 6, 9, 12]
    assert len(made) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.aioflow-cache"]


async def test_a_full_prefetch_buffer_holds_no_task():
    """The producer ends when the buffer is full and starts again when there is room:
    an iterator nobody reads (its session closed) leaves no task behind."""
    graph = af.Graph()
    with graph.as_default():
        nxt = af.data.make_one_shot_iterator(
            af.data.Dataset.range(100).map(lambda x: x + 1).prefetch(3)).get_next()
    async with af.Session(graph=graph) as sess:
        assert [int(await sess.run(nxt)) for _ in range(4)] == [1, 2, 3, 4]
        for _ in range(20):
            await asyncio.sleep(0)
        producers = [t for t in asyncio.all_tasks() if "_produce" in repr(t)]
        assert producers == []
        assert int(await sess.run(nxt)) == 5


async def test_file_reads_run_on_the_pool(monkeypatch):
    """TFRecordDataset opens and reads its files on the pool, never on the loop's thread."""
    import threading

    from aioflow.lib import record_io

    threads = []
    read_many = record_io.RecordReader.read_many

    def recording(self, *args, **kwargs):
        threads.append(threading.current_thread())
        return read_many(self, *args, **kwargs)

    monkeypatch.setattr(record_io.RecordReader, "read_many", recording)
    root = Path(__file__).parent / "data" / "data_files"
    graph = af.Graph()
    with graph.as_default():
        nxt = af.data.make_one_shot_iterator(af.data.TFRecordDataset(
            [str(root / "records.tfrecord"), str(root / "records.gz")],
            compression_type=None).take(7)).get_next()
    async with af.Session(graph=graph) as sess:
        got = [await sess.run(nxt) for _ in range(7)]
    assert len(got) == 7 and threads
    assert threading.main_thread() not in threads


async def test_raw_iterator_ops():
    """AnonymousIteratorV2 + MakeIterator, IteratorGetNextSync, DeleteIterator."""
    graph = af.Graph()
    with graph.as_default():
        ds = af.data.Dataset.range(3)
        handle, deleter = apply_op("AnonymousIteratorV2", output_types=[af.int64],
                                   output_shapes=[[]])
        make = apply_op("MakeIterator", dataset=ds._variant_tensor, iterator=handle)
        with af.control_dependencies([make]):
            first = apply_op("IteratorGetNextSync", iterator=handle,
                             output_types=[af.int64], output_shapes=[[]])
        with af.control_dependencies(first):
            second = apply_op("IteratorGetNext", iterator=handle, output_types=[af.int64],
                              output_shapes=[[]])
        with af.control_dependencies(second):
            delete = apply_op("DeleteIterator", handle=handle, deleter=deleter)
    async with af.Session(graph=graph) as sess:
        a, b, _ = await sess.run([first[0], second[0], delete])
    assert (int(a), int(b)) == (0, 1)
