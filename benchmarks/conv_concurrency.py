#!/usr/bin/env python
"""Many runs of one conv net in flight in one process, against TensorFlow 2.21: MobileNetV2
(1.0, 224) batch 1 by default, at 1, 8 and 32 runs in flight; prints one JSON object.

aioflow: one af.Session on one event loop, `n` tasks each awaiting `sess.run` in a loop
for --duration seconds (so `n` runs are always in flight). TF: one
tf.compat.v1.Session with its defaults (grappler, oneDNN, every core) in a worker
process, `n` Python threads each calling `sess.run` in a loop (how TF is served from a
thread pool). Both run the same frozen GraphDef (benchmarks/models.py freezes it into
--models-dir). The sides take turns, A B A B (--rounds, after one unmeasured turn each
at that many in flight); the best round's throughput (images/s), its median latency and
the CPU time per image (the process's, all threads: the steadiest figure on a shared
machine; with the kernel's share of it and the minor page faults per image) are
reported, and aioflow / TF ratios.

aioflow's thread policy is the session's (docs/onednn.md): each oneDNN primitive runs on
an OpenMP team of intra_op_parallelism_threads threads (0: the cores), and the device's
BLAS gate admits cores / team size such kernels at once, so teams x kernels in flight
never exceed the cores. `--intra-op` lists the settings measured (0 and 1 by default).
`--backend numpy` runs the NumPy kernels (AIOFLOW_ONEDNN=0).

Usage: python benchmarks/conv_concurrency.py [--in-flight 1,8,32] [--duration 3]
           [--rounds 2] [--intra-op 0,1] [--model mobilenetv2] [--batch 1]
           [--tf-python PY] [--models-dir DIR] [--backend onednn|numpy]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import models  # noqa: E402  (benchmarks/models.py: freezing, the shared input)


def _tf_worker(path: str) -> None:
    """Lines 'load <n> <batch> <seconds>' answer {images_per_s, p50_ms} of n threads."""
    import tensorflow as tf

    with open(path + ".json") as f:
        meta = json.load(f)
    graph_def = tf.compat.v1.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    sess = tf.compat.v1.Session(graph=graph)
    x = graph.get_tensor_by_name(meta["input"])
    y = graph.get_tensor_by_name(meta["output"])
    sess.run(y, {x: models._input(1)})
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        _, n, batch, seconds = line.split()
        n, batch, seconds = int(n), int(batch), float(seconds)
        feed = {x: models._input(batch)}
        for _ in range(2):
            sess.run(y, feed)
        latencies: list = []
        lock = threading.Lock()
        stop = time.perf_counter() + seconds

        def client(feed=feed, stop=stop, latencies=latencies, lock=lock):
            mine = []
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                sess.run(y, feed)
                mine.append(time.perf_counter() - t0)
            with lock:
                latencies.extend(mine)

        start, cpu, sys_faults = time.perf_counter(), _cpu(), _sys_faults()
        threads = [threading.Thread(target=client) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed, cpu = time.perf_counter() - start, _cpu() - cpu
        print(json.dumps(_result(latencies, batch, elapsed, cpu, _since(sys_faults))),
              flush=True)


def _cpu() -> float:
    """This process's CPU seconds (user + system, every thread)."""
    t = os.times()
    return t.user + t.system


def _sys_faults() -> tuple:
    """This process's system CPU seconds and minor page faults so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_stime, r.ru_minflt


def _since(before: tuple) -> tuple:
    now = _sys_faults()
    return now[0] - before[0], now[1] - before[1]


def _result(latencies: list, batch: int, elapsed: float, cpu: float,
            sys_faults: tuple = (0.0, 0)) -> dict:
    images = max(1, len(latencies) * batch)
    return {"images_per_s": len(latencies) * batch / elapsed,
            "p50_ms": statistics.median(latencies) * 1e3,
            # CPU time per image: the steadiest figure on a shared machine, where a side
            # running more threads also takes a larger share of the cores from others
            "cpu_ms_per_image": cpu / images * 1e3,
            # of which in the kernel, and the page faults behind much of it (a buffer
            # the allocator handed back to the OS is faulted in again on its next use)
            "sys_ms_per_image": sys_faults[0] / images * 1e3,
            "page_faults_per_image": sys_faults[1] / images}


class AioflowSide:
    def __init__(self, path: str, intra_op: int):
        self.peer = models.AioflowPeer(path, intra_op=intra_op)

    def load(self, n: int, batch: int, seconds: float) -> dict:
        peer = self.peer
        feed = {peer.x: models._input(batch)}

        async def client(stop, latencies):
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                await peer.sess.run(peer.y, feed)
                latencies.append(time.perf_counter() - t0)

        async def main():
            import asyncio

            from aioflow.client.kernel_compiles import wait_for_started_compiles

            for _ in range(2):
                await peer.sess.run(peer.y, feed)
            # numba compiles some kernels' loops in the background on first use (the
            # fused MatMul's epilogue: ~1 s of a core): not inside the measured window
            wait_for_started_compiles(300)
            latencies: list = []
            start, cpu, sys_faults = time.perf_counter(), _cpu(), _sys_faults()
            await asyncio.gather(*[client(start + seconds, latencies) for _ in range(n)])
            return latencies, time.perf_counter() - start, _cpu() - cpu, _since(sys_faults)

        latencies, elapsed, cpu, sys_faults = peer.loop.run_until_complete(main())
        return _result(latencies, batch, elapsed, cpu, sys_faults)

    def close(self):
        self.peer.close()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--role", default="bench", choices=["bench", "tf"])
    p.add_argument("--path")
    p.add_argument("--model", default="mobilenetv2")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--in-flight", default="1,8,32")
    p.add_argument("--intra-op", default="0,1")
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--settle", type=float, default=0.3)
    p.add_argument("--models-dir", default=models.DEFAULT_DIR)
    p.add_argument("--tf-python", default=models.TF_PYTHON)
    p.add_argument("--backend", choices=("onednn", "numpy"), default="onednn")
    args = p.parse_args()
    if args.role == "tf":
        _tf_worker(args.path)
        return
    if args.backend == "numpy":
        os.environ["AIOFLOW_ONEDNN"] = "0"
    from aioflow.kernels.onednn import backend

    path = models._ensure_frozen(args.model, args.models_dir, args.tf_python)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("AIOFLOW_ONEDNN", None)
    tf = subprocess.Popen([args.tf_python, os.path.abspath(__file__), "--role", "tf",
                           "--path", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True, env=env)
    json.loads(tf.stdout.readline())
    out = {"benchmark": "conv_concurrency", "model": args.model, "batch": args.batch,
           "backend": "onednn" if backend.AVAILABLE else "numpy",
           "cores": len(os.sched_getaffinity(0)), "load_before": os.getloadavg()[0],
           "results": []}
    sides = {}
    for intra in [int(v) for v in args.intra_op.split(",")]:
        sides[intra] = AioflowSide(path, intra)
    for n in [int(v) for v in args.in_flight.split(",")]:
        row = {"in_flight": n, "tf": [], **{f"aioflow_intra{i}": [] for i in sides}}
        # An unmeasured turn each at this many in flight first: the first time a side
        # holds n runs' tensors at once its heap grows (hundreds of page faults an image
        # on either side), which is no steady state.
        for side in sides.values():
            side.load(n, args.batch, min(1.0, args.duration))
        tf.stdin.write(f"load {n} {args.batch} {min(1.0, args.duration)}\n")
        tf.stdin.flush()
        tf.stdout.readline()
        for _ in range(args.rounds):  # A B A B
            for intra, side in sides.items():
                row[f"aioflow_intra{intra}"].append(side.load(n, args.batch, args.duration))
                time.sleep(args.settle)
            tf.stdin.write(f"load {n} {args.batch} {args.duration}\n")
            tf.stdin.flush()
            row["tf"].append(json.loads(tf.stdout.readline()))
            time.sleep(args.settle)
        best = {k: max(v, key=lambda r: r["images_per_s"]) for k, v in row.items()
                if k != "in_flight"}
        result = {"in_flight": n}
        for k, r in best.items():
            result[k] = {key: round(v, 2) for key, v in r.items()}
            if k != "tf":
                result[k]["throughput_vs_tf"] = round(
                    r["images_per_s"] / best["tf"]["images_per_s"], 2)
                result[k]["cpu_per_image_vs_tf"] = round(
                    r["cpu_ms_per_image"] / best["tf"]["cpu_ms_per_image"], 2)
        out["results"].append(result)
        print(json.dumps(result), file=sys.stderr, flush=True)
    for side in sides.values():
        side.close()
    tf.stdin.close()
    tf.wait()
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
