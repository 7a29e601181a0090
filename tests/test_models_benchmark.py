"""benchmarks/models.py's aioflow side times what TF's side times: the input is made once
per batch size (not inside every timed run), and the warm-up waits for the kernel
compiles the build started, as the model server does, before any timed run."""

import importlib.util
import json
import pathlib

import numpy as np
import pytest

import aioflow as af
from aioflow.client import kernel_compiles

_PATH = pathlib.Path(__file__).parent.parent / "benchmarks" / "models.py"


@pytest.fixture(scope="module")
def models():
    spec = importlib.util.spec_from_file_location("bench_models", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def frozen(tmp_path):
    """A small frozen model in the benchmark's format: the GraphDef and its json (input
    (batch, 2, 2, 3), a dense layer with bias and Relu: a fused MatMul)."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 2, 2, 3], name="input")
        flat = af.reshape(x, [-1, 12])
        w = af.constant(np.linspace(-1, 1, 60, dtype=np.float32).reshape(12, 5))
        b = af.constant(np.arange(5, dtype=np.float32))
        af.nn.relu(af.nn.bias_add(af.matmul(flat, w), b), name="out")
    path = tmp_path / "dense.pb"
    path.write_bytes(g.as_graph_def().SerializeToString())
    (tmp_path / "dense.pb.json").write_text(
        json.dumps({"input": "input:0", "output": "out:0", "size": 2}))
    return str(path)


def test_timed_runs_reuse_one_input(models, frozen, monkeypatch):
    made = []
    make = models._input
    monkeypatch.setattr(models, "_input", lambda *a: made.append(a) or make(*a))
    peer = models.AioflowPeer(frozen)
    try:
        want = peer.output(2)
        times = peer.times(2, 3)
        np.testing.assert_array_equal(peer.output(2), want)
    finally:
        peer.close()
    assert made == [(2, 2)]  # once, before the timed runs
    assert len(times) == 3 and all(wall > 0 and cpu >= 0 for wall, cpu in times)
    x = make(2, 2).reshape(2, 12)
    w = np.linspace(-1, 1, 60, dtype=np.float32).reshape(12, 5)
    np.testing.assert_allclose(want, np.maximum(x @ w + np.arange(5), 0), rtol=1e-5)


def test_warm_runs_then_waits_for_the_started_kernel_compiles(models, frozen, monkeypatch):
    peer = models.AioflowPeer(frozen)
    waited = []
    monkeypatch.setattr(kernel_compiles, "wait_for_started_compiles",
                        lambda timeout=None: waited.append((timeout, dict(peer._feeds))))
    try:
        peer.warm(1)
    finally:
        peer.close()
    (timeout, feeds), = waited
    assert timeout == models.COMPILE_TIMEOUT_S
    assert list(feeds) == [1]  # after the run: its build is what starts the compiles


class _Side:
    """A peer that records what it is asked (TFPeer's `ask`, AioflowPeer's methods)."""

    def __init__(self, log, name):
        self.log, self.name = log, name

    def ask(self, line):
        self.log.append((self.name, line))

    def warm(self, batch):
        self.log.append((self.name, f"warm {batch}"))

    def times(self, batch, count):
        self.log.append((self.name, f"run {batch} {count}"))
        return [(0.0, 0.0)] * count


def test_warm_up_runs_every_side_to_its_steady_state_before_timing(models):
    log = []
    ours, tf, also = _Side(log, "ours"), _Side(log, "tf"), [_Side(log, "lib")]
    models.warm_up(ours, tf, also, 8, 30)
    assert log == [("ours", "warm 8"), ("tf", "run 8 1"), ("lib", "warm 8"),
                   ("ours", "run 8 30"), ("tf", "run 8 30"), ("lib", "run 8 30")]
    log.clear()
    models.warm_up(ours, tf, [], 1, 0)  # --warmup 0: the warm runs only
    assert log == [("ours", "warm 1"), ("tf", "run 1 1")]


def test_other_sides_cpu_is_read_from_proc(models):
    """The CPU a side uses in the other's turns comes from /proc/<pid>/stat: this
    process's grows as it computes; a process that is gone reads 0.0."""
    import os
    import time

    before = models._proc_cpu_s(os.getpid())
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass
    assert models._proc_cpu_s(os.getpid()) > before
    assert models._proc_cpu_s(2 ** 22 + 12345) == 0.0
    assert models.SETTLE_S["onednn"] < models.SETTLE_S["numpy"]
