"""The fused ops' epilogue (a bias or a folded batch norm, then Relu or Relu6), compiled by
numba when it is installed (aioflow/kernels/jit.py): one pass over a block of output while it is
in cache, instead of one NumPy pass per step (multiply, add, maximum, minimum), which cost
more than the depthwise convolution itself (112x112x32: 0.18 ms convolution, +0.4 ms
epilogue). Same operations in the same order as the NumPy path, NaN kept as np.maximum
and np.minimum keep it."""

from __future__ import annotations

import threading

import numpy as np

from aioflow.kernels.jit import njit


def _scale_bias_clip(y, scale, bias, lo, hi, use_scale):
    """y (rows, C) in place: (y * scale if use_scale) + bias, clipped to [lo, hi]."""
    rows, c = y.shape
    for r in range(rows):
        row = y[r]
        if use_scale:
            for ch in range(c):
                row[ch] = row[ch] * scale[ch]
        for ch in range(c):
            v = row[ch] + bias[ch]
            if v < lo:
                v = lo
            if v > hi:
                v = hi
            row[ch] = v


_compiled = njit(_scale_bias_clip)


def available() -> bool:
    """Whether numba can compile the loop (else the caller keeps its NumPy path)."""
    return _compiled is not None


_ready = threading.Event()
_finished = threading.Event()  # the last compile attempt ended, compiled or not
_started = False
_attempts = 0
_MAX_ATTEMPTS = 3  # a failed compile is tried again on a later call, this many times
last_error: Exception | None = None  # why the last attempt failed (None: it did not)


def ready() -> bool:
    """Whether the loop is compiled for float32 and float64, writeable and read-only
    scale and bias (callers run NumPy's passes until then, and call
    compile_in_background)."""
    return _ready.is_set()


def compile_in_background() -> None:
    """Compile the loop for float32 and float64 on a daemon thread, once. Callers never
    wait for it (nor send their kernel to the pool for it): a kernel that said
    "expensive" only while the loop compiled made concurrent runs fall back from their
    compiled segment for good (a served MLP ran node by node: +8 µs a run)."""
    global _started, _attempts
    if _started or _compiled is None or _attempts >= _MAX_ATTEMPTS:
        return
    _started = True
    _attempts += 1
    _finished.clear()
    threading.Thread(target=_compile, name="aioflow-epilogue-jit", daemon=True).start()


def _compile() -> None:
    global _started, last_error
    try:
        for t in (np.float32, np.float64):
            y = np.zeros((1, 1), t)
            # scale and bias writeable or read-only (a Const's value is read-only): each
            # combination is a signature of its own
            for scale_ro, bias_ro in ((False, False), (True, True), (False, True),
                                      (True, False)):
                scale, bias = np.zeros(1, t), np.zeros(1, t)
                scale.flags.writeable, bias.flags.writeable = not scale_ro, not bias_ro
                _compiled(y, scale, bias, t(0), t(1), False)
        # No later call compiles (nor opens numba's cache files: at the descriptor limit
        # that open fails): one that matches neither signature runs NumPy's passes.
        _compiled.freeze()
        _ready.set()
    except Exception as e:  # noqa: BLE001 - numba could not compile: NumPy's passes stay
        last_error = e
        _started = False  # (a later call tries again, up to _MAX_ATTEMPTS in all)
    finally:
        _finished.set()


def wait_ready(timeout: float | None = None) -> bool:
    """Start the compile if needed and wait for it to end (tests, and warm-ups that may
    block); whether the loop is compiled."""
    compile_in_background()
    _finished.wait(timeout)
    return _ready.is_set()


def wait_started(timeout: float | None = None) -> bool:
    """Wait for a compile already started to end, starting none (a model server, before
    it freezes what it has loaded out of the collector's way: numba's objects too);
    whether the loop is compiled."""
    if _started:
        _finished.wait(timeout)
    return _ready.is_set()


def scale_bias_clip(y, scale, bias, lo: float, hi: float) -> bool:
    """y (rows, C), C-contiguous, in place; scale None for a plain bias. False (y
    untouched) when the arrays match no compiled signature (a bias that is not
    contiguous, or not of y's type): the caller runs NumPy's passes."""
    t = y.dtype.type  # bounds in the block's type: the loop stays in that type
    try:
        if scale is None:
            _compiled(y, bias, bias, t(lo), t(hi), False)
        else:
            _compiled(y, scale, bias, t(lo), t(hi), True)
    except TypeError:  # (compiling is disabled: no matching definition)
        return False
    return True
