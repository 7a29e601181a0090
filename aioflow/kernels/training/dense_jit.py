"""The common dense update rules (GradientDescent, Momentum, Adam, Adagrad, AdagradV2,
RMSProp) as one compiled pass over the variable and its slots, as TF's Eigen functors
run them, instead of dense_rules.py's NumPy passes (one per operation, each with its
temporary): Adam on a 784x256 kernel 0.24 ms in NumPy, 0.04 ms here.

Each loop does, element by element, the operations of its dense_rules function in the
same order and precision (no fused multiply-add: numba leaves LLVM's contraction off),
so the results are those of the NumPy rule bit for bit (tests/test_training_jit.py).
Compiled by numba (aioflow/kernels/jit.py) with error_model="numpy" (a division by zero
gives inf/NaN as NumPy's, and the loop vectorizes), on a daemon thread started when an
Apply kernel of the rule is made (aioflow/kernels/background_jit.py); until it is ready,
or for other types, a read-only gradient not compiled for, or buffers that overlap, the
NumPy rule runs. Large tensors are shared among the intra-op threads
(aioflow/kernels/element_threads.py).
"""

from __future__ import annotations

import numpy as np

from aioflow.kernels.background_jit import BackgroundCompile
from aioflow.kernels.element_threads import SPLIT_ABOVE, for_ranges
from aioflow.kernels.jit import njit

from . import dense_rules

TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _gradient_descent(var, g, alpha, lo, hi):
    w, gs = var[lo:hi], g[lo:hi]
    for i in range(gs.size):
        w[i] = w[i] - gs[i] * alpha


def _momentum(var, accum, g, lr, mom, nesterov, lo, hi):
    w, a, gs = var[lo:hi], accum[lo:hi], g[lo:hi]
    if nesterov:
        for i in range(gs.size):
            gi = gs[i]
            ai = a[i] * mom + gi
            a[i] = ai
            w[i] = w[i] - (gi * lr + ai * mom * lr)
    else:
        for i in range(gs.size):
            ai = a[i] * mom + gs[i]
            a[i] = ai
            w[i] = w[i] - ai * lr


def _adam(var, m, v, g, c1, c2, beta1, alpha, eps, nesterov, lo, hi):
    """c1 = 1 - beta1, c2 = 1 - beta2, alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t)."""
    w, ms, vs, gs = var[lo:hi], m[lo:hi], v[lo:hi], g[lo:hi]
    if nesterov:
        for i in range(gs.size):
            gi = gs[i]
            mi = ms[i] + (gi - ms[i]) * c1
            ms[i] = mi
            vi = vs[i] + (gi * gi - vs[i]) * c2
            vs[i] = vi
            w[i] = w[i] - (gi * c1 + beta1 * mi) * alpha / (np.sqrt(vi) + eps)
    else:
        for i in range(gs.size):
            gi = gs[i]
            mi = ms[i] + (gi - ms[i]) * c1
            ms[i] = mi
            vi = vs[i] + (gi * gi - vs[i]) * c2
            vs[i] = vi
            w[i] = w[i] - mi * alpha / (np.sqrt(vi) + eps)


def _adagrad(var, accum, g, lr, eps, update_slots, with_eps, lo, hi):
    """AdagradV2 when `with_eps` (sqrt(accum) + eps), Adagrad else."""
    w, a, gs = var[lo:hi], accum[lo:hi], g[lo:hi]
    for i in range(gs.size):
        gi = gs[i]
        ai = a[i]
        if update_slots:
            ai = ai + gi * gi
            a[i] = ai
        if with_eps:
            w[i] = w[i] - gi * lr / (np.sqrt(ai) + eps)
        else:
            w[i] = w[i] - gi * lr / np.sqrt(ai)


def _rms_prop(var, ms, mom, g, c, momentum, lr, eps, lo, hi):
    """c = 1 - rho."""
    w, s, mo, gs = var[lo:hi], ms[lo:hi], mom[lo:hi], g[lo:hi]
    for i in range(gs.size):
        gi = gs[i]
        si = s[i] + (gi * gi - s[i]) * c
        s[i] = si
        mi = mo[i] * momentum + gi * lr / np.sqrt(si + eps)
        mo[i] = mi
        w[i] = w[i] - mi


class _Fused:
    """One rule's compiled loop: `scalars(h)` gives its scalar arguments from the
    kernel's hyper-parameters, computed as the NumPy rule computes them."""

    def __init__(self, name: str, fn, n_bufs: int, scalars):
        self.loop = njit(fn, error_model="numpy")
        self.n_bufs = n_bufs
        self.scalars = scalars
        self.group = BackgroundCompile(f"apply-{name}", self._warm_up, self.loop is not None)
        self.wanted = False  # an Apply kernel of the rule was made
        self.ready = False

    def _warm_up(self) -> None:
        """Compile float32 and float64, a writable or read-only gradient."""
        for t in TYPES:
            h = {k: t.type(0.5) for k in ("alpha", "lr", "momentum", "beta1", "beta2",
                                           "epsilon", "beta1_power", "beta2_power", "rho")}
            h.update(use_nesterov=False, update_slots=True)
            for writeable in (True, False):
                g = np.ones(1, t)
                g.flags.writeable = writeable
                bufs = [np.ones(1, t) for _ in range(self.n_bufs)]
                self.loop(*bufs, g, *self.scalars(h), 0, 1)

    def start(self) -> None:
        self.wanted = True
        self.group.start()

    def __call__(self, bufs, h, grad) -> bool:
        """Apply the rule in one pass; False (nothing done) where the NumPy rule must:
        not compiled (yet), another type or layout, or overlapping buffers."""
        if not self.ready:
            if not self.group.ready():
                return False
            self.ready = True  # a compiled group stays compiled
        dtype = grad.dtype
        if dtype not in TYPES:
            return False
        arrays = (*bufs, grad)
        owners = 0  # arrays that own their data
        for a in arrays:
            if a.dtype != dtype or not a.flags.c_contiguous:
                return False
            if a.base is None:
                owners += 1
        if (owners < len(arrays) or len(set(map(id, arrays))) < owners) and \
                _may_overlap(arrays):
            return False
        flat = [a if a.ndim == 1 else a.reshape(-1) for a in arrays]
        scalars = self.scalars(h)
        loop = self.loop
        if grad.size <= SPLIT_ABOVE:
            loop(*flat, *scalars, 0, grad.size)
        else:
            for_ranges(grad.size, lambda lo, hi: loop(*flat, *scalars, lo, hi))
        return True


def _may_overlap(arrays) -> bool:
    """Whether any two of the arrays may share memory (the caller skips the test when
    they are distinct arrays that all own their data: such arrays never do)."""
    return any(np.may_share_memory(a, b)
               for i, a in enumerate(arrays) for b in arrays[i + 1:])


def _adam_scalars(h):
    return (1 - h["beta1"], 1 - h["beta2"], h["beta1"], dense_rules._adam_alpha(h),
            h["epsilon"], bool(h["use_nesterov"]))


FUSED = {
    dense_rules.gradient_descent: _Fused(
        "gradient-descent", _gradient_descent, 1, lambda h: (h["alpha"],)),
    dense_rules.momentum: _Fused(
        "momentum", _momentum, 2,
        lambda h: (h["lr"], h["momentum"], bool(h["use_nesterov"]))),
    dense_rules.adam: _Fused("adam", _adam, 3, _adam_scalars),
    dense_rules.adagrad: _Fused(
        "adagrad", _adagrad, 2,
        lambda h: (h["lr"], h["lr"], bool(h["update_slots"]), False)),
    dense_rules.adagrad_v2: _Fused(
        "adagrad-v2", _adagrad, 2,
        lambda h: (h["lr"], h["epsilon"], bool(h["update_slots"]), True)),
    dense_rules.rms_prop: _Fused(
        "rms-prop", _rms_prop, 3,
        lambda h: (1 - h["rho"], h["momentum"], h["lr"], h["epsilon"])),
}


def fused_for(rule_fn) -> _Fused | None:
    """The compiled form of a dense rule, its compile started; None for a rule without
    one (or without numba)."""
    fused = FUSED.get(rule_fn)
    if fused is None or fused.loop is None:
        return None
    fused.start()
    return fused


def wait_ready(timeout: float | None = None) -> bool:
    """Wait for the loops whose compile has started (benchmarks time the compiled
    steady state; kernels never wait); whether all of them are compiled."""
    return all(f.group.wait_ready(timeout) for f in FUSED.values() if f.wanted)
