"""Max pooling's oneDNN workspace kept beside the forward's output, for MaxPoolGrad.

oneDNN's max pooling backward needs the forward's workspace (which tap won each window).
TF 2.21's oneDNN layout pass gets it from a second output of _MklNativeMaxPool; aioflow
keeps the graph as written instead: the forward MaxPool (pooling_onednn) runs for
training and `keep`s its workspace under its output array, and MaxPoolGrad
(pooling_grad_onednn) `take`s it when its orig_output is that very array (the same
object, shape and strides) and its orig_input the very array the forward read; anything
else (a copy, a Send/Recv, a fed value) finds nothing and recomputes the forward.
The gradient's values depend only on orig_input and grad, so the workspace gives the same
result as the recompute (the same primitive and window order: ties go to the same tap).

Entries die with the output (a weak reference's callback), so nothing outlives a step.
The forward makes a workspace only for geometries a MaxPoolGrad has asked for (`want`,
on its first recompute): an inference graph never pays for one.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

_WANTED: set = set()  # pooling geometries a MaxPoolGrad has run for
_ENTRIES: dict = {}  # id(output) -> _Entry
_LOCK = threading.Lock()


class _Entry:
    __slots__ = ("out_ref", "x_ref", "key", "ws", "ws_md")

    def __init__(self, out_ref, x_ref, key, ws, ws_md):
        self.out_ref = out_ref
        self.x_ref = x_ref
        self.key = key
        self.ws = ws
        self.ws_md = ws_md


def geometry_key(x_shape, ksizes, strides, pads) -> tuple:
    """The pooling geometry both kernels name a workspace by."""
    return (tuple(x_shape), tuple(ksizes), tuple(strides), tuple(tuple(p) for p in pads))


def want(key: tuple) -> None:
    """From now on the forward of this geometry keeps its workspace."""
    _WANTED.add(key)


def any_wanted() -> bool:
    """Whether any geometry is (an inference-only process builds no key)."""
    return bool(_WANTED)


def wanted(key: tuple) -> bool:
    return key in _WANTED


def _layout(a: np.ndarray) -> tuple:
    return (a.shape, a.strides, a.__array_interface__["data"][0])


def keep(out: np.ndarray, x: np.ndarray, key: tuple, ws: np.ndarray, ws_md) -> None:
    """Record ws (described by ws_md) as the workspace of out = max_pool(x)."""
    ident = id(out)

    def drop(ref, ident=ident):
        with _LOCK:
            entry = _ENTRIES.get(ident)
            if entry is not None and entry.out_ref is ref:
                del _ENTRIES[ident]

    entry = _Entry(weakref.ref(out, drop), (weakref.ref(x), _layout(x)),
                   (key, _layout(out)), ws, ws_md)
    with _LOCK:
        _ENTRIES[ident] = entry


def take(out: np.ndarray, x: np.ndarray, key: tuple, ws_md):
    """The workspace kept for out = max_pool(x) with this geometry and workspace layout,
    or None."""
    entry = _ENTRIES.get(id(out))
    if entry is None or entry.out_ref() is not out or entry.x_ref[0]() is not x:
        return None
    if entry.key != (key, _layout(out)) or entry.x_ref[1] != _layout(x):
        return None
    if not entry.ws_md == ws_md:
        return None
    return entry.ws


def count() -> int:
    """Live entries (tests)."""
    return len(_ENTRIES)


def clear() -> None:
    """Forget every entry and wanted geometry (tests)."""
    with _LOCK:
        _ENTRIES.clear()
    _WANTED.clear()
