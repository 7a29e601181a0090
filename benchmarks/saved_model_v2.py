#!/usr/bin/env python
"""TF 2 SavedModel serving latency: aioflow's `af.saved_model.load` signature against
TensorFlow 2.21's `tf.saved_model.load` signature, side by side.

Workloads (the Keras exports of tests/data/saved_model_v2, made by
tests/data/make_saved_model_v2_fixtures.py; one call at a time after warm-up, NumPy
inputs on both sides):
  lstm_b1   serving_default of the LSTM(8) model on one sequence [1, 6, 3] (While v2)
  lstm_b4   the same on the fixture's batch [4, 6, 3]
  gru_b1    serving_default of the GRU(8, return_sequences) + Dense model on [1, 5, 3]
  mlp_b5    serving_default of the MLP (Dense, Dense) on [5, 4]: the per-call overhead
aioflow runs twice per round: with its default session config (functional ops lowered and
calls inlined by LowerFunctionalOpsPass, as TF's graph runtime does) and `called` (no
lowering or inlining: every call, If and While runs its function as a sub-step).
Each peer runs in its own subprocess; the peers alternate (ABAB), `--reps` rounds, and
each measurement is the median of `--runs` timed calls in µs. TensorFlow runs with
`--tf-python`, a Python that has tensorflow-cpu (TensorFlow is never a dependency).

Prints one JSON object: per workload and peer the median µs per call, and aioflow / TF
(the target for lstm: at most 2).
Usage: python benchmarks/saved_model_v2.py --tf-python /path/to/tf-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                    "saved_model_v2")
WORKLOADS = {"lstm_b1": ("lstm", 1), "lstm_b4": ("lstm", 4), "gru_b1": ("gru", 1),
             "mlp_b5": ("mlp", 5)}


def _inputs(workload: str) -> tuple[str, dict]:
    """The model directory and the inputs by key of `workload`."""
    model, batch = WORKLOADS[workload]
    with np.load(os.path.join(DATA, f"{model}.npz")) as z:
        inputs = {k[len("input:"):]: z[k][:batch] for k in z.files if k.startswith("input:")}
    return os.path.join(DATA, model), inputs


def child_tf(workload: str, runs: int) -> list[float]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    export_dir, inputs = _inputs(workload)
    sig = tf.saved_model.load(export_dir).signatures["serving_default"]
    for _ in range(200):
        sig(**inputs)
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        sig(**inputs)
        out.append((time.perf_counter() - start) * 1e6)
    return out


def _called_config():
    """A ConfigProto under which LowerFunctionalOpsPass neither lowers nor inlines."""
    from aioflow.proto import config_pb2, rewriter_config_pb2

    config = config_pb2.ConfigProto()
    config.experimental.executor_type = "SINGLE_THREADED_EXECUTOR"
    config.graph_options.rewrite_options.function_optimization = \
        rewriter_config_pb2.RewriterConfig.OFF
    return config


def child_aioflow(workload: str, runs: int, called: bool = False) -> list[float]:
    import asyncio

    import aioflow as af

    async def main() -> list[float]:
        export_dir, inputs = _inputs(workload)
        config = _called_config() if called else None
        async with await af.saved_model.load(export_dir, config=config) as model:
            sig = model.signatures["serving_default"]
            for _ in range(200):
                await sig(**inputs)
            out = []
            for _ in range(runs):
                start = time.perf_counter()
                await sig(**inputs)
                out.append((time.perf_counter() - start) * 1e6)
        return out

    return asyncio.run(main())


def measure(python: str, peer: str, workload: str, runs: int) -> float:
    """The median µs per call of one subprocess measuring `workload` on `peer`."""
    out = subprocess.run([python, __file__, "--child", peer, "--workload", workload,
                          "--runs", str(runs)], capture_output=True, text=True, check=True,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return statistics.median(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tf-python", default=None)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--workload", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.child == "tf":
            print(json.dumps(child_tf(args.workload, args.runs)))
        else:
            print(json.dumps(child_aioflow(args.workload, args.runs,
                                           called=args.child == "aioflow_called")))
        return
    results = {}
    for workload in args.workloads.split(","):
        times: dict[str, list[float]] = {"aioflow": [], "aioflow_called": [], "tf": []}
        for _ in range(args.reps):
            for peer in ("aioflow", "aioflow_called"):
                times[peer].append(measure(sys.executable, peer, workload, args.runs))
            if args.tf_python:
                times["tf"].append(measure(args.tf_python, "tf", workload, args.runs))
        entry = {peer: round(statistics.median(t), 2) for peer, t in times.items() if t}
        if "tf" in entry:
            entry["aioflow_over_tf"] = round(entry["aioflow"] / entry["tf"], 3)
            entry["called_over_tf"] = round(entry["aioflow_called"] / entry["tf"], 3)
        results[workload] = entry
    print(json.dumps({"unit": "us per call (median)", "results": results}, indent=2))


if __name__ == "__main__":
    main()
