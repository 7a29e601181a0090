"""Updating rows of a variable: how the SparseApply* kernels walk `indices`, and the rules
whose sparse formula differs from the dense one in TF's kernels (RMSProp, centered
RMSProp, AdagradDA, Ftrl's linear term).

TF applies the rows in the order of `indices`, so a row named twice is updated twice,
the second time from the first's result. Here the positions are split into rounds: round
k holds every index's k-th occurrence, in order; a round names each row once, so it is
one vectorized update of those rows. One round when the indices are distinct.
"""

from __future__ import annotations

import numpy as np

from . import dense_rules


def rounds(indices: np.ndarray) -> list:
    """Positions of `indices` in rounds of distinct rows (see the module docstring)."""
    n = indices.size
    if n <= 1:
        return [slice(None)]
    order = np.argsort(indices, kind="stable")
    ordered = indices[order]
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    if starts.all():
        return [slice(None)]
    group_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    occurrence = np.empty(n, dtype=np.int64)
    occurrence[order] = np.arange(n) - group_start
    return [np.flatnonzero(occurrence == k) for k in range(int(occurrence.max()) + 1)]


def update_rows(rule, bufs: list[np.ndarray], h: dict, grad: np.ndarray,
                indices: np.ndarray) -> None:
    """`rule` on the rows `indices` of each buffer, with `grad`'s rows, in TF's order."""
    for sel in rounds(indices):
        rows_at = indices[sel]
        rows = [b[rows_at] for b in bufs]
        rule(rows, h, grad[sel])
        for b, r in zip(bufs, rows, strict=True):
            b[rows_at] = r


def rms_prop(b, h, g) -> None:
    var, ms, mom = b
    rho = h["rho"]
    ms[...] = ms * rho + np.square(g) * (1 - rho)
    mom[...] = mom * h["momentum"] + 1 / np.sqrt(ms + h["epsilon"]) * h["lr"] * g
    var -= mom


def centered_rms_prop(b, h, g) -> None:
    var, mg, ms, mom = b
    rho = h["rho"]
    ms[...] = ms * rho + np.square(g) * (1 - rho)
    mg[...] = mg * rho + g * (1 - rho)
    denom = ms + h["epsilon"] - np.square(mg)
    mom[...] = mom * h["momentum"] + 1 / np.sqrt(denom) * h["lr"] * g
    var -= mom


def adagrad_da(b, h, g) -> None:
    """TF's sparse AdagradDA: rows of a matrix in the variable's dtype; elements of a
    vector (one element per row) in double precision."""
    var, ga, gga = b
    if h["vector"]:
        _adagrad_da_vector(var, ga, gga, h, g)
        return
    lr, l1, l2 = h["lr"], h["l1"], h["l2"]
    step = var.dtype.type(h["global_step"])
    gs_lr = step * lr
    ga += g
    gga += np.square(g)
    denom = l2 + np.sqrt(gga) / gs_lr
    if l1 > 0:
        var[...] = -1 * _sign(ga) * np.maximum(np.abs(ga) / step - l1, 0) / denom
    else:
        var[...] = -1 * (ga / step) / denom


def _adagrad_da_vector(var, ga, gga, h, g) -> None:
    lr, l1, l2 = (np.float64(h[k]) for k in ("lr", "l1", "l2"))
    step = h["global_step"]
    g = g.astype(np.float64)
    ga[...] = ga + g
    gga[...] = gga + g * g
    ga64, gga64 = ga.astype(np.float64), gga.astype(np.float64)
    denom = step * l2 * lr + np.sqrt(gga64)
    if l1 > 0:
        var[...] = _sign(-ga64) * lr * np.maximum(np.abs(ga64) - step * l1, 0.0) / denom
    else:
        var[...] = (-ga64 * lr) / denom


def _sign(x):
    return np.sign(x)


def ftrl(b, h, g) -> None:
    """TF's sparse Ftrl: the dense formula with the l1 term as a clip."""
    var, accum, linear = b
    lr, l1, l2, power = h["lr"], h["l1"], h["l2"], h["lr_power"]
    shrinkage = h.get("l2_shrinkage")
    g_lin = g if shrinkage is None else g + 2 * shrinkage * var
    new_accum = accum + np.square(g)
    powered_new = dense_rules._powered(new_accum, power)
    sigma = powered_new - dense_rules._powered(accum, power)
    if h["multiply_linear_by_lr"]:
        linear += g_lin * lr - sigma * var
        l1_eff, quadratic = l1 * lr, powered_new + 2 * l2 * lr
    else:
        linear += g_lin - sigma / lr * var
        l1_eff, quadratic = l1, powered_new / lr + 2 * l2
    var[...] = (np.clip(linear, -l1_eff, l1_eff) - linear) / quadratic
    accum += np.square(g)
