"""The `aioflow` command: --version, run on a TensorFlow-written GraphDef, demo."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import aioflow
from aioflow.cli import main

DATA = pathlib.Path(__file__).parent / "data"


def test_version(capsys):
    try:
        main(["--version"])
    except SystemExit as e:
        assert e.code == 0
    assert aioflow.__version__ in capsys.readouterr().out


def test_run_a_tf_graph_def_to_npz(tmp_path):
    values = np.load(DATA / "core_matmul.npz")
    feeds = [k for k in values.files if k.startswith("feed:")]
    args = ["run", str(DATA / "core_matmul.pb")]
    for key in feeds:
        path = tmp_path / (key.replace(":", "_").replace("/", "_") + ".npy")
        np.save(path, values[key])
        args += ["--feed", f"{key[len('feed:'):]}={path}"]
    fetch = next(k for k in values.files if k.startswith("fetch:"))[len("fetch:"):]
    out = tmp_path / "out.npz"
    assert main(args + ["--fetch", fetch, "--output", str(out)]) == 0
    np.testing.assert_allclose(np.load(out)[fetch], values[f"fetch:{fetch}"], rtol=1e-5)


def test_run_reports_errors_cleanly(tmp_path, capsys):
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x0a\x05garbage")
    assert main(["run", str(bad), "--fetch", "y:0"]) == 1
    assert "Unable to parse GraphDef" in capsys.readouterr().err


def test_demo_runs_as_a_console_script():
    proc = subprocess.run([sys.executable, "-m", "aioflow.cli", "demo", "--runs", "3"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "3 concurrent runs" in proc.stdout
    assert proc.stdout.count("total =") == 3


def test_run_error_names_the_node_and_no_bogus_origin(capsys):
    assert main(["run", str(DATA / "core_matmul.pb"), "--fetch", "mm:0"]) == 1
    err = capsys.readouterr().err
    assert "You must feed a value for placeholder tensor 'a'" in err
    assert "{{node a}}" in err
    assert "was created at" not in err  # imported nodes have no Python creation site


SAVED_MODEL = DATA / "saved_model_v1" / "main_op"


def test_run_a_saved_model_signature_by_input_key(tmp_path, capsys):
    # The signature's input key feeds its tensor; every output is printed by key, with
    # the value TF computed for the same SavedModel (tests/data/saved_model_v1).
    expected = json.loads((DATA / "saved_model_v1" / "expected.json").read_text())
    np.save(tmp_path / "x.npy", np.asarray(expected["X"], np.float32))
    out = tmp_path / "out.npz"
    assert main(["run", str(SAVED_MODEL), "--input", f"x={tmp_path / 'x.npy'}",
                 "--output", str(out)]) == 0
    with np.load(out) as z:
        assert z.files == ["y"]
        np.testing.assert_allclose(z["y"], np.asarray(expected["y"], np.float32), rtol=1e-6)


@pytest.mark.parametrize("args, message", [
    (["--input", "z=[[1.0, 2.0]]"], "has no input(s) ['z']; its inputs are ['x']"),
    (["--signature", "other"], "no signature 'other' in the SavedModel"),
    (["--tag", "nope"], "MetaGraphDef associated with tags 'nope' could not be found"),
])
def test_run_a_saved_model_reports_bad_arguments(args, message, capsys):
    assert main(["run", str(SAVED_MODEL), *args]) == 1
    assert message in capsys.readouterr().err


# -- one-line errors, a closed stdout (issue #15) ---------------------------------------------

def _cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "aioflow.cli", *args], capture_output=True,
                          text=True, timeout=120, **kwargs)


def test_a_missing_npy_feed_is_a_one_line_error(tmp_path):
    proc = _cli("run", str(DATA / "core_matmul.pb"), "--feed", f"a={tmp_path / 'nope.npy'}",
                "--fetch", "mm:0")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1, proc.stderr  # no traceback
    assert proc.stderr.startswith("error: --feed a: cannot read ")
    assert "nope.npy" in proc.stderr and "No such file or directory" in proc.stderr


def test_a_bad_npy_feed_is_a_one_line_error(tmp_path):
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"not an npy file")
    assert main(["run", str(DATA / "core_matmul.pb"), "--feed", f"a={bad}",
                 "--fetch", "mm:0"]) == 1


def test_runtime_errors_are_printed_on_one_line(capsys):
    assert main(["run", str(DATA / "core_matmul.pb"), "--fetch", "mm:0"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: InvalidArgumentError: ")


def test_a_closed_stdout_ends_quietly():
    """`aioflow demo | head -1`: the reader goes away; no BrokenPipeError message."""
    proc = subprocess.Popen([sys.executable, "-m", "aioflow.cli", "demo", "--runs", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # as `head` exits before the writer is done
    _, err = proc.communicate(timeout=120)
    assert b"BrokenPipe" not in err and b"Traceback" not in err, err.decode()
    assert err == b""
    assert proc.returncode == 1



def test_run_without_a_fetch_is_a_one_line_error(capsys):
    assert main(["run", str(DATA / "core_matmul.pb")]) == 1
    assert capsys.readouterr().err == "error: give at least one --fetch NAME\n"
