#!/usr/bin/env python
"""Whole models against TensorFlow 2.21: MobileNetV2 (alpha 1.0, 224x224), ResNet50,
EfficientNetB0 (224x224) and InceptionV3 (299x299, its own size), latency at batch 1 and
throughput at batch 8; prints one JSON object.

Both peers run the SAME frozen GraphDef: the benchmark builds each model with tf.keras
(`weights=None`, fixed seeds: no download), freezes it (variables to Consts, batch
dimension left unknown) with TF's Python into a cache directory (`--models-dir`, default
~/.cache/aioflow-bench; never committed) and reuses it afterwards. aioflow runs it in an
`af.Session` (its graph optimizer on, so the batch-norm folding and the conv/bias/
activation fusions of aioflow/passes/remapper.py apply, as TF's grappler remapper does on
TF's side); TF runs it in a `tf.compat.v1.Session` with its defaults (grappler, oneDNN,
every core) in a worker process started with TF's Python. Each side runs the model
twice before timing; aioflow then waits for the kernel compiles its build started in the
background (numba's loops: the fused MatMul's epilogue), as its model server does before
serving (aioflow/serving/loader.py), so that the timed runs are the steady state and not
a compile thread's GIL and garbage collections; then each side runs `--warmup` more
untimed runs (default 30), until its heap has stopped growing (`warm_up`). The two
sides take turns, A B A B, a few runs each, `--settle` seconds apart (SETTLE_S), and the
medians are reported with the ratio aioflow / TF, and the CPU each side used in the
other's turns (its idle threads spinning into the other's runs: ~0).

Then each model's top ten ops by time at each batch, from traced runs of each side taking
turns (`--traces`, default 5; aioflow: RunOptions FULL_TRACE step stats; TF: its
RunMetadata step_stats), summed by op family in each run, the median over the runs; TF's
names are its fused ops (_FusedConv2D, ...), as its grappler rewrote them.

`--backend onednn` (the default where the onednn extra is installed) runs aioflow's oneDNN
kernels (aioflow/kernels/onednn/); `--backend numpy` the NumPy/numba ones (AIOFLOW_ONEDNN=0).
`--also-library PATH` (repeatable) adds an aioflow peer on another oneDNN library (a
libdnnl.so.3, e.g. another environment's `onednn` wheel: AIOFLOW_ONEDNN_LIBRARY) in a
worker process, taking its turn after TF's in every round; its figures are reported
against the same TF runs ("also": one entry per library).

Usage: python benchmarks/models.py [--models mobilenetv2,resnet50] [--rounds 5]
           [--runs 3] [--warmup 30] [--batches 1,8] [--models-dir DIR] [--tf-python PY]
           [--no-fusion]
           [--no-trace] [--traces 5] [--settle S] [--intra-op N] [--tf-threads N]
           [--backend onednn|numpy] [--also-library PATH ...]
Worker roles (used by the benchmark itself): --role freeze|tf (TF's Python), --role aioflow
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

MODELS = ("mobilenetv2", "resnet50", "efficientnetb0", "inceptionv3")
#: Input height and width of each model (224 unless listed).
SIZES = {"inceptionv3": 299}
#: TF's Python: the first of these that exists (the peers' venv, else the TF venv).
TF_PYTHON = next((p for p in ("/work/peers-venv/bin/python", "/work/tfvenv/bin/python")
                  if os.path.exists(p)), "/work/peers-venv/bin/python")
#: Seconds aioflow waits for its background kernel compiles at most (warm).
COMPILE_TIMEOUT_S = 120.0
DEFAULT_DIR = os.path.expanduser("~/.cache/aioflow-bench")
#: Seconds between the sides' turns, by aioflow backend: enough for either side's idle
#: threads to stop spinning (oneDNN's OpenMP team waits passively, the warm helper polls
#: 0.5 ms, TF's threads a few ms; OpenBLAS's spin ~0.1 s), and no longer. A longer
#: pause measures the first run after an idle machine: on the development VM (its
#: kernel's sched_vcpu_pack) the threads of a process idle for 0.1-0.3 s were packed
#: onto one vCPU for that run, InceptionV3 b1 +50% for aioflow (loop and pool thread on
#: one core), +15% for TF (docs/performance.md).
SETTLE_S = {"onednn": 0.02, "numpy": 0.3}
INPUT_SHAPE = (224, 224, 3)


def input_shape(name: str) -> tuple:
    """(height, width, 3) of model `name`'s input."""
    size = SIZES.get(name, 224)
    return (size, size, 3)


def _keras_model(tf, name: str):
    """Model `name` from tf.keras.applications with random weights (weights=None)."""
    apps = tf.keras.applications
    shape = input_shape(name)
    if name == "mobilenetv2":
        return apps.MobileNetV2(alpha=1.0, weights=None, input_shape=shape)
    if name == "resnet50":
        return apps.ResNet50(weights=None, input_shape=shape)
    if name == "efficientnetb0":
        return apps.EfficientNetB0(weights=None, input_shape=shape)
    if name == "inceptionv3":
        return apps.InceptionV3(weights=None, input_shape=shape)
    raise ValueError(f"unknown model {name!r} (one of {', '.join(MODELS)})")


# -- the TF side (run with TF's Python) ----------------------------------------------------------

def _freeze(name: str, path: str) -> None:
    """Build `name` with tf.keras (random weights, fixed seeds), freeze it to `path`, and
    write its input and output tensor names next to it (path + '.json')."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    tf.keras.utils.set_random_seed(0)
    model = _keras_model(tf, name)
    # Non-trivial batch-norm statistics, so that folding them is tested by the values.
    rng = np.random.default_rng(0)
    for layer in model.layers:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            mean, var = layer.moving_mean, layer.moving_variance
            mean.assign(rng.normal(0, 0.1, mean.shape).astype(np.float32))
            var.assign(rng.uniform(0.5, 1.5, var.shape).astype(np.float32))
    spec = tf.TensorSpec((None,) + input_shape(name), tf.float32, name="input")
    fn = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec)
    frozen = convert_variables_to_constants_v2(fn)
    graph_def = frozen.graph.as_graph_def()
    with open(path + ".tmp", "wb") as f:
        f.write(graph_def.SerializeToString())
    os.replace(path + ".tmp", path)
    meta = {"input": frozen.inputs[0].name, "output": frozen.outputs[0].name,
            "size": input_shape(name)[0]}
    with open(path + ".json", "w") as f:
        json.dump(meta, f)


def _tf_worker(path: str, threads: int = 0) -> None:
    """Serve timing requests on stdin for the frozen graph at `path`: lines
    'run <batch> <count>' answer the seconds of each run; 'trace <batch>' answers the
    step's op times by op type; 'out <batch>' the output's checksum."""
    import tensorflow as tf

    with open(path + ".json") as f:
        meta = json.load(f)
    graph_def = tf.compat.v1.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    sess = tf.compat.v1.Session(graph=graph, config=tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads))
    x = graph.get_tensor_by_name(meta["input"])
    y = graph.get_tensor_by_name(meta["output"])
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd, batch, *rest = line.split()
        feed = {x: _input(int(batch), meta.get("size", 224))}
        if cmd == "run":
            times = []
            for _ in range(int(rest[0])):
                t0, c0 = time.perf_counter(), time.process_time()
                sess.run(y, feed)
                times.append((time.perf_counter() - t0, time.process_time() - c0))
            print(json.dumps(times), flush=True)
        elif cmd == "trace":
            md = tf.compat.v1.RunMetadata()
            sess.run(y, feed, options=tf.compat.v1.RunOptions(
                trace_level=tf.compat.v1.RunOptions.FULL_TRACE), run_metadata=md)
            print(json.dumps(_op_times(md.step_stats, _tf_op_type)), flush=True)
        elif cmd == "out":
            out = sess.run(y, feed)
            print(json.dumps(np.asarray(out, np.float64).ravel().tolist()), flush=True)


def _aioflow_worker(path: str, fusion: bool, intra_op: int) -> None:
    """_tf_worker's protocol ('run', 'out') for an aioflow session (its oneDNN library
    chosen by AIOFLOW_ONEDNN_LIBRARY); the ready line names the library."""
    from aioflow.kernels.onednn import dnnl_api

    peer = AioflowPeer(path, fusion=fusion, intra_op=intra_op)
    info = dnnl_api.info() or {"error": dnnl_api.load_error()}
    print(json.dumps({"ready": True, "onednn": {k: v for k, v in info.items()}}), flush=True)
    for line in sys.stdin:
        cmd, batch, *rest = line.split()
        if cmd == "run":
            print(json.dumps(peer.times(int(batch), int(rest[0]))), flush=True)
        elif cmd == "warm":
            peer.warm(int(batch))
            print(json.dumps(True), flush=True)
        elif cmd == "out":
            out = peer.output(int(batch))
            print(json.dumps(np.asarray(out, np.float64).ravel().tolist()), flush=True)
    peer.close()


def _tf_op_type(node_stats) -> str:
    """The op type of a TF NodeExecStats: its timeline label reads 'name = Op(...)'."""
    label = node_stats.timeline_label
    if " = " in label:
        return label.split(" = ", 1)[1].split("(", 1)[0]
    return node_stats.node_name.split(":")[-1]


# -- shared --------------------------------------------------------------------------------------

def _input(batch: int, size: int = 224) -> np.ndarray:
    """The same input on both sides (batch, size, size, 3)."""
    return np.random.default_rng(batch).uniform(-1, 1, (batch, size, size, 3)).astype(
        np.float32)


def _proc_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) of process `pid` so far; 0.0 where /proc
    cannot say."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _op_times(step_stats, op_type) -> dict:
    """Milliseconds by op type (op time: all_end_rel_micros), summed over the step."""
    out: dict = {}
    for dev in step_stats.dev_stats:
        for ns in dev.node_stats:
            if ns.node_name == "_SOURCE":
                continue
            kind = op_type(ns)
            out[kind] = out.get(kind, 0.0) + ns.all_end_rel_micros / 1000.0
    return out


# -- the aioflow side ----------------------------------------------------------------------------

def _ensure_frozen(name: str, models_dir: str, tf_python: str) -> str:
    path = os.path.join(models_dir, f"{name}_{input_shape(name)[0]}.pb")
    if not (os.path.exists(path) and os.path.exists(path + ".json")):
        os.makedirs(models_dir, exist_ok=True)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        subprocess.run([tf_python, os.path.abspath(__file__), "--role", "freeze",
                        "--model", name, "--path", path], check=True, env=env)
    return path


class TFPeer:
    """The TF worker process for one frozen graph (or, role "aioflow", an aioflow one)."""

    def __init__(self, tf_python: str, path: str, threads: int = 0, role: str = "tf",
                 extra=(), env=None):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **(env or {}))
        self.proc = subprocess.Popen(
            [tf_python, os.path.abspath(__file__), "--role", role, "--path", path,
             "--tf-threads", str(threads), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.ready = json.loads(self.proc.stdout.readline())

    def ask(self, line: str):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


class AioflowPeer:
    """An aioflow session over the same frozen graph, run on a private event loop."""

    def __init__(self, path: str, fusion: bool = True, intra_op: int = 0):
        import asyncio

        import aioflow as af
        from aioflow.proto import graph_pb2, rewriter_config_pb2

        self.af = af
        with open(path + ".json") as f:
            meta = json.load(f)
        graph_def = graph_pb2.GraphDef()
        with open(path, "rb") as f:
            graph_def.ParseFromString(f.read())
        self.graph = af.Graph()
        with self.graph.as_default():
            af.import_graph_def(graph_def, name="")
        self.size = meta.get("size", 224)
        self.x = self.graph.get_tensor_by_name(meta["input"])
        self.y = self.graph.get_tensor_by_name(meta["output"])
        config = af.ConfigProto(intra_op_parallelism_threads=intra_op)
        if not fusion:
            config.graph_options.rewrite_options.remapping = rewriter_config_pb2.RewriterConfig.OFF
        self.loop = asyncio.new_event_loop()
        self.sess = af.Session(graph=self.graph, config=config)
        self._feeds: dict = {}

    def _run(self, batch: int, **kw):
        # The input is made once per batch size, outside the timed runs, as TF's worker
        # makes it once per request line (making it took ~0.7 ms of a 224x224 run).
        feed = self._feeds.get(batch)
        if feed is None:
            feed = self._feeds[batch] = {self.x: _input(batch, self.size)}
        return self.loop.run_until_complete(self.sess.run(self.y, feed, **kw))

    def times(self, batch: int, count: int) -> list:
        """(wall seconds, process CPU seconds) of each of `count` runs."""
        out = []
        for _ in range(count):
            t0, c0 = time.perf_counter(), time.process_time()
            self._run(batch)
            out.append((time.perf_counter() - t0, time.process_time() - c0))
        return out

    def warm(self, batch: int) -> None:
        """One run, then wait for the kernel compiles the build started (as the model
        server does before it serves)."""
        from aioflow.client import kernel_compiles

        self._run(batch)
        kernel_compiles.wait_for_started_compiles(COMPILE_TIMEOUT_S)

    def trace(self, batch: int) -> dict:
        af = self.af
        md = af.RunMetadata()
        self._run(batch, options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE,
                                               output_partition_graphs=True),
                  run_metadata=md)
        types = {op.name: op.type for op in self.graph.get_operations()}
        fused = {}
        for part in md.partition_graphs:  # the fused nodes are the partition's own
            fused.update({n.name: n.op for n in part.node})

        def op_type(ns):
            return fused.get(ns.node_name) or types.get(ns.node_name, ns.node_name)

        return _op_times(md.step_stats, op_type)

    def partition_op_types(self, batch: int) -> dict:
        af = self.af
        md = af.RunMetadata()
        self._run(batch, options=af.RunOptions(output_partition_graphs=True), run_metadata=md)
        counts: dict = {}
        for part in md.partition_graphs:
            for n in part.node:
                counts[n.op] = counts.get(n.op, 0) + 1
        return counts

    def output(self, batch: int) -> np.ndarray:
        return np.asarray(self._run(batch))

    def close(self) -> None:
        self.loop.run_until_complete(self.sess.close())
        self.loop.close()


#: Op families, so that TF's oneDNN ops (_MklNativeFusedConv2D, ...) and aioflow's fused
#: ops line up; a fused op's time includes the bias/batch norm/activation it absorbed.
_FAMILIES = {"Conv2D": "Conv2D (+fused)", "FusedConv2D": "Conv2D (+fused)",
             "PadWithFusedConv2D": "Conv2D (+fused)", "PadWithConv2D": "Conv2D (+fused)",
             "DepthwiseConv2dNative": "DepthwiseConv2dNative (+fused)",
             "FusedDepthwiseConv2dNative": "DepthwiseConv2dNative (+fused)",
             "MatMul": "MatMul (+fused)", "FusedMatMul": "MatMul (+fused)"}


def _family(op: str) -> str:
    """TF's and aioflow's names of the same op, as one (oneDNN's _Mkl prefixes dropped)."""
    for prefix in ("_MklNative", "_Mkl", "_"):
        if op.startswith(prefix):
            op = op[len(prefix):]
            break
    return _FAMILIES.get(op, op)


def _families(op_ms: dict) -> dict:
    """Milliseconds by op family (see _family)."""
    out: dict = {}
    for op, ms in op_ms.items():
        out[_family(op)] = out.get(_family(op), 0.0) + ms
    return out


def _median_families(traces: list) -> dict:
    """Each family's median over several traced runs (0 where a run lacks it): one traced
    run on a shared machine can catch a stall that the others do not."""
    fams = [_families(t) for t in traces]
    keys = set().union(*fams) if fams else set()
    return {k: statistics.median(f.get(k, 0.0) for f in fams) for k in keys}


def _top_ops(af_traces: list, tf_traces: list, n: int = 10) -> list:
    """The n op families that take the most time on either side, with both sides' median
    times over the traced runs."""
    fam_af = _median_families(af_traces)
    fam_tf = _median_families(tf_traces)
    keys = sorted(set(fam_af) | set(fam_tf),
                  key=lambda k: -max(fam_af.get(k, 0.0), fam_tf.get(k, 0.0)))[:n]
    rows = []
    for k in keys:
        a, t = fam_af.get(k, 0.0), fam_tf.get(k, 0.0)
        rows.append({"op": k, "aioflow_ms": round(a, 2), "tf_ms": round(t, 2),
                     "ratio": round(a / t, 2) if t > 0 else None})
    return rows


def warm_up(ours, tf, also, batch: int, runs: int) -> None:
    """Bring every side to its steady state before the timed runs: aioflow's warm run
    (which waits for the compiles its build started) and TF's, then `runs` untimed runs
    of each side in turn. TF's process takes no page fault in its runs from its second
    on; aioflow's heap still grew for ~20-30 runs after the two warm runs (InceptionV3
    b1: ~800-1,400 first-touch faults a run in the 9 after them, ~300 in the next 9, a
    few dozen after that: 2-3 ms of system time a run), so without these runs the first
    timed rounds measured its heap's growth, not its latency."""
    ours.warm(batch)
    tf.ask(f"run {batch} 1")
    for peer in also:
        peer.ask(f"warm {batch}")
    if runs > 0:
        ours.times(batch, runs)
        tf.ask(f"run {batch} {runs}")
        for peer in also:
            peer.ask(f"run {batch} {runs}")


def bench_model(name: str, args) -> dict:
    path = _ensure_frozen(name, args.models_dir, args.tf_python)
    ours = AioflowPeer(path, fusion=not args.no_fusion, intra_op=args.intra_op)
    tf = TFPeer(args.tf_python, path, args.tf_threads)
    also = [TFPeer(sys.executable, path, role="aioflow",
                   extra=["--intra-op", str(args.intra_op)] + (
                       ["--no-fusion"] if args.no_fusion else []),
                   env={"AIOFLOW_ONEDNN_LIBRARY": lib}) for lib in args.also_library]
    result: dict = {"model": name}
    try:
        for batch in args.batches:
            a_out, t_out = ours.output(batch), np.asarray(tf.ask(f"out {batch}"))
            warm_up(ours, tf, also, batch, args.warmup)
            a_times, t_times = [], []
            o_times: list = [[] for _ in also]
            tf_during_ours, ours_during_tf = [], []  # each side's CPU in the other's turn
            for _ in range(args.rounds):
                k0 = _proc_cpu_s(tf.proc.pid)
                a_times += ours.times(batch, args.runs)
                tf_during_ours.append(_proc_cpu_s(tf.proc.pid) - k0)
                time.sleep(args.settle)  # spinning threads go idle
                c0 = time.process_time()
                t_times += tf.ask(f"run {batch} {args.runs}")
                ours_during_tf.append(time.process_time() - c0)
                time.sleep(args.settle)  # and TF's
                for peer, times in zip(also, o_times, strict=True):
                    times += peer.ask(f"run {batch} {args.runs}")
                    time.sleep(args.settle)
            a_cpu = statistics.median(c for _, c in a_times)
            t_cpu = statistics.median(c for _, c in t_times)
            a_times, t_times = [w for w, _ in a_times], [w for w, _ in t_times]
            a_med, t_med = statistics.median(a_times), statistics.median(t_times)
            a_min, t_min = min(a_times), min(t_times)
            entry = {
                "aioflow_ms": round(a_med * 1e3, 2), "tf_ms": round(t_med * 1e3, 2),
                "ratio": round(a_med / t_med, 2),
                # The fastest run of each side: what a quiet machine gives (the medians
                # carry the shared machine's load).
                "aioflow_min_ms": round(a_min * 1e3, 2), "tf_min_ms": round(t_min * 1e3, 2),
                "ratio_of_mins": round(a_min / t_min, 2),
                "aioflow_images_per_s": round(batch / a_med, 1),
                "tf_images_per_s": round(batch / t_med, 1),
                # process CPU time of a run (all threads): steadier than wall time on a
                # shared machine; a ratio above the wall ratio means spinning or waste
                "aioflow_cpu_ms": round(a_cpu * 1e3, 2), "tf_cpu_ms": round(t_cpu * 1e3, 2),
                "cpu_ratio": round(a_cpu / t_cpu, 2),
                "max_abs_diff": float(np.max(np.abs(a_out.ravel() - t_out))),
                # CPU either side used in the other's turn (its idle threads spinning
                # into the other's runs): ~0 when --settle is long enough
                "tf_cpu_ms_in_aioflow_turns": round(statistics.median(tf_during_ours) * 1e3, 2),
                "aioflow_cpu_ms_in_tf_turns": round(statistics.median(ours_during_tf) * 1e3, 2),
                "settle_s": args.settle,
            }
            if also:
                entry["also"] = [_also_entry(peer, times, batch, t_med, t_cpu, t_out)
                                 for peer, times in zip(also, o_times, strict=True)]
            if not args.no_trace:
                a_traces, t_traces = [], []
                for _ in range(args.traces):  # A B A B, as the timed runs
                    a_traces.append(ours.trace(batch))
                    time.sleep(args.settle)
                    t_traces.append(tf.ask(f"trace {batch}"))
                    time.sleep(args.settle)
                entry["traces"] = args.traces
                entry["aioflow_traced_ms"] = round(statistics.median(
                    sum(t.values()) for t in a_traces), 1)
                entry["tf_traced_ms"] = round(statistics.median(
                    sum(t.values()) for t in t_traces), 1)
                entry["top_ops"] = _top_ops(a_traces, t_traces)
            result[f"batch{batch}"] = entry
        result["aioflow_partition_ops"] = ours.partition_op_types(1)
    finally:
        ours.close()
        tf.close()
        for peer in also:
            peer.close()
    return result


def _also_entry(peer, times, batch, t_med, t_cpu, t_out) -> dict:
    """An --also-library peer's figures against TF's runs of the same rounds."""
    wall = statistics.median(w for w, _ in times)
    cpu = statistics.median(c for _, c in times)
    out = np.asarray(peer.ask(f"out {batch}"))
    return {"onednn": peer.ready.get("onednn"), "aioflow_ms": round(wall * 1e3, 2),
            "ratio": round(wall / t_med, 2),
            "aioflow_min_ms": round(min(w for w, _ in times) * 1e3, 2),
            "aioflow_images_per_s": round(batch / wall, 1),
            "aioflow_cpu_ms": round(cpu * 1e3, 2), "cpu_ratio": round(cpu / t_cpu, 2),
            "max_abs_diff": float(np.max(np.abs(out - t_out)))}


def blas_info() -> list:
    """The BLAS libraries NumPy loaded, with the kernel set each runs ("Haswell", "SkylakeX":
    OPENBLAS_CORETYPE picks it; the GEMM convolutions' speed depends on it)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [{k: i.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
            for i in threadpool_info() if i.get("user_api") == "blas"]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--role", default="bench", choices=["bench", "freeze", "tf", "aioflow"])
    p.add_argument("--model")
    p.add_argument("--path")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--batches", default="1,8")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--models-dir", default=DEFAULT_DIR)
    p.add_argument("--tf-python", default=TF_PYTHON)
    p.add_argument("--warmup", type=int, default=30,
                   help="untimed runs of each side after its warm run (see warm_up)")
    p.add_argument("--settle", type=float, default=None,
                   help="seconds between turns, so neither side's idle threads spin into "
                        "the other's (default 0.02 with oneDNN, 0.3 with --backend numpy: "
                        "OpenBLAS's threads spin ~0.1 s; see SETTLE_S)")
    p.add_argument("--intra-op", type=int, default=0,
                   help="aioflow's intra_op_parallelism_threads (N: BLAS calls and the "
                        "conv kernels' own block split use at most N threads)")
    p.add_argument("--tf-threads", type=int, default=0,
                   help="TF's intra- and inter-op threads (0: its defaults, every core; "
                        "1: a single-threaded comparison of the kernels)")
    p.add_argument("--no-fusion", action="store_true")
    p.add_argument("--backend", choices=("onednn", "numpy"), default="onednn",
                   help="aioflow's conv kernels: oneDNN's (when installed) or NumPy's")
    p.add_argument("--also-library", action="append", default=[],
                   help="another libdnnl.so.3 for an aioflow peer in a worker process")
    p.add_argument("--no-trace", action="store_true")
    p.add_argument("--traces", type=int, default=5,
                   help="traced runs per side for the top-ops table (medians per op family)")
    args = p.parse_args()
    if args.role == "freeze":
        _freeze(args.model, args.path)
        return
    if args.role == "tf":
        _tf_worker(args.path, args.tf_threads)
        return
    if args.role == "aioflow":
        _aioflow_worker(args.path, not args.no_fusion, args.intra_op)
        return
    args.batches = [int(b) for b in args.batches.split(",")]
    if args.backend == "numpy":
        os.environ["AIOFLOW_ONEDNN"] = "0"  # read when aioflow's kernels load
    from aioflow.kernels.onednn import backend as onednn_backend
    from aioflow.kernels.onednn import dnnl_api

    backend = "onednn" if onednn_backend.AVAILABLE else "numpy"
    if args.settle is None:
        args.settle = SETTLE_S[backend]
    out = {"benchmark": "models", "cores": len(os.sched_getaffinity(0)),
           "backend": backend, "settle_s": args.settle,
           "onednn": dnnl_api.info(),
           "load_before": os.getloadavg()[0], "blas": blas_info(),
           "fusion": not args.no_fusion, "intra_op": args.intra_op, "rounds": args.rounds,
           "runs": args.runs,
           "results": [bench_model(m, args) for m in args.models.split(",")]}
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
