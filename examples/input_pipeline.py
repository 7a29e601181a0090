"""A TF 1 input pipeline, unchanged but awaited: file names found by a glob, shuffled per
epoch by string_input_producer, read by a ReadFile on the thread pool, mixed by
shuffle_batch. The queue runners are asyncio tasks; two consumers take batches at once.

    python examples/input_pipeline.py
"""

from __future__ import annotations

import asyncio
import collections
import tempfile
from pathlib import Path

import aioflow as af


def build(pattern: str):
    """The graph TF 1 code would build (tf.train.* -> af.train.*)."""
    files = af.train.match_filenames_once(pattern)
    names = af.train.string_input_producer(files, num_epochs=2, seed=7)
    name = names.dequeue()
    value = af.strings.to_number(af.io.read_file(name), out_type=af.int32)
    return af.train.shuffle_batch([name, value], batch_size=4, capacity=16,
                                  min_after_dequeue=4, num_threads=2, seed=7,
                                  allow_smaller_final_batch=True)


async def consume(sess, batch, who: str, seen: collections.Counter) -> int:
    """Take batches until the pipeline runs out (OutOfRangeError)."""
    taken = 0
    while True:
        try:
            names, values = await sess.run(batch)
        except af.errors.OutOfRangeError:
            return taken
        seen.update(Path(n.decode()).name for n in names)
        print(f"{who}: {values.tolist()}")
        taken += 1


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        for k in range(10):
            Path(root, f"record-{k}.txt").write_text(str(k * k))
        graph = af.Graph()
        with graph.as_default():
            batch = build(f"{root}/record-*.txt")
            init = af.local_variables_initializer()
        seen: collections.Counter = collections.Counter()
        async with af.Session(graph=graph) as sess:
            await sess.run(init)
            coord = af.train.Coordinator()
            tasks = af.train.start_queue_runners(sess, coord)
            counts = await asyncio.gather(consume(sess, batch, "A", seen),
                                          consume(sess, batch, "B", seen))
            coord.request_stop()
            await coord.join(tasks)
        print(f"{sum(counts)} batches; every file read twice: "
              f"{sorted(seen.values()) == [2] * 10}")


if __name__ == "__main__":
    asyncio.run(main())
