#!/usr/bin/env python
"""Function calls and control flow v2, aioflow beside TensorFlow 2.21; prints one JSON object.

Run it with a Python that has both tensorflow-cpu and aioflow (the peers' throwaway
environment, /work/shared/peers/README.md; TF is never a dependency of aioflow):

    PYTHONPATH=. /path/to/tf-venv/bin/python benchmarks/functions.py [--quick]

The graphs are made by TF (tf.compat.v1 graph mode, control flow v2) and imported into
aioflow unchanged, so both run the same GraphDef:

- run_overhead: `y = identity(x)`, one feed and one fetch (each runtime's own overhead);
- call: `y = f(x)` where f is a tf.function of one node (x + 1): a PartitionedCall;
- while_v2: `while i < n: i, acc = i + 1, acc + i` as a StatelessWhile, n = 10,000;
- while_v1 (aioflow only): the same loop built with af.while_loop (v1 frames), and
  while_v1_v2vars: that loop carrying the variables TF's while_v2 adds (an iteration
  counter, the maximum iterations, `n`), so that an iteration does the v2 loop's work.

aioflow runs each graph two ways: "called" (the session keeps calls and functional ops:
executor_type SINGLE_THREADED_EXECUTOR, function inlining off; each call is a sub-step)
and "lowered" (the default: LowerFunctionalOpsPass inlines the call and lowers the While
to v1 control flow). TF runs its default session (it lowers and inlines too). Per
iteration figures subtract the run overhead. Peers alternate in rounds (ABAB); the
figures are medians over rounds of medians within a round. The machine is shared:
compare ratios taken in one run, not absolute times across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def import_aioflow():
    """aioflow (its kernel library included) from the first checkout on PYTHONPATH."""
    import aioflow

    return aioflow


def tf_graphs(tf, iterations: int) -> dict:
    """The workloads as TF graphs: name -> (graph, feed name, fetch names, feed value)."""
    v1 = tf.compat.v1
    v1.enable_control_flow_v2()
    out = {}
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [], name="x")
        tf.identity(x, name="y")
    out["run_overhead"] = (g, "x:0", ["y:0"], 1.0)
    g = tf.Graph()
    with g.as_default():
        @tf.function(autograph=False)
        def plus_one(v):
            return v + 1.0

        x = v1.placeholder(tf.float32, [], name="x")
        tf.identity(plus_one(x), name="y")
    out["call"] = (g, "x:0", ["y:0"], 1.0)
    g = tf.Graph()
    with g.as_default():
        n = v1.placeholder(tf.int32, [], name="n")
        i, acc = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a + i),
                               [tf.constant(0), tf.constant(0)], parallel_iterations=1)
        tf.identity(i, name="i_out")
        tf.identity(acc, name="acc_out")
    out["while_v2"] = (g, "n:0", ["i_out:0", "acc_out:0"], iterations)
    return out


def af_v1_while(af, same_vars: bool):
    """The loop built with af.while_loop (v1 frames); `same_vars`: with the loop
    variables TF's while_v2 carries (an iteration counter, the maximum iterations, and
    `n` passed through), so that an iteration does the same work as the v2 loop's."""
    g = af.Graph()
    with g.as_default():
        n = af.placeholder(af.int32, [], name="n")
        if same_vars:
            _, _, i, acc, _ = af.while_loop(
                lambda c, m, i, a, k: i < k, lambda c, m, i, a, k: (c + 1, m, i + 1, a + i, k),
                [af.constant(0), af.constant(-1), af.constant(0), af.constant(0), n],
                parallel_iterations=1)
        else:
            i, acc = af.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a + i),
                                   [af.constant(0), af.constant(0)], parallel_iterations=1)
        af.identity(i, name="i_out")
        af.identity(acc, name="acc_out")
    return g


def called_config():
    import aioflow as af

    config = af.ConfigProto()
    config.experimental.executor_type = "SINGLE_THREADED_EXECUTOR"
    config.graph_options.optimizer_options.do_function_inlining = False
    config.graph_options.rewrite_options.function_optimization = \
        config.graph_options.rewrite_options.OFF
    return config


def median_of(fn, reps: int) -> float:
    samples = []
    gc.disable()
    try:
        for _ in range(reps):
            start = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - start) * 1e6)
    finally:
        gc.enable()
    return statistics.median(samples)


async def amedian_of(fn, reps: int) -> float:
    samples = []
    gc.disable()
    try:
        for _ in range(reps):
            start = time.perf_counter()
            await fn()
            samples.append((time.perf_counter() - start) * 1e6)
    finally:
        gc.enable()
    return statistics.median(samples)


class AfRunner:
    """An open aioflow session on one graph, warm, on `loop`."""

    def __init__(self, loop, graph, feed: str, fetches: list, value, config=None):
        import aioflow as af

        self.loop = loop
        self.feed, self.fetches, self.value = feed, fetches, value
        self.sess = af.Session(graph=graph, config=config)
        self.result = loop.run_until_complete(self.run())
        for _ in range(3):
            loop.run_until_complete(self.run())

    def run(self):
        return self.sess.run(self.fetches, {self.feed: self.value})

    def time(self, reps: int) -> float:
        return self.loop.run_until_complete(amedian_of(self.run, reps))

    def close(self):
        self.loop.run_until_complete(self.sess.close())


class TfRunner:
    def __init__(self, tf, graph, feed: str, fetches: list, value):
        self.sess = tf.compat.v1.Session(graph=graph)
        self.run_args = (fetches, {feed: value})
        self.result = self.sess.run(*self.run_args)
        for _ in range(3):
            self.sess.run(*self.run_args)

    def time(self, reps: int) -> float:
        return median_of(lambda: self.sess.run(*self.run_args), reps)

    def close(self):
        self.sess.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    iterations = 2000 if args.quick else 10000
    rounds = args.rounds or (3 if args.quick else 5)
    small_reps, loop_reps = (100, 3) if args.quick else (400, 5)
    import numpy as np
    import tensorflow as tf

    af = import_aioflow()

    loop = asyncio.new_event_loop()
    graphs = tf_graphs(tf, iterations)
    runners: dict[str, object] = {}
    for name, (tf_graph, feed, fetches, value) in graphs.items():
        value = np.asarray(value, np.float32 if name != "while_v2" else np.int32)
        runners[f"tf/{name}"] = TfRunner(tf, tf_graph, feed, fetches, value)
        g = af.Graph()
        with g.as_default():
            af.import_graph_def(tf_graph.as_graph_def().SerializeToString(), name="")
        runners[f"aioflow/{name}/lowered"] = AfRunner(loop, g, feed, fetches, value)
        if name != "run_overhead":
            runners[f"aioflow/{name}/called"] = AfRunner(loop, g, feed, fetches, value,
                                                         called_config())
    for key, same in (("aioflow/while_v1", False), ("aioflow/while_v1_v2vars", True)):
        runners[key] = AfRunner(loop, af_v1_while(af, same), "n:0", ["i_out:0", "acc_out:0"],
                                np.int32(iterations))
    want = iterations * (iterations - 1) // 2
    for key, runner in runners.items():
        if "while" in key:
            assert int(runner.result[0]) == iterations and int(runner.result[1]) == want, key
        elif "call" in key:
            assert float(runner.result[0]) == 2.0, (key, runner.result)
    samples: dict[str, list[float]] = {key: [] for key in runners}
    for _ in range(rounds):  # ABAB: every runner once per round, TF and aioflow alternating
        for key in sorted(runners, key=lambda k: (k.split("/")[1], k)):
            reps = loop_reps if "while" in key else small_reps
            samples[key].append(runners[key].time(reps))
    for runner in runners.values():
        runner.close()
    loop.close()
    us = {key: statistics.median(values) for key, values in samples.items()}

    def per_iter(key: str, base: str) -> float:
        return (us[key] - us[base]) / iterations

    af_base, tf_base = "aioflow/run_overhead/lowered", "tf/run_overhead"
    results = {
        "iterations": iterations, "rounds": rounds,
        "run_us": {key: round(v, 2) for key, v in sorted(us.items())},
        "call": {
            "aioflow_run_overhead_us": round(us[af_base], 2),
            "aioflow_called_us": round(us["aioflow/call/called"], 2),
            "aioflow_inlined_us": round(us["aioflow/call/lowered"], 2),
            "tf_us": round(us["tf/call"], 2),
            "tf_run_overhead_us": round(us[tf_base], 2),
            "called_over_run_overhead": round(us["aioflow/call/called"] / us[af_base], 3),
            "inlined_over_run_overhead": round(us["aioflow/call/lowered"] / us[af_base], 3),
            "called_over_tf": round(us["aioflow/call/called"] / us["tf/call"], 3),
        },
        "while_per_iteration_us": {
            "aioflow_v1": round(per_iter("aioflow/while_v1", af_base), 3),
            "aioflow_v1_v2vars": round(per_iter("aioflow/while_v1_v2vars", af_base), 3),
            "aioflow_v2_called": round(per_iter("aioflow/while_v2/called", af_base), 3),
            "aioflow_v2_lowered": round(per_iter("aioflow/while_v2/lowered", af_base), 3),
            "tf_v2": round(per_iter("tf/while_v2", tf_base), 3),
        },
    }
    w = results["while_per_iteration_us"]
    w["called_over_v1"] = round(w["aioflow_v2_called"] / w["aioflow_v1"], 3)
    w["lowered_over_v1"] = round(w["aioflow_v2_lowered"] / w["aioflow_v1"], 3)
    w["called_over_v1_v2vars"] = round(w["aioflow_v2_called"] / w["aioflow_v1_v2vars"], 3)
    w["lowered_over_v1_v2vars"] = round(w["aioflow_v2_lowered"] / w["aioflow_v1_v2vars"], 3)
    w["called_over_tf"] = round(w["aioflow_v2_called"] / w["tf_v2"], 3)
    w["lowered_over_tf"] = round(w["aioflow_v2_lowered"] / w["tf_v2"], 3)
    print(json.dumps({"benchmark": "functions", "python": platform.python_version(),
                      "tensorflow": tf.__version__, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
