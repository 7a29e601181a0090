#!/usr/bin/env python
"""`aioflow serve` against what users run today: TensorFlow 2.21's Session behind aiohttp,
each request's `sess.run` sent to a thread pool. Prints one JSON object.

Both servers load the SAME frozen GraphDef and answer the same TF Serving REST request
(POST /v1/models/{name}:predict, {"instances": ...}) on loopback:
- "aioflow": `python -m aioflow.cli serve` (batching off);
- "aioflow_batching": the same with --enable_batching (BatchingParameters below);
- "aioflow_workers", "aioflow_batching_workers": the same two as `--workers 2` (--workers:
  N processes sharing the port; MLP only; --workers 0 leaves them out);
- "tf": benchmarks/serving.py --role tf-server, run with TF's Python (json + aiohttp +
  a ThreadPoolExecutor around tf.compat.v1.Session.run). Both event loops are uvloop.

Models: a small MLP (64 -> 256 -> 256 -> 10, ReLU, softmax; one row a request) at
concurrency 1, 16 and 64, both servers with one intra-op (BLAS/Eigen) thread; MobileNetV2
(alpha 1.0, 224x224, frozen by benchmarks/models.py's freeze role into --models-dir;
skipped with --no-mobilenet) at concurrency 16, one image a request, default threads.

The load generator (this process: raw keep-alive HTTP/1.1 connections on uvloop, the
request encoded once, a few µs a request) keeps `concurrency` requests in flight for
--duration seconds or --max-requests requests, whichever comes first, after a warm-up on
the same connections (a quarter of --duration, at most 0.5 s, and until every connection
has been answered once: the numbers are those of established connections, for every
server alike; see _Run). The servers take
turns, A B C A B C (--rounds); the medians of the rounds are reported: throughput
(requests/s), p50 and p99 latency (ms), the server process's CPU time per request (µs,
user + system of all its threads, from /proc: the steadiest number on a shared machine),
and aioflow / TF ratios. Answers are checked against each other before timing.

Usage: python benchmarks/serving.py [--duration 3] [--rounds 2] [--concurrency 1,16,64]
           [--workers 2]
           [--tf-python PY] [--no-mobilenet] [--models-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TF_PYTHON = "/work/venvs/tfserve/bin/python"  # TF 2.21 + aiohttp (+ uvloop)
DEFAULT_DIR = os.path.expanduser("~/.cache/aioflow-bench")
BATCHING = """
max_batch_size { value: 64 }
batch_timeout_micros { value: 0 }
max_enqueued_batches { value: 1000 }
num_batch_threads { value: 1 }
"""


# -- the TF server (run with TF's Python) ----------------------------------------------------

def _tf_server(path: str, name: str, inp: str, out: str, port: int, intra_op: int) -> None:
    """aiohttp + json + a thread pool around tf.compat.v1.Session.run, as users write it."""
    from concurrent.futures import ThreadPoolExecutor

    import tensorflow as tf
    from aiohttp import web

    graph_def = tf.compat.v1.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=intra_op)
    sess = tf.compat.v1.Session(graph=graph, config=config)
    x, y = graph.get_tensor_by_name(inp), graph.get_tensor_by_name(out)
    pool = ThreadPoolExecutor()

    async def predict(request):
        doc = json.loads(await request.read())
        feed = np.asarray(doc["instances"], np.float32)
        result = await asyncio.get_running_loop().run_in_executor(
            pool, lambda: sess.run(y, {x: feed}))
        return web.Response(body=json.dumps({"predictions": result.tolist()}),
                            content_type="application/json")

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post(f"/v1/models/{name}:predict", predict)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


# -- models ------------------------------------------------------------------------------------

def write_mlp(base: str) -> tuple[str, str]:
    """The MLP as version 1 under `base`; returns (input, output) tensor names."""
    sys.path.insert(0, REPO)
    import aioflow as af

    rng = np.random.default_rng(0)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 64], name="x")
        h = x
        for i, (n_in, n_out) in enumerate(((64, 256), (256, 256))):
            w = af.constant(rng.standard_normal((n_in, n_out)).astype(np.float32) * 0.1)
            b = af.constant(np.zeros(n_out, np.float32))
            h = af.nn.relu(af.matmul(h, w) + b, name=f"h{i}")
        w = af.constant(rng.standard_normal((256, 10)).astype(np.float32) * 0.1)
        af.nn.softmax(af.matmul(h, w), name="probs")
    os.makedirs(os.path.join(base, "1"), exist_ok=True)
    with open(os.path.join(base, "1", "model.pb"), "wb") as f:
        f.write(g.as_graph_def().SerializeToString())
    return "x:0", "probs:0"


def mobilenet(models_dir: str, tf_python: str, base: str) -> tuple[str, str] | None:
    """MobileNetV2 frozen by benchmarks/models.py (cached), as version 1 under `base`."""
    path = os.path.join(models_dir, "mobilenetv2_224.pb")
    if not (os.path.exists(path) and os.path.exists(path + ".json")):
        os.makedirs(models_dir, exist_ok=True)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        subprocess.run([tf_python, os.path.join(HERE, "models.py"), "--role", "freeze",
                        "--model", "mobilenetv2", "--path", path], check=True, env=env)
    with open(path + ".json") as f:
        meta = json.load(f)
    os.makedirs(os.path.join(base, "1"), exist_ok=True)
    shutil.copy(path, os.path.join(base, "1", "model.pb"))
    return meta["input"], meta["output"]


# -- servers -----------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, label: str, argv: list[str], port: int, env=None):
        self.label, self.port = label, port
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=env)

    def wait_ready(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.label} exited: {self.proc.stderr.read().decode()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{self.label} did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def start_servers(name, base, inp, out, tf_python, batching_file, intra_op, tf_intra_op,
                  workers=0):
    aioflow_argv = [sys.executable, "-m", "aioflow.cli", "serve", "--model_name", name,
                    "--model_base_path", base, "--inputs", f"x={inp}",
                    "--outputs", f"y={out}", "--host", "127.0.0.1", "--access_log", "false",
                    "--file_system_poll_wait_seconds", "0",
                    "--tensorflow_intra_op_parallelism", str(intra_op)]
    env = dict(os.environ, PYTHONPATH=REPO)
    servers = []
    port, grpc_port = _free_port(), _free_port()
    servers.append(Server("aioflow", [*aioflow_argv, "--rest_api_port", str(port),
                                      "--port", str(grpc_port)], port, env))
    port, grpc_port = _free_port(), _free_port()
    servers.append(Server("aioflow_batching", [
        *aioflow_argv, "--rest_api_port", str(port), "--port", str(grpc_port),
        "--enable_batching", "--batching_parameters_file", batching_file], port, env))
    if workers > 1:  # the same two, as --workers N processes sharing the ports
        batching = ["--enable_batching", "--batching_parameters_file", batching_file]
        for label, extra in (("aioflow_workers", []), ("aioflow_batching_workers", batching)):
            port, grpc_port = _free_port(), _free_port()
            servers.append(Server(label, [*aioflow_argv, "--rest_api_port", str(port),
                                          "--port", str(grpc_port), "--workers", str(workers),
                                          *extra], port, env))
    port = _free_port()
    tf_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    servers.append(Server("tf", [tf_python, os.path.abspath(__file__), "--role", "tf-server",
                                 "--path", os.path.join(base, "1", "model.pb"), "--name", name,
                                 "--input", inp, "--output", out, "--port", str(port),
                                 "--intra-op", str(tf_intra_op)],
                          port, tf_env))
    for s in servers:
        s.wait_ready()
    return servers


# -- load --------------------------------------------------------------------------------------

class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection sending the same request again as soon as its
    answer is in (a raw protocol: the generator costs a few µs a request, so the servers,
    not the client, are what is measured)."""

    def __init__(self, request: bytes, run):
        self.request, self.run = request, run
        self.buffer = b""
        self.sent = 0.0
        self.answers = 0  # measured answers on this connection

    def connection_made(self, transport):
        self.transport = transport
        self.send()

    def send(self):
        if not self.run.more():
            self.transport.close()
            return
        self.sent = time.perf_counter()
        self.transport.write(self.request)

    def data_received(self, data):
        self.buffer += data
        head_end = self.buffer.find(b"\r\n\r\n")
        if head_end < 0:
            return
        head = self.buffer[:head_end].lower()
        at = head.find(b"content-length:")
        length = int(head[at + 15:head.find(b"\r\n", at) if head.find(b"\r\n", at) > 0
                          else None]) if at >= 0 else 0
        if len(self.buffer) < head_end + 4 + length:
            return
        self.run.done(self, self.sent, time.perf_counter(), head.startswith(b"http/1.1 200"))
        self.buffer = self.buffer[head_end + 4 + length:]
        self.send()

    def connection_lost(self, exc):
        self.run.closed()


class _Run:
    """The requests of one load run: a warm-up on the run's own connections (answers not
    counted), then `duration` seconds (or `max_requests` answers) measured.

    The measurement starts only once every connection is open and has been answered
    (and the warm-up time is over), and counts the requests sent after it started: a
    server accepting new connections slowly under load (uvloop accepts one a turn of
    its loop) would otherwise have the first requests of its last connections, and the
    ramp to full concurrency, in the measured numbers, for whichever server it is."""

    def __init__(self, concurrency, warmup, duration, max_requests, on_start=None):
        self.loop = asyncio.get_running_loop()
        self.warmup_until = time.perf_counter() + warmup
        self.duration = duration
        self.deadline = float("inf")  # set when the measurement starts
        self.max_requests = max_requests
        self.on_start = on_start
        self.concurrency = concurrency
        self.answered: set = set()  # connections answered during the warm-up
        self.start = None  # perf_counter at the measurement's start
        self.latencies: list[float] = []
        self.finished_at: list[float] = []  # when each measured answer came
        self.failures = 0
        self.warmup_failures = 0
        self.open = concurrency
        self.finished = self.loop.create_future()

    def more(self) -> bool:
        return (time.perf_counter() < self.deadline
                and len(self.latencies) < self.max_requests)

    def done(self, conn, sent: float, now: float, ok: bool) -> None:
        if self.start is None:
            self.warmup_failures += not ok
            self.answered.add(conn)
            if len(self.answered) >= self.concurrency and now >= self.warmup_until:
                self._begin(now)
            return
        if sent >= self.start:
            self.latencies.append(now - sent)
            self.finished_at.append(now)
            self.failures += not ok
            conn.answers += 1

    def _begin(self, now: float) -> None:
        self.start = now
        self.deadline = now + self.duration
        if self.on_start is not None:
            self.on_start()

    def closed(self) -> None:
        self.open -= 1
        if self.open == 0 and not self.finished.done():
            self.finished.set_result(None)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` (all its threads) and its descendants
    (the workers of --workers)."""
    total = 0.0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


async def _load(port: int, name: str, body: bytes, concurrency: int, warmup: float,
                duration: float, max_requests: int, pid: int | None = None) -> dict:
    request = (f"POST /v1/models/{name}:predict HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
               ).encode() + body
    loop = asyncio.get_running_loop()
    started = {}

    def on_start():  # the measurement begins: the CPU counters from here
        started["cpu"] = _cpu_seconds(pid) if pid else 0.0
        started["client_cpu"] = time.process_time()

    run = _Run(concurrency, warmup, duration, max_requests, on_start)
    conns = []
    # (a connection never answered during the warm-up: measure what there is after a while)
    loop.call_later(warmup + 10.0, lambda: run.start is None and run._begin(time.perf_counter()))
    for _ in range(concurrency):
        conns.append((await loop.create_connection(lambda: _Connection(request, run),
                                                   "127.0.0.1", port))[1])
    await run.finished
    elapsed = time.perf_counter() - run.start
    cpu = _cpu_seconds(pid) - started["cpu"] if pid else float("nan")
    client_cpu = time.process_time() - started["client_cpu"]
    lat = np.array(run.latencies) * 1e3
    gaps = np.diff(np.array(run.finished_at)) * 1e3 if len(lat) > 1 else np.zeros(1)
    answers = [c.answers for c in conns]
    return {"requests": len(lat), "failures": run.failures + run.warmup_failures,
            # (no answer at all for > 5 ms: the server, or the load generator, off the CPU)
            "stalls_s": float(gaps[gaps > 5].sum() / 1e3), "max_gap_ms": float(gaps.max()),
            # (fairness: the connection answered least often against the one answered most)
            "answers_min_max": min(answers) / max(max(answers), 1),
            "p90_ms": float(np.percentile(lat, 90)),
            "server_cpu_us": cpu / max(len(lat), 1) * 1e6,
            "client_cpu_us": client_cpu / max(len(lat), 1) * 1e6,
            "throughput": len(lat) / elapsed,
            "p50_ms": float(np.percentile(lat, 50)), "p99_ms": float(np.percentile(lat, 99))}


async def _answer(port: int, name: str, body: bytes):
    import aiohttp

    async with aiohttp.ClientSession() as http, http.post(
            f"http://127.0.0.1:{port}/v1/models/{name}:predict", data=body) as r:
        assert r.status == 200, await r.text()
        return np.asarray((await r.json())["predictions"])


def bench_model(name, servers, body, concurrencies, args, duration) -> dict:
    answers = {s.label: asyncio.run(_answer(s.port, name, body)) for s in servers}
    ref = answers["tf"]
    for label, got in answers.items():
        np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-4 * np.abs(ref).max(),
                                   err_msg=f"{label} disagrees with TF")
    results = {}
    for c in concurrencies:
        runs = {s.label: [] for s in servers}
        for _ in range(args.rounds):
            for s in servers:  # A B C, A B C, ...
                runs[s.label].append(asyncio.run(
                    _load(s.port, name, body, c, min(0.5, duration / 4), duration,
                          args.max_requests, s.proc.pid)))
                time.sleep(args.settle)
        row = {}
        for label, rs in runs.items():
            row[label] = {k: statistics.median(r[k] for r in rs)
                          for k in ("throughput", "p50_ms", "p90_ms", "p99_ms",
                                    "server_cpu_us", "client_cpu_us", "stalls_s", "max_gap_ms",
                                    "answers_min_max")}
            row[label]["requests"] = sum(r["requests"] for r in rs)
            row[label]["failures"] = sum(r["failures"] for r in rs)
        tf = row["tf"]
        for label in row:
            if label == "tf":
                continue
            row[label]["throughput_vs_tf"] = row[label]["throughput"] / tf["throughput"]
            row[label]["p99_vs_tf"] = row[label]["p99_ms"] / tf["p99_ms"]
            row[label]["cpu_per_request_vs_tf"] = (row[label]["server_cpu_us"]
                                                   / tf["server_cpu_us"])
        results[f"c{c}"] = row
        print(json.dumps({name: {f"c{c}": row}}), file=sys.stderr, flush=True)
    return results


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--role", default="bench", choices=["bench", "tf-server"])
    p.add_argument("--path")
    p.add_argument("--name")
    p.add_argument("--input")
    p.add_argument("--output")
    p.add_argument("--port", type=int)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--max-requests", type=int, default=50000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--concurrency", default="1,16,64")
    p.add_argument("--settle", type=float, default=0.3)
    p.add_argument("--tf-python", default=TF_PYTHON)
    p.add_argument("--models-dir", default=DEFAULT_DIR)
    p.add_argument("--intra-op", type=int, default=1,
                   help="intra-op threads of both servers for the MLP (one BLAS thread: its "
                        "GEMMs are too small to share); MobileNetV2 runs with the defaults")
    p.add_argument("--mobilenet-intra-op", type=int, default=1,
                   help="aioflow's intra-op threads for MobileNetV2 (1: each kernel on one "
                        "thread, concurrent requests' kernels side by side; 0: the conv "
                        "kernels split their blocks over the cores); TF keeps its defaults")
    p.add_argument("--workers", type=int, default=2,
                   help="also serve the MLP by `aioflow serve --workers N` (batching off and "
                        "on); 0 or 1: not")
    p.add_argument("--models", default="mlp,mobilenet")
    p.add_argument("--no-mobilenet", action="store_true")
    p.add_argument("--mobilenet-duration", type=float, default=8.0)
    p.add_argument("--mobilenet-concurrency", default="16")
    args = p.parse_args()
    if args.role == "tf-server":
        _tf_server(args.path, args.name, args.input, args.output, args.port, args.intra_op)
        return
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    if not os.path.exists(args.tf_python):
        raise SystemExit(f"TF's Python {args.tf_python} is absent: give --tf-python (a Python "
                         "with tensorflow 2.21 and aiohttp)")
    tmp = tempfile.mkdtemp(prefix="aioflow-serving-bench-")
    batching_file = os.path.join(tmp, "batching.config")
    with open(batching_file, "w") as f:
        f.write(BATCHING)
    report = {"benchmark": "serving", "server_cpu_count": os.cpu_count(),
              "batching_parameters": " ".join(BATCHING.split()),
              "duration_s": args.duration, "rounds": args.rounds,
              "mlp_intra_op_parallelism": args.intra_op,
              "mobilenet_aioflow_intra_op_parallelism": args.mobilenet_intra_op,
              "mlp_workers": args.workers}
    try:
        models = set(args.models.split(","))
        if args.no_mobilenet:
            models.discard("mobilenet")
        if "mlp" in models:
            report["mlp"] = _bench_mlp(tmp, args, batching_file)
        if "mobilenet" in models:
            report["mobilenet_v2"] = _bench_mobilenet(tmp, args, batching_file)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(report, indent=1))


def _bench_mlp(tmp: str, args, batching_file: str) -> dict:
    base = os.path.join(tmp, "mlp")
    inp, out = write_mlp(base)
    servers = start_servers("mlp", base, inp, out, args.tf_python, batching_file,
                            args.intra_op, args.intra_op, args.workers)
    try:
        body = json.dumps({"instances": np.random.default_rng(1).standard_normal(
            (1, 64)).round(4).tolist()}).encode()
        return bench_model("mlp", servers, body, [int(c) for c in args.concurrency.split(",")],
                           args, args.duration)
    finally:
        for s in servers:
            s.stop()


def _bench_mobilenet(tmp: str, args, batching_file: str) -> dict:
    base = os.path.join(tmp, "mobilenet")
    inp, out = mobilenet(args.models_dir, args.tf_python, base)
    servers = start_servers("mobilenet", base, inp, out, args.tf_python, batching_file,
                            args.mobilenet_intra_op, 0)
    try:
        image = np.random.default_rng(2).uniform(-1, 1, (1, 224, 224, 3)).round(3)
        body = json.dumps({"instances": image.tolist()}).encode()
        return bench_model("mobilenet", servers, body,
                           [int(c) for c in args.mobilenet_concurrency.split(",")], args,
                           args.mobilenet_duration)
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    main()
