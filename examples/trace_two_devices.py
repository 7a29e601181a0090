"""Place part of a graph on a second CPU device, trace one run, and write a Chrome trace
(open it in chrome://tracing or https://ui.perfetto.dev): to the path given
(`python trace_two_devices.py out/trace.json`), else into a new temporary directory,
never into the working directory unasked."""

import asyncio
import os
import sys
import tempfile

import numpy as np

import aioflow as af


def build():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [512, 512], name="x")
        with af.device("/cpu:1"):  # the second device: its own partition and thread pool
            h = af.nn.relu(af.matmul(x, x, name="mm1"), name="h")
        y = af.reduce_mean(af.matmul(h, x, name="mm2"), name="y")
    return g, x, y


async def main(path=None):
    if path is None:
        path = os.path.join(tempfile.mkdtemp(prefix="aioflow-trace-"), "trace.json")
    g, x, y = build()
    config = af.ConfigProto(device_count={"CPU": 2})
    async with af.Session(graph=g, config=config) as sess:
        md = af.RunMetadata()
        value = await sess.run(
            y, {x: np.random.default_rng(0).standard_normal((512, 512), np.float32)},
            options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE,
                                  output_partition_graphs=True),
            run_metadata=md)
    print(f"y = {value:.4f}")
    for graph_def in md.partition_graphs:
        ops = sorted({n.op for n in graph_def.node})
        print(f"partition {graph_def.node[0].device}: {len(graph_def.node)} nodes, ops {ops}")
    for dev in md.step_stats.dev_stats:
        slowest = max(dev.node_stats, key=lambda ns: ns.all_end_rel_micros)
        print(f"{dev.device}: {len(dev.node_stats)} kernels timed, slowest "
              f"{slowest.timeline_label!r} ({slowest.all_end_rel_micros} us)")
    with open(path, "w") as f:
        f.write(af.Timeline(md.step_stats).generate_chrome_trace_format())
    print(f"wrote {path}")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
