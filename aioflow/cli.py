"""The `aioflow` command: run a GraphDef file, or a built-in concurrent demo."""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import sys
import time

import numpy as np


def _parse_feed(text: str):
    """`name=path.npy` or `name=<Python literal>` -> (name, value)."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--feed takes NAME=VALUE, got {text!r}")
    name, value = text.split("=", 1)
    if value.endswith(".npy") or os.path.isfile(value):
        return name, np.load(value, allow_pickle=False)
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value.encode()


def _load_graph_def(path: str):
    from aioflow.framework.importer import parse_graph_def

    with open(path, "rb") as f:
        data = f.read()
    if path.endswith((".pbtxt", ".txt")):
        from google.protobuf import text_format

        from aioflow.proto import graph_pb2

        return text_format.Parse(data.decode(), graph_pb2.GraphDef())
    return parse_graph_def(data)


async def _run_graph(args) -> int:
    import aioflow as af

    graph_def = _load_graph_def(args.model)
    graph = af.Graph()
    with graph.as_default():
        af.import_graph_def(graph_def, name="")
    feeds = dict(args.feed or [])
    fetches = args.fetch or []
    if not fetches:
        print("error: give at least one --fetch NAME", file=sys.stderr)
        return 2
    async with af.Session(graph=graph) as sess:
        start = time.perf_counter()
        values = await sess.run(fetches, feed_dict=feeds)
        elapsed = time.perf_counter() - start
    if args.output:
        np.savez(args.output, **{name: np.asarray(v) for name, v in zip(fetches, values,
                                                                        strict=True)})
        print(f"wrote {len(fetches)} fetches to {args.output} ({elapsed * 1e3:.2f} ms)")
    else:
        for name, value in zip(fetches, values, strict=True):
            print(f"{name} = {np.array2string(np.asarray(value), threshold=20)}")
        print(f"# ran in {elapsed * 1e3:.2f} ms")
    return 0


async def _demo(runs: int) -> int:
    import aioflow as af

    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32, shape=[None, 4], name="x")
        w = af.constant(np.linspace(-1.0, 1.0, 16, dtype=np.float32).reshape(4, 4), name="w")
        hidden = af.nn.relu(af.matmul(x, w), name="hidden")

        async def lookup(values):
            await asyncio.sleep(0.05)  # stands for an awaited service call mid-graph
            return values * 2.0

        scaled = af.async_py_func(lookup, [hidden], af.float32, name="lookup")
        total = af.reduce_sum(scaled, axis=1, name="total")
    print("aioflow demo: x[?,4] -> matmul -> relu -> async_py_func (awaits 50 ms) -> "
          "reduce_sum")
    async with af.Session(graph=graph) as sess:
        inputs = [np.full((2, 4), i, dtype=np.float32) for i in range(runs)]
        start = time.perf_counter()
        await sess.run(total, {x: inputs[0]})  # the first run builds the executor
        print(f"first run (prunes the graph, builds its executor): "
              f"{(time.perf_counter() - start) * 1e3:.1f} ms")
        start = time.perf_counter()
        results = await asyncio.gather(*(sess.run(total, {x: v}) for v in inputs))
        elapsed = time.perf_counter() - start
        for i, r in enumerate(results):
            print(f"  run {i}: total = {r}")
        print(f"{runs} concurrent runs, each awaiting 50 ms mid-graph, took {elapsed * 1e3:.1f} "
              f"ms on one event loop (sequentially they would take >= {runs * 50} ms)")
    return 0


def main(argv: list[str] | None = None) -> int:
    import aioflow

    parser = argparse.ArgumentParser(prog="aioflow", description=__doc__)
    parser.add_argument("--version", action="version", version=f"aioflow {aioflow.__version__}")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run a GraphDef (.pb or .pbtxt) and print or save fetches")
    run.add_argument("model")
    run.add_argument("--feed", action="append", type=_parse_feed,
                     help="NAME=FILE.npy or NAME=LITERAL (repeatable)")
    run.add_argument("--fetch", action="append", help="tensor or op name (repeatable)")
    run.add_argument("--output", help="save the fetched values to this .npz")
    demo = sub.add_parser("demo", help="run a built-in graph several times concurrently")
    demo.add_argument("--runs", type=int, default=8)
    args = parser.parse_args(argv)
    if args.command == "run":
        from aioflow.framework import errors

        try:
            return asyncio.run(_run_graph(args))
        except (errors.OpError, ValueError, TypeError, OSError) as e:
            print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
    if args.command == "demo":
        return asyncio.run(_demo(args.runs))
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
