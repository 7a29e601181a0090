"""The gradient checker (TF 1.x's tf.test.compute_gradient / compute_gradient_error): the
Jacobian af.gradients builds (one run per element of y, dy one-hot) beside the Jacobian
of central differences (two runs per element of x), both through the default session
(a blocking one: tf.Session of aioflow.compat.v1, or af.SyncSession)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, ops
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.gradients.gradients_util import gradients
from aioflow.ops import array_ops, math_ops
from aioflow.ops.constant_op import constant


def _product(shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1


def _session(session):
    session = session if session is not None else ops.get_default_session()
    if session is None:
        raise ValueError("compute_gradient needs a blocking default session: run it inside "
                         "`with tf.Session() as sess:` (aioflow.compat.v1) or pass session=")
    return session


def _feeds(extra, feeds) -> dict:
    return {**(extra or {}), **feeds}


def _theoretical_jacobian(sess, x, x_shape, x_data, dy, dy_shape, dx, extra):
    if x.dtype.is_complex:
        x_shape = tuple(x_shape) + (2,)
    dy_factor = 2 if dy.dtype.is_complex else 1
    x_size = _product(x_shape)
    x_val_size = _product(x_shape[1:])
    dy_size = _product(dy_shape) * dy_factor
    jacobian = np.zeros((x_size, dy_size), dtype=x.dtype.real_dtype.as_numpy_dtype)
    dy_data = np.zeros(dy_shape, dtype=dy.dtype.as_numpy_dtype)
    dy_flat = dy_data.ravel().view(dy.dtype.real_dtype.as_numpy_dtype)
    for col in range(dy_size):
        dy_flat[col] = 1
        feed = _feeds(extra, {x: x_data, dy: dy_data})
        if isinstance(dx, IndexedSlices):
            indices, values = sess.run([dx.indices, dx.values], feed)
            for i, v in zip(indices, values, strict=True):
                begin = int(i) * x_val_size
                jacobian[begin:begin + x_val_size, col] += np.ravel(v)
        else:
            backprop = np.asarray(sess.run(dx, feed))
            jacobian[:, col] = backprop.ravel().view(jacobian.dtype)
        dy_flat[col] = 0
    if not dy_size:
        backprop = sess.run(dx, _feeds(extra, {x: x_data, dy: dy_data}))
        if np.asarray(backprop).shape != tuple(x_shape):
            raise ValueError(f"Empty gradient has wrong shape: expected {x_shape}, got "
                             f"{np.asarray(backprop).shape}")
        if np.any(backprop):
            raise ValueError("Empty tensor with nonzero gradients")
    return jacobian


def _numeric_jacobian(sess, x, x_shape, x_data, y, y_shape, delta, extra):
    if x.dtype == dtypes.bfloat16:
        x = math_ops.cast(x, dtypes.float32)
    if y.dtype == dtypes.bfloat16:
        y = math_ops.cast(y, dtypes.float32)
    x_size = _product(x_shape) * (2 if x.dtype.is_complex else 1)
    y_size = _product(y_shape) * (2 if y.dtype.is_complex else 1)
    x_dtype = x.dtype.real_dtype.as_numpy_dtype
    y_dtype = y.dtype.real_dtype.as_numpy_dtype
    x_data = np.asarray(x_data, dtype=x.dtype.as_numpy_dtype)
    scale = np.asarray(2 * delta, dtype=y_dtype)[()]
    jacobian = np.zeros((x_size, y_size), dtype=x_dtype)
    for row in range(x_size):
        x_pos = x_data.copy()
        x_neg = x_data.copy()
        x_pos.ravel().view(x_dtype)[row] += delta
        y_pos = np.asarray(sess.run(y, _feeds(extra, {x: x_pos})))
        x_neg.ravel().view(x_dtype)[row] -= delta
        y_neg = np.asarray(sess.run(y, _feeds(extra, {x: x_neg})))
        diff = (y_pos - y_neg) / scale
        jacobian[row, :] = diff.ravel().view(y_dtype)
    return jacobian


def _compute_dx_and_dy(x, y, y_shape):
    with x.graph.as_default():
        dy_orig = constant(1.0, shape=y_shape, dtype=y.dtype)
        dy = array_ops.identity(dy_orig)
    grads = gradients(y, x, dy)
    return grads[0], dy_orig


def _compute_gradient(sess, x, x_shape, dx, y, y_shape, dy, x_init_value, delta, extra):
    t = dtypes.as_dtype(x.dtype)
    allowed = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
               dtypes.complex64, dtypes.complex128)
    if t not in allowed:
        raise TypeError(f"x has type {t.name}, which is not a differentiable type")
    if dtypes.as_dtype(y.dtype) not in allowed:
        raise TypeError(f"y has type {y.dtype.name}, which is not a differentiable type")
    if x_init_value is not None:
        x_data = np.asarray(x_init_value, dtype=t.as_numpy_dtype)
        if x_data.shape != tuple(x_shape):
            raise ValueError(f"x_init_value shape {x_data.shape} does not match x_shape "
                             f"{tuple(x_shape)}")
    else:
        x_data = np.random.random_sample(x_shape).astype(t.as_numpy_dtype)
        if t.is_complex:
            x_data.imag = np.random.random_sample(x_shape)
    jacob_t = _theoretical_jacobian(sess, x, x_shape, x_data, dy, y_shape, dx, extra)
    jacob_n = _numeric_jacobian(sess, x, x_shape, x_data, y, y_shape, delta, extra)
    return jacob_t, jacob_n


def compute_gradient(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3,
                     init_targets=None, extra_feed_dict=None, session=None):
    """(theoretical, numerical) Jacobians of y with respect to x (for a list of xs: a
    list of such pairs), each of shape [x size, y size]."""
    sess = _session(session)
    if init_targets is not None:
        sess.run(init_targets)
    if isinstance(x, list):
        dx, dy = _compute_dx_and_dy_list(x, y, y_shape)
        if x_init_value is None:
            x_init_value = [None] * len(x)
        return [_compute_gradient(sess, xi, xi_shape, dxi, y, y_shape, dy, xi_init, delta,
                                  extra_feed_dict)
                for xi, xi_shape, dxi, xi_init in zip(x, x_shape, dx, x_init_value,
                                                      strict=True)]
    dx, dy = _compute_dx_and_dy(x, y, y_shape)
    return _compute_gradient(sess, x, x_shape, dx, y, y_shape, dy, x_init_value, delta,
                             extra_feed_dict)


def _compute_dx_and_dy_list(xs, y, y_shape):
    with xs[0].graph.as_default():
        dy_orig = constant(1.0, shape=y_shape, dtype=y.dtype)
        dy = array_ops.identity(dy_orig)
    return gradients(y, xs, dy), dy_orig


def compute_gradient_error(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3,
                           init_targets=None, extra_feed_dict=None, session=None):
    """The largest absolute difference between the theoretical and numerical Jacobians."""
    grad = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets,
                            extra_feed_dict, session)
    if isinstance(grad, tuple):
        grad = [grad]
    error = 0
    for j_t, j_n in grad:
        if j_t.size or j_n.size:
            error = np.maximum(error, np.fabs(j_t - j_n).max())
    return error
