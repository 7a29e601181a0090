"""benchmarks/conv_concurrency.py's per-image figures: throughput, CPU, the kernel's share of
the CPU and the page faults, from a side's latencies and its process counters."""

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

_PATH = pathlib.Path(__file__).parent.parent / "benchmarks" / "conv_concurrency.py"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(_PATH.parent))  # it imports benchmarks/models.py as `models`
    try:
        spec = importlib.util.spec_from_file_location("bench_conv_concurrency", _PATH)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(_PATH.parent))
    return module


def test_per_image_figures(bench):
    # 40 runs of batch 2 in 4 s, 1.6 s of CPU of which 0.2 s in the kernel, 400 faults
    r = bench._result([0.1] * 20 + [0.3] * 20, 2, 4.0, 1.6, (0.2, 400))
    assert r["images_per_s"] == pytest.approx(20.0)
    assert r["p50_ms"] == pytest.approx(200.0)
    assert r["cpu_ms_per_image"] == pytest.approx(20.0)
    assert r["sys_ms_per_image"] == pytest.approx(2.5)
    assert r["page_faults_per_image"] == pytest.approx(5.0)


def test_counters_count_this_process(bench):
    before = bench._sys_faults()
    # 80 MiB: over the host memory policy's mmap threshold (64 MiB), so fresh pages
    # whether or not the suite applied the policy
    buf = np.ones(80 << 20, np.uint8)
    spent, faults = bench._since(before)
    assert buf[-1] == 1
    assert spent >= 0.0
    assert faults > 0
