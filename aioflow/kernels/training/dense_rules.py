"""The dense update rules of TF's optimizer kernels (the CPU functors of
tensorflow/core/kernels/training_ops.cc), one function per rule, each updating the
variable and its slots in place, in TF's order of operations.

Each takes `b` (the variable's buffer, then its slots' buffers, in the op's input
order), `h` (the hyper-parameters by input name, scalars of the variable's dtype; the
attrs too) and `g` (the gradient, of the variable's shape). The sparse kernels apply the
same functions to the rows they update where TF's sparse formula is the same one.
"""

from __future__ import annotations

import numpy as np


def _sign(x: np.ndarray) -> np.ndarray:
    return np.sign(x)


def gradient_descent(b, h, g) -> None:
    var, = b
    var -= g * h["alpha"]


def proximal_gradient_descent(b, h, g) -> None:
    """Fobos: v = var - lr*g; var = sign(v)*max(|v| - lr*l1, 0) / (1 + lr*l2)."""
    var, = b
    lr, l1, l2 = h["alpha"], h["l1"], h["l2"]
    var -= g * lr
    if l1 > 0:
        var[...] = _sign(var) * np.maximum(np.abs(var) - lr * l1, 0) / (1 + l2 * lr)
    else:
        var /= 1 + l2 * lr


def adadelta(b, h, g) -> None:
    var, accum, accum_update = b
    lr, rho, eps = h["lr"], h["rho"], h["epsilon"]
    accum[...] = accum * rho + np.square(g) * (1 - rho)
    update = np.sqrt(accum_update + eps) / np.sqrt(accum + eps) * g
    var -= update * lr
    accum_update[...] = accum_update * rho + np.square(update) * (1 - rho)


def adagrad(b, h, g) -> None:
    var, accum = b
    if h["update_slots"]:
        accum += np.square(g)
    var -= g * h["lr"] / np.sqrt(accum)


def adagrad_v2(b, h, g) -> None:
    var, accum = b
    if h["update_slots"]:
        accum += np.square(g)
    var -= g * h["lr"] / (np.sqrt(accum) + h["epsilon"])


def proximal_adagrad(b, h, g) -> None:
    var, accum = b
    l1, l2 = h["l1"], h["l2"]
    accum += np.square(g)
    lr = h["lr"] / np.sqrt(accum)
    var -= g * lr
    if l1 > 0:
        var[...] = _sign(var) * np.maximum(np.abs(var) - lr * l1, 0) / (1 + l2 * lr)
    else:
        var[...] = var / (1 + l2 * lr)


def adagrad_da(b, h, g) -> None:
    """var = -lr*sign(ga)*max(|ga| - T*l1, 0) / (l2*T*lr + sqrt(gga)), T the global
    step (as float, TF's static_cast<float>)."""
    var, ga, gga = b
    lr, l1, l2 = h["lr"], h["l1"], h["l2"]
    step = var.dtype.type(np.float32(h["global_step"]))
    ga += g
    gga += np.square(g)
    denom = l2 * (step * lr) + np.sqrt(gga)
    if l1 > 0:
        var[...] = -lr * _sign(ga) * np.maximum(np.abs(ga) - step * l1, 0) / denom
    else:
        var[...] = -lr * ga / denom


def _powered(accum, lr_power):
    return np.sqrt(accum) if lr_power == -0.5 else np.power(accum, -lr_power)


def ftrl(b, h, g) -> None:
    """FTRL-proximal with TF's kernel's shrinkage (Ftrl: none; FtrlV2: grad + 2*s*var
    in the linear term) and its two forms (`multiply_linear_by_lr`: linear is kept
    multiplied by lr)."""
    var, accum, linear = b
    lr, l1, l2, power = h["lr"], h["l1"], h["l2"], h["lr_power"]
    shrinkage = h.get("l2_shrinkage")
    g_lin = g if shrinkage is None else g + 2 * shrinkage * var
    new_accum = accum + np.square(g)
    sigma = _powered(new_accum, power) - _powered(accum, power)
    if h["multiply_linear_by_lr"]:
        linear += g_lin * lr - sigma * var
        l1_eff, quadratic = l1 * lr, _powered(new_accum, power) + 2 * l2 * lr
    else:
        linear += g_lin - sigma / lr * var
        l1_eff, quadratic = l1, _powered(new_accum, power) / lr + 2 * l2
    pre_shrink = (l1_eff * _sign(linear) - linear) / quadratic
    var[...] = np.where(np.abs(linear) > l1_eff, pre_shrink, 0)
    accum += np.square(g)


def momentum(b, h, g) -> None:
    var, accum = b
    lr, mom = h["lr"], h["momentum"]
    accum[...] = accum * mom + g
    if h["use_nesterov"]:
        var -= g * lr + accum * mom * lr
    else:
        var -= accum * lr


def keras_momentum(b, h, g) -> None:
    var, accum = b
    lr, mom = h["lr"], h["momentum"]
    accum[...] = accum * mom - g * lr
    if h["use_nesterov"]:
        var += accum * mom - g * lr
    else:
        var += accum


def _adam_alpha(h):
    return h["lr"] * np.sqrt(1 - h["beta2_power"]) / (1 - h["beta1_power"])


def adam(b, h, g) -> None:
    var, m, v = b
    beta1, beta2, eps = h["beta1"], h["beta2"], h["epsilon"]
    alpha = _adam_alpha(h)
    m += (g - m) * (1 - beta1)
    v += (np.square(g) - v) * (1 - beta2)
    if h["use_nesterov"]:
        var -= (g * (1 - beta1) + beta1 * m) * alpha / (np.sqrt(v) + eps)
    else:
        var -= m * alpha / (np.sqrt(v) + eps)


def adam_with_amsgrad(b, h, g) -> None:
    var, m, v, vhat = b
    beta1, beta2, eps = h["beta1"], h["beta2"], h["epsilon"]
    alpha = _adam_alpha(h)
    m += (g - m) * (1 - beta1)
    v += (np.square(g) - v) * (1 - beta2)
    np.maximum(vhat, v, out=vhat)
    var -= m * alpha / (np.sqrt(vhat) + eps)


def ada_max(b, h, g) -> None:
    var, m, v = b
    beta1, beta2, eps = h["beta1"], h["beta2"], h["epsilon"]
    m += (g - m) * (1 - beta1)
    v[...] = np.maximum(beta2 * v, np.abs(g))
    var -= h["lr"] / (1 - h["beta1_power"]) * (m / (v + eps))


def rms_prop(b, h, g) -> None:
    var, ms, mom = b
    ms += (np.square(g) - ms) * (1 - h["rho"])
    mom[...] = mom * h["momentum"] + g * h["lr"] / np.sqrt(ms + h["epsilon"])
    var -= mom


def centered_rms_prop(b, h, g) -> None:
    var, mg, ms, mom = b
    rho = h["rho"]
    ms += (np.square(g) - ms) * (1 - rho)
    mg += (g - mg) * (1 - rho)
    denom = ms - np.square(mg) + h["epsilon"]
    mom[...] = mom * h["momentum"] + g * h["lr"] / np.sqrt(denom)
    var -= mom


def add_sign(b, h, g) -> None:
    var, m = b
    beta = h["beta"]
    m[...] = m * beta + g * (1 - beta)
    sign_gm = _sign(g) * _sign(m)
    var -= h["lr"] * (h["alpha"] + h["sign_decay"] * sign_gm) * g


def power_sign(b, h, g) -> None:
    var, m = b
    beta = h["beta"]
    m[...] = m * beta + g * (1 - beta)
    sign_gm = _sign(g) * _sign(m)
    var -= h["lr"] * np.exp(h["logbase"] * h["sign_decay"] * sign_gm) * g
