"""A ctypes binding to oneDNN 3.x's C API (libdnnl.so.3): the library found and loaded,
the entry points aioflow's oneDNN kernels call with their C signatures, the enum values
they pass, and oneDNN's status codes as exceptions.

Two wheels install a libdnnl.so.3 (`_WHEELS`; found through each wheel's RECORD):

* `onednn-cpu-gomp` (the `aioflow[onednn]` extra): oneDNN 3.2, CPU only, threaded with
  OpenMP (the system's libgomp); one 54 MB library.
* `onednn` (Intel's oneAPI build; no extra installs it: docs/onednn.md says why):
  oneDNN 3.11 and later, whose CPU engine is a SYCL device (its primitives run as SYCL
  host tasks threaded with TBB). It needs Intel's compiler, TBB and SYCL runtime
  libraries, which its dependencies install beside it in lib/ without a run path:
  loading preloads them by full path (`_RUNTIME_LIBRARIES`), and points the OpenCL
  loader at the wheel's CPU OpenCL runtime (OCL_ICD_FILENAMES; the ICD file the wheel
  ships names a build path), the SYCL CPU device the engine is made on. A library whose
  engine cannot be made (no CPU device) is refused.

Else the system's (ctypes.util.find_library). AIOFLOW_ONEDNN_LIBRARY chooses one: a
wheel's name or a path to libdnnl.so.3 (else the first that loads, in `_WHEELS`' order;
Intel's `onednn` only when named: see _WHEELS).
Enum values and struct layouts may change between oneDNN versions: the values below are
the same in the headers of every version in `SUPPORTED` (compiled and compared: 3.2's
onednn-devel-cpu-gomp, 3.11's and 3.13's onednn-devel), and any other version is
refused. Setting AIOFLOW_ONEDNN=0 turns the binding (and so the backend) off.
Loading sets OMP_WAIT_POLICY=PASSIVE for the gomp wheel's OpenMP runtime unless the
environment chose a wait policy (`_passive_openmp`).

`load()` returns the loaded library or None (with `load_error()` saying why); nothing
here raises at import.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import POINTER, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t, c_uint, c_void_p

# -- enum values (dnnl_types.h / dnnl_common_types.h; equal in every SUPPORTED version) ---------

SUCCESS = 0
STATUS_NAMES = {1: "out_of_memory", 2: "invalid_arguments", 3: "unimplemented",
                4: "last_impl_reached", 5: "runtime_error", 6: "not_required",
                7: "invalid_graph"}
OUT_OF_MEMORY, INVALID_ARGUMENTS, UNIMPLEMENTED = 1, 2, 3

# data types
F16, BF16, F32, S32 = 1, 2, 3, 4
# format tags
FORMAT_ANY = 1
TAG_X = 2
# engine and stream
ENGINE_CPU = 1
STREAM_DEFAULT_FLAGS = 1
# propagation kinds
FORWARD_TRAINING = 64
FORWARD_INFERENCE = 96
BACKWARD = 128
BACKWARD_DATA = 160
BACKWARD_WEIGHTS = 192
# algorithm kinds
CONVOLUTION_DIRECT = 1
ELTWISE_RELU = 32
ELTWISE_ELU = 34
ELTWISE_LINEAR = 38
ELTWISE_SWISH = 44
ELTWISE_CLIP_V2 = 47
POOLING_MAX = 511
POOLING_AVG_INCLUDE_PADDING = 767
POOLING_AVG_EXCLUDE_PADDING = 1023
BINARY_ADD = 131056
BINARY_MUL = 131057
# execution argument indices
ARG_SRC = 1
ARG_SRC_1 = 2
ARG_DST = 17
ARG_WEIGHTS = 33
ARG_BIAS = 41
ARG_MEAN = 49
ARG_VARIANCE = 50
ARG_SCALE = 51
ARG_SHIFT = 52
ARG_WORKSPACE = 64
ARG_SCRATCHPAD = 80
ARG_DIFF_SRC = 129
ARG_DIFF_DST = 145
ARG_DIFF_WEIGHTS = 161
ARG_DIFF_BIAS = 169
ARG_DIFF_SCALE = 255
ARG_DIFF_SHIFT = 256
ARG_FROM, ARG_TO = ARG_SRC, ARG_DST
ARG_ATTR_MULTIPLE_POST_OP_BASE = 32768
# queries
QUERY_IMPL_INFO_STR = 8
QUERY_SRC_MD = 129
QUERY_DIFF_SRC_MD = 130
QUERY_WEIGHTS_MD = 131
QUERY_DIFF_WEIGHTS_MD = 132
QUERY_DST_MD = 133
QUERY_DIFF_DST_MD = 134
QUERY_WORKSPACE_MD = 135
QUERY_SCRATCHPAD_MD = 136
# scratchpad modes
SCRATCHPAD_MODE_USER = 1
# batch normalization flags
USE_GLOBAL_STATS = 1
USE_SCALE = 2
USE_SHIFT = 4
FUSE_NORM_RELU = 8

# CPU runtimes (dnnl_version_t.cpu_runtime)
RUNTIME_SEQ = 1
RUNTIME_OMP = 2
RUNTIME_TBB = 4
RUNTIME_SYCL = 512

MAX_NDIMS = 12

#: oneDNN versions (major, minor) whose headers give the values and layouts used here.
SUPPORTED = ((3, 2), (3, 11), (3, 13))
#: Wheels whose libdnnl.so.3 loads without being named, in order of preference. Intel's
#: `onednn` loads only when AIOFLOW_ONEDNN_LIBRARY names it: it is not faster, and
#: processes that ran the oneDNN tests on it crashed before the gradient primitives took
#: per-thread scratchpads (docs/onednn.md).
_WHEELS = ("onednn-cpu-gomp",)
#: The `onednn` wheel's libdnnl.so.3 needs these (its dependencies install them beside it,
#: without a run path): loaded first by full path, so that the loader finds them loaded.
_RUNTIME_LIBRARIES = ("libintlc.so.5", "libimf.so", "libsvml.so", "libirng.so", "libtbb.so.12",
                      "libsycl.so.9", "libsycl.so.8", "libOpenCL.so.1")
Dims = c_int64 * MAX_NDIMS


def post_op_arg(index: int, arg: int) -> int:
    """DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | arg: a binary post-op's second input."""
    return ARG_ATTR_MULTIPLE_POST_OP_BASE * (index + 1) | arg


def dims(values) -> Dims:
    """A dnnl_dims_t holding `values`."""
    out = Dims()
    for i, v in enumerate(values):
        out[i] = v
    return out


class Version(ctypes.Structure):
    _fields_ = [("major", c_int), ("minor", c_int), ("patch", c_int), ("hash", c_char_p),
                ("cpu_runtime", c_uint), ("gpu_runtime", c_uint)]


class ExecArg(ctypes.Structure):
    """dnnl_exec_arg_t: an argument index and its memory."""

    _fields_ = [("arg", c_int), ("memory", c_void_p)]


class DnnlError(Exception):
    """A oneDNN call that did not return dnnl_success."""

    def __init__(self, function: str, status: int):
        self.function = function
        self.status = status
        super().__init__(f"oneDNN {function} failed: {STATUS_NAMES.get(status, status)}")


_P = c_void_p
_PP = POINTER(c_void_p)
_CP = POINTER(ExecArg)

#: name: argument types (every function returns dnnl_status_t unless listed in _RESTYPES).
_SIGNATURES = {
    "dnnl_engine_create": [_PP, c_int, c_size_t],
    "dnnl_engine_destroy": [_P],
    "dnnl_stream_create": [_PP, _P, c_uint],
    "dnnl_stream_wait": [_P],
    "dnnl_memory_desc_create_with_tag": [_PP, c_int, Dims, c_int, c_int],
    "dnnl_memory_desc_create_with_strides": [_PP, c_int, Dims, c_int, Dims],
    "dnnl_memory_desc_destroy": [_P],
    "dnnl_memory_desc_get_size": [_P],
    "dnnl_memory_desc_equal": [_P, _P],
    "dnnl_memory_desc_clone": [_PP, _P],
    "dnnl_memory_create": [_PP, _P, _P, _P],
    "dnnl_memory_set_data_handle": [_P, _P],
    "dnnl_memory_destroy": [_P],
    "dnnl_primitive_attr_create": [_PP],
    "dnnl_primitive_attr_destroy": [_P],
    "dnnl_primitive_attr_set_post_ops": [_P, _P],
    "dnnl_primitive_attr_set_scratchpad_mode": [_P, c_int],
    "dnnl_primitive_attr_get_scratchpad_mode": [_P, POINTER(c_int)],
    "dnnl_post_ops_create": [_PP],
    "dnnl_post_ops_destroy": [_P],
    "dnnl_post_ops_append_eltwise": [_P, c_int, c_float, c_float],
    "dnnl_post_ops_append_sum": [_P, c_float, c_int32, c_int],
    "dnnl_post_ops_append_binary": [_P, c_int, _P],
    "dnnl_convolution_forward_primitive_desc_create": [
        _PP, _P, c_int, c_int, _P, _P, _P, _P, Dims, Dims, Dims, Dims, _P],
    "dnnl_convolution_backward_data_primitive_desc_create": [
        _PP, _P, c_int, _P, _P, _P, Dims, Dims, Dims, Dims, _P, _P],
    "dnnl_convolution_backward_weights_primitive_desc_create": [
        _PP, _P, c_int, _P, _P, _P, _P, Dims, Dims, Dims, Dims, _P, _P],
    "dnnl_pooling_forward_primitive_desc_create": [
        _PP, _P, c_int, c_int, _P, _P, Dims, Dims, Dims, Dims, Dims, _P],
    "dnnl_pooling_backward_primitive_desc_create": [
        _PP, _P, c_int, _P, _P, Dims, Dims, Dims, Dims, Dims, _P, _P],
    "dnnl_batch_normalization_forward_primitive_desc_create": [
        _PP, _P, c_int, _P, _P, c_float, c_uint, _P],
    "dnnl_batch_normalization_backward_primitive_desc_create": [
        _PP, _P, c_int, _P, _P, _P, c_float, c_uint, _P, _P],
    "dnnl_reorder_primitive_desc_create": [_PP, _P, _P, _P, _P, _P],
    "dnnl_primitive_desc_query_md": [_P, c_int, c_int],
    "dnnl_primitive_desc_query": [_P, c_int, c_int, _P],
    "dnnl_primitive_desc_get_attr": [_P, _PP],
    "dnnl_primitive_desc_destroy": [_P],
    "dnnl_primitive_create": [_PP, _P],
    "dnnl_primitive_execute": [_P, _P, c_int, _CP],
    "dnnl_primitive_destroy": [_P],
    "dnnl_version": [],
    "dnnl_get_effective_cpu_isa": [],
}
_RESTYPES = {"dnnl_memory_desc_get_size": c_size_t, "dnnl_memory_desc_equal": c_int,
             "dnnl_primitive_desc_query_md": c_void_p, "dnnl_version": POINTER(Version)}

_lib = None
_error: str | None = None
_loaded = False
#: What loaded: {"path", "wheel", "version", "cpu_runtime", "isa"} (None before or without).
_info: dict | None = None


def _wheel_library(wheel: str) -> str | None:
    """The libdnnl.so.3 that `wheel` installed, or None."""
    try:
        from importlib import metadata

        dist = metadata.distribution(wheel)
    except Exception:  # noqa: BLE001 - not installed
        return None
    for f in dist.files or ():
        if f.name == "libdnnl.so.3":
            return str(dist.locate_file(f))
    return None


def _candidates() -> list[tuple[str, str | None]]:
    """(path of a libdnnl.so.3, the wheel that installed it or None): the one
    AIOFLOW_ONEDNN_LIBRARY names, else each wheel's, then the system's."""
    chosen = os.environ.get("AIOFLOW_ONEDNN_LIBRARY", "").strip()
    if chosen:
        if os.sep in chosen:
            return [(chosen, None)]
        path = _wheel_library(chosen)
        return [(path, chosen)] if path else []
    paths = [(path, wheel) for wheel in _WHEELS if (path := _wheel_library(wheel))]
    found = ctypes.util.find_library("dnnl")
    if found:
        paths.append((found, None))
    return paths


def _preload_runtime(folder: str) -> None:
    """Load the runtime libraries found in `folder` (a wheel's lib/) by full path, and
    point the OpenCL loader at its CPU OpenCL runtime: the `onednn` wheel's needs."""
    for name in _RUNTIME_LIBRARIES:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    ocl = os.path.join(folder, "libintelocl.so")
    if os.path.exists(ocl) and "OCL_ICD_FILENAMES" not in os.environ:
        os.environ["OCL_ICD_FILENAMES"] = ocl


def _bind(lib) -> None:
    for name, argtypes in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = _RESTYPES.get(name, c_int)


def _open(path: str, wheel: str | None):
    """The library at `path` bound, or a string saying why not."""
    try:
        if os.path.dirname(path):
            _preload_runtime(os.path.dirname(path))
        lib = ctypes.CDLL(path)
        _bind(lib)
    except (OSError, AttributeError) as e:
        return f"{path}: {e}"
    v = lib.dnnl_version().contents
    if (v.major, v.minor) not in SUPPORTED:
        known = ", ".join(f"{a}.{b}" for a, b in SUPPORTED)
        return f"{path}: oneDNN {v.major}.{v.minor}.{v.patch}, not one of {known}"
    engine = c_void_p()
    status = lib.dnnl_engine_create(ctypes.byref(engine), ENGINE_CPU, 0)
    if status != SUCCESS:  # a SYCL build without a CPU device
        return (f"{path}: oneDNN {v.major}.{v.minor}.{v.patch} makes no CPU engine "
                f"({STATUS_NAMES.get(status, status)}; CPU runtime {v.cpu_runtime:#x})")
    lib.dnnl_engine_destroy(engine)
    global _info
    _info = {"path": path, "wheel": wheel, "version": (v.major, v.minor, v.patch),
             "cpu_runtime": v.cpu_runtime, "isa": lib.dnnl_get_effective_cpu_isa()}
    return lib


def load():
    """The oneDNN library with its signatures bound, or None (AIOFLOW_ONEDNN=0, not
    installed, or an unsupported version: `load_error()` says which)."""
    global _lib, _error, _loaded
    if _loaded:
        return _lib
    _loaded = True
    if os.environ.get("AIOFLOW_ONEDNN", "1").strip().lower() in ("0", "false", "off", "no"):
        _error = "turned off by AIOFLOW_ONEDNN"
        return None
    _passive_openmp()
    errors = []
    for path, wheel in _candidates():
        lib = _open(path, wheel)
        if isinstance(lib, str):
            errors.append(lib)
            continue
        _lib = lib
        return lib
    _error = "; ".join(errors) or "libdnnl.so.3 not found (pip install aioflow[onednn])"
    return None


def _passive_openmp() -> None:
    """OMP_WAIT_POLICY=PASSIVE unless the environment sets a wait policy or libgomp is
    loaded already (it reads the variable once, when it loads): a thread of an OpenMP
    team that waits at a barrier then sleeps instead of spinning. Measured on a busy
    machine (2 cores, load 10): spinning team threads took the core the thread they wait
    for needs, and a 0.1 ms convolution took 15-30 ms; passive, 0.2 ms."""
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return
    try:
        with open("/proc/self/maps") as maps:
            if "libgomp" in maps.read():
                return
    except OSError:
        pass
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


def load_error() -> str | None:
    """Why load() returned None (None when it loaded or was not tried)."""
    return _error


def version() -> tuple[int, int, int] | None:
    """The loaded oneDNN's (major, minor, patch), or None."""
    return _info["version"] if load() is not None else None


def info() -> dict | None:
    """What loaded: {"path", "wheel", "version", "cpu_runtime", "isa"} (dnnl_cpu_isa_t),
    or None."""
    return _info if load() is not None else None


def openmp() -> bool:
    """Whether the loaded library threads its primitives with OpenMP (the gomp wheel:
    omp_set_num_threads sets a primitive's team); else TBB's (the SYCL build), whose
    primitives take every core's worker and share them with each other."""
    return load() is not None and _info["cpu_runtime"] == RUNTIME_OMP


def check(status: int, function: str) -> None:
    if status != SUCCESS:
        raise DnnlError(function, status)


def call(name: str, *args) -> None:
    """lib.name(*args), raising DnnlError unless it succeeds (the loaded library)."""
    status = getattr(_lib, name)(*args)
    if status != SUCCESS:
        raise DnnlError(name, status)
