"""Every example runs as a user would run it, and prints what it promises."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"

EXPECTED = {
    "quickstart.py": "8 concurrent runs:",
    "ray_cluster.py": "after worker 1 restarted: 10.0",
    "serve_saved_model.py": "match TensorFlow: True",
    "await_io_in_graph.py": "20 runs each awaiting 50 ms",
    "cluster_ps_worker.py": "worker 0 done: w = 3.00, b = 2.00, loss < 1e-3: True",
    "control_flow.py": "squares: [ 0  1  4  9 16 25]",
    "import_tensorflow_graph.py": "total:0 = 10 (TensorFlow: 10)",
    "input_pipeline.py": "5 batches; every file read twice: True",
    "stream_pipeline.py": "TFRecord round trip: 40 records in batches of [16, 16, 8]",
    "sync_session.py": "hypotenuse(5, 12) = 13.0",
    "trace_two_devices.py": "wrote ",
    "variables_and_checkpoints.py": "restored total: 100.0",
    "train_and_serve.py": "every answer matches its snapshot's weights: True",
}


#: Services that run until stopped: tests/test_serving_examples.py sends them requests.
SERVICES = ["aiohttp_service.py", "fastapi_service.py"]


def test_every_example_is_covered():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted([*EXPECTED, *SERVICES])


#: Examples that need an optional extra: skipped cleanly without it.
NEEDS = {"ray_cluster.py": "ray", "cluster_ps_worker.py": "grpc"}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.ray) if NEEDS.get(n) == "ray" else n
    for n in sorted(EXPECTED)])
def test_example_runs(name, tmp_path, request):
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    # The Ray example joins the session's local Ray cluster (its address as argument).
    args = [request.getfixturevalue("ray_address")] if NEEDS.get(name) == "ray" else []
    # In a scratch directory, as a user's would be: examples may write files there.
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert EXPECTED[name] in proc.stdout
    assert list(tmp_path.iterdir()) == []  # nothing written to the working directory unasked


def test_trace_goes_where_the_user_says(tmp_path):
    out = tmp_path / "traces" / "run.json"
    out.parent.mkdir()
    proc = subprocess.run([sys.executable, str(EXAMPLES / "trace_two_devices.py"), str(out)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout
    assert json.loads(out.read_text())["traceEvents"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces"]
