"""TensorBoard itself shows what af.summary.FileWriter wrote: a TensorBoard server on a
loopback port reads an event file aioflow wrote (its HTTP API returns the graph, the run
metadata's step stats and the summaries' tags), and headless Chromium screenshots the
graph dashboard, which must have drawn the graph (white canvas, dashboard tabs) rather
than its "No graph definition files were found" page.

Skips when tensorboard or a Chromium is not installed (Debian: `apt-get install chromium`).
The screenshot's path is printed (`pytest -s` or `-rP` shows it); AIOFLOW_SCREENSHOT_DIR
keeps it somewhere other than the test's temporary directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import aioflow as af

tensorboard = pytest.importorskip("tensorboard")
_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER = next((shutil.which(b) for b in _BROWSERS if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no headless Chromium installed")


async def _write_logs(logdir: Path) -> None:
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None], name="x")
        w = af.constant(np.linspace(-1, 1, 4, dtype=np.float32), name="w")
        y = af.nn.relu(x * w, name="relu")
        loss = af.reduce_mean(af.square(y), name="mean_square")
        af.summary.scalar("loss", loss)
        af.summary.histogram("activation", y)
        merged = af.summary.merge_all()
    with af.summary.FileWriter(logdir, graph=g) as writer:
        async with af.Session(graph=g) as sess:
            for step in range(3):
                meta = af.RunMetadata()
                out = await sess.run(merged, {x: np.full(4, step + 1.0, np.float32)},
                                     options=af.RunOptions(trace_level=3), run_metadata=meta)
                writer.add_summary(out, step)
            writer.add_run_metadata(meta, "step2", 2)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 (loopback)
        return response.read()


@pytest.fixture
def tensorboard_server(tmp_path):
    """A TensorBoard (Python reader) on 127.0.0.1 at a free port, over tmp_path/logs."""
    logdir = tmp_path / "logs"
    logdir.mkdir()
    log = open(tmp_path / "tensorboard.log", "w+")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host",
         "127.0.0.1", "--port", "0", "--load_fast=false", "--reload_interval", "1"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        port = None
        while port is None:
            log.seek(0)
            m = re.search(r"http://127\.0\.0\.1:(\d+)/", log.read())
            if m:
                port = int(m.group(1))
            elif proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"TensorBoard did not start:\n{log.read()}")
            else:
                time.sleep(0.2)
        yield logdir, f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _wait_for(url: str, ok, what: str, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while True:
        try:
            body = _get(url)
            if ok(body):
                return body
        except OSError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"TensorBoard never served {what} at {url}")
        time.sleep(0.5)


async def test_tensorboard_graph_dashboard_screenshot(tensorboard_server, tmp_path):
    logdir, base = tensorboard_server
    await _write_logs(logdir)
    # TensorBoard's server parsed the file: the graph, the step stats, the summaries.
    info = json.loads(_wait_for(f"{base}/data/plugin/graphs/info",
                                lambda b: b"step2" in b, "the graph's run metadata"))
    assert info["."]["run_graph"] is True and info["."]["tags"]["step2"]["profile"] is True
    graph = _get(f"{base}/data/plugin/graphs/graph?run=.&conversions=false").decode()
    assert {"relu", "mean_square", "loss", "activation"} <= set(
        re.findall(r'^  name: "([^"]+)"', graph, re.MULTILINE))
    stats = _get(f"{base}/data/plugin/graphs/run_metadata?run=.&tag=step2").decode()
    assert 'node_name: "relu"' in stats and "all_start_micros" in stats
    tags = json.loads(_wait_for(f"{base}/data/plugin/scalars/tags",
                                lambda b: b"loss" in b, "the scalars"))
    assert set(tags["."]) == {"loss"}
    # The graph dashboard, drawn by headless Chromium.
    out_dir = Path(os.environ.get("AIOFLOW_SCREENSHOT_DIR") or tmp_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    shot = out_dir / "tensorboard_graph.png"
    shot.unlink(missing_ok=True)
    proc = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--no-first-run", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'chromium'}",
         "--window-size=1400,900", "--virtual-time-budget=20000", f"--screenshot={shot}",
         f"{base}/#graphs"], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    print(f"\nTensorBoard graph dashboard screenshot: {shot}")
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert pixels.shape == (900, 1400, 3)
    assert tuple(pixels[20, 20]) == (245, 124, 0)  # TensorBoard's orange header
    # Dashboard tabs (white text on the header) appear only when a run has data ...
    assert (pixels[15:50, 170:740].min(axis=2) > 200).sum() > 50
    # ... and the graph scene is a white canvas (the no-graph page is grey, #f5f5f5).
    canvas = pixels[130:, 370:]
    assert (canvas.min(axis=2) == 255).mean() > 0.9
    # Not blank: the nodes and edges of the graph are drawn on it.
    assert (canvas.min(axis=2) < 235).sum() > 500
