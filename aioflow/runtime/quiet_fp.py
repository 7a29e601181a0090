"""Floating-point errors as values while kernels run: TF yields inf and NaN silently, so
the executor runs kernels under NumPy's `errstate(all="ignore")`.

Entering `np.errstate` costs ~0.75 µs, a tenth of a small run; NumPy keeps the mode in
a context variable, so `quiet()` sets that variable to the ignoring mode directly
(~0.2 µs) and `restore(token)` resets it. Where NumPy has no such variable (before
2.0), they enter and leave an errstate instead.
"""

from __future__ import annotations

import numpy as np

try:  # NumPy >= 2: the mode is a context variable holding an opaque capsule
    from numpy._core._ufunc_config import _extobj_contextvar as _MODE

    with np.errstate(all="ignore"):
        _IGNORE = _MODE.get()
except (ImportError, AttributeError):  # pragma: no cover - depends on NumPy's version
    _MODE = None


if _MODE is not None:
    def quiet():
        """Ignore floating-point errors from here; the token for `restore`."""
        return _MODE.set(_IGNORE)

    restore = _MODE.reset
else:  # pragma: no cover - depends on NumPy's version
    def quiet():
        """Ignore floating-point errors from here; the token for `restore`."""
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def restore(token) -> None:
        """Put back the mode in force before `quiet()` returned `token`."""
        token.__exit__(None, None, None)
