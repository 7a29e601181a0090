"""How aioflow finds and chooses a oneDNN library (aioflow/kernels/onednn/dnnl_api.py):
AIOFLOW_ONEDNN_LIBRARY naming a path or a wheel, the runtime preloads of Intel's `onednn`
wheel, and the reasons a library is refused. These run with or without a oneDNN wheel
installed; choosing a library happens once per process, so those cases run in a child."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from aioflow.kernels.onednn import dnnl_api

# dnnl_api.py imports nothing of aioflow's: the child loads it alone, by its path (fast).
_SHOW = ("import importlib.util, json, sys\n"
         "spec = importlib.util.spec_from_file_location('dnnl_api', sys.argv[1])\n"
         "api = importlib.util.module_from_spec(spec)\n"
         "spec.loader.exec_module(api)\n"
         "print(json.dumps([api.load() is not None, api.info(), api.load_error()]))\n")


def _child(**env) -> tuple:
    """(loaded, info, load_error) of a fresh process with `env` added (and the backend
    not turned off)."""
    env = {k: v for k, v in os.environ.items() if k != "AIOFLOW_ONEDNN"} | env
    out = subprocess.run([sys.executable, "-c", _SHOW, dnnl_api.__file__], env=env,
                         capture_output=True, text=True, check=True).stdout
    return tuple(json.loads(out))


def test_a_path_that_is_not_there_is_refused_with_its_reason(tmp_path):
    missing = tmp_path / "libdnnl.so.3"
    loaded, info, error = _child(AIOFLOW_ONEDNN_LIBRARY=str(missing))
    assert (loaded, info) == (False, None)
    assert error.startswith(f"{missing}: ") and "No such file" in error


def test_a_file_that_is_not_a_library_is_refused(tmp_path):
    fake = tmp_path / "libdnnl.so.3"
    fake.write_bytes(b"not an ELF file")
    loaded, info, error = _child(AIOFLOW_ONEDNN_LIBRARY=str(fake))
    assert (loaded, info) == (False, None)
    assert error.startswith(f"{fake}: ")


def test_a_wheel_that_is_not_installed_finds_nothing(monkeypatch):
    monkeypatch.setenv("AIOFLOW_ONEDNN_LIBRARY", "no-such-onednn-wheel")
    assert dnnl_api._candidates() == []
    assert _child(AIOFLOW_ONEDNN_LIBRARY="no-such-onednn-wheel") == (
        False, None, "libdnnl.so.3 not found (pip install aioflow[onednn])")


def test_a_named_path_is_the_only_candidate(monkeypatch, tmp_path):
    path = str(tmp_path / "libdnnl.so.3")
    monkeypatch.setenv("AIOFLOW_ONEDNN_LIBRARY", path)
    assert dnnl_api._candidates() == [(path, None)]


def test_without_a_choice_the_gomp_wheel_comes_before_the_system(monkeypatch):
    """Intel's `onednn` wheel is not taken unless named (dnnl_api._WHEELS)."""
    monkeypatch.delenv("AIOFLOW_ONEDNN_LIBRARY", raising=False)
    installed = {"onednn": "/intel/lib/libdnnl.so.3"}
    monkeypatch.setattr(dnnl_api, "_wheel_library", installed.get)
    monkeypatch.setattr(dnnl_api.ctypes.util, "find_library", lambda name: "libdnnl.so.3")
    assert dnnl_api._candidates() == [("libdnnl.so.3", None)]
    installed["onednn-cpu-gomp"] = "/gomp/lib/libdnnl.so.3"
    assert dnnl_api._candidates() == [("/gomp/lib/libdnnl.so.3", "onednn-cpu-gomp"),
                                      ("libdnnl.so.3", None)]
    monkeypatch.setenv("AIOFLOW_ONEDNN_LIBRARY", "onednn")
    assert dnnl_api._candidates() == [("/intel/lib/libdnnl.so.3", "onednn")]


def test_the_opencl_loader_is_pointed_at_the_wheels_cpu_runtime(monkeypatch, tmp_path):
    """Intel's wheel ships an ICD file naming its build folder: the CPU OpenCL runtime
    beside libdnnl is named to the OpenCL loader instead, unless the environment chose."""
    (tmp_path / "libintelocl.so").write_bytes(b"")
    monkeypatch.delenv("OCL_ICD_FILENAMES", raising=False)
    dnnl_api._preload_runtime(str(tmp_path))
    assert os.environ["OCL_ICD_FILENAMES"] == str(tmp_path / "libintelocl.so")
    monkeypatch.setenv("OCL_ICD_FILENAMES", "/chosen/libOpenCLcpu.so")
    dnnl_api._preload_runtime(str(tmp_path))
    assert os.environ["OCL_ICD_FILENAMES"] == "/chosen/libOpenCLcpu.so"


def test_the_loaded_library_says_what_it_is():
    loaded, info, error = _child()
    if not loaded:  # no oneDNN here: nothing to describe, and a reason
        assert info is None and error
        return
    assert error is None
    assert tuple(info["version"][:2]) in dnnl_api.SUPPORTED
    assert os.path.exists(info["path"])
    assert info["cpu_runtime"] in (dnnl_api.RUNTIME_OMP, dnnl_api.RUNTIME_TBB,
                                   dnnl_api.RUNTIME_SYCL)
