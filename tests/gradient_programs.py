"""Small TF 1.x programs whose gradients TF 2.21 and aioflow build node for node.

Each ``program_*`` takes the TF-1-like module (``tensorflow.compat.v1`` in
tests/data/make_gradient_fixtures_tf.py, ``aioflow.compat.v1`` in tests/test_gradients_tf.py)
and uses only names both share. It builds a forward graph and returns a dict: ``ys``,
``xs`` (what tf.gradients is called with), ``feeds`` (placeholder -> value) and optional
``kwargs`` for tf.gradients, ``init`` (an op to run first), ``values_only`` (why the
gradient graph is not TF's, when it is not) and ``nodes_only`` (why TF's values are not
compared, when they are not). ``build`` then calls tf.gradients and notes
how many nodes the forward graph had, so the nodes tf.gradients added can be compared.
This module imports neither TensorFlow nor aioflow.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

_RNG_SEED = 1234


def _rand(*shape, low=-1.0, high=1.0, seed=0, dtype=np.float32):
    rng = np.random.default_rng(_RNG_SEED + seed)
    return rng.uniform(low, high, size=shape).astype(dtype)


def _ph(tf, shape, name, dtype=None):
    return tf.placeholder(dtype or tf.float32, shape, name=name)


# -- math -------------------------------------------------------------------------------------

def program_mlp(tf):
    x = _ph(tf, [4, 3], "x")
    labels = tf.placeholder(tf.int32, [4], name="labels")
    w1 = _ph(tf, [3, 5], "w1")
    b1 = _ph(tf, [5], "b1")
    w2 = _ph(tf, [5, 2], "w2")
    h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1))
    logits = tf.matmul(h, w2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    return {"ys": [loss], "xs": [w1, b1, w2],
            "feeds": {x: _rand(4, 3), labels: np.array([0, 1, 1, 0], np.int32),
                      w1: _rand(3, 5, seed=1), b1: _rand(5, seed=2), w2: _rand(5, 2, seed=3)}}


def program_add_broadcast_static(tf):
    x = _ph(tf, [2, 3], "x")
    b = _ph(tf, [3], "b")
    y = tf.reduce_sum((x + b) * (x - b))
    return {"ys": [y], "xs": [x, b], "feeds": {x: _rand(2, 3), b: _rand(3, seed=1)}}


def program_add_broadcast_dynamic(tf):
    x = _ph(tf, [None, 3], "x")
    b = _ph(tf, [None], "b")
    y = tf.reduce_sum(tf.add(x, b) * tf.subtract(x, b) / (tf.abs(b) + 1.0))
    return {"ys": [y], "xs": [x, b], "feeds": {x: _rand(2, 3), b: _rand(3, seed=1)}}


def program_mul_div_pow(tf):
    x = _ph(tf, [2, 3], "x")
    y = _ph(tf, [2, 1], "y")
    z = tf.multiply(x, y) + tf.div(x, y + 3.0) + tf.pow(tf.abs(x) + 1.0, y) + tf.truediv(y, 2.0)
    return {"ys": [z], "xs": [x, y], "feeds": {x: _rand(2, 3), y: _rand(2, 1, seed=1)}}


def program_maximum_minimum(tf):
    x = _ph(tf, [3, 4], "x")
    y = _ph(tf, [4], "y")
    z = tf.maximum(x, y) * tf.minimum(x, 0.25)
    return {"ys": [z], "xs": [x, y], "feeds": {x: _rand(3, 4), y: _rand(4, seed=1)}}


def program_squared_difference(tf):
    x = _ph(tf, [3, 2], "x")
    y = _ph(tf, [3, 2], "y")
    z = tf.squared_difference(x, y) + tf.squared_difference(x, 1.0)
    return {"ys": [z], "xs": [x, y], "feeds": {x: _rand(3, 2), y: _rand(3, 2, seed=1)}}


def program_unary_exp_log(tf):
    x = _ph(tf, [2, 3], "x")
    p = tf.abs(x) + 0.5
    z = tf.exp(x) + tf.log(p) + tf.sqrt(p) + tf.rsqrt(p) + tf.square(x) + tf.reciprocal(p)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(2, 3)}}


def program_unary_activations(tf):
    x = _ph(tf, [2, 3], "x")
    z = tf.tanh(x) * tf.sigmoid(x) + tf.nn.relu6(x * 8.0) + tf.nn.elu(x) + tf.nn.selu(x)
    z = z + tf.nn.softplus(x) + tf.nn.softsign(x) + tf.nn.leaky_relu(x, alpha=0.1)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(2, 3)}}


def program_trig(tf):
    x = _ph(tf, [4], "x")
    z = tf.sin(x) + tf.cos(x) + tf.tan(x) + tf.asin(x * 0.5) + tf.acos(x * 0.5) + tf.atan(x)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(4)}}


def program_hyperbolic(tf):
    x = _ph(tf, [4], "x")
    z = tf.sinh(x) + tf.cosh(x) + tf.asinh(x) + tf.atanh(x * 0.5) + tf.acosh(tf.abs(x) + 1.5)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(4)}}


def program_special(tf):
    x = _ph(tf, [4], "x")
    z = tf.log1p(tf.abs(x)) + tf.expm1(x) + tf.erf(x) + tf.lgamma(tf.abs(x) + 1.0)
    z = z + tf.negative(x) * tf.sign(x)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(4)}}


def program_atan2_xlogy(tf):
    x = _ph(tf, [3], "x")
    y = _ph(tf, [3], "y")
    z = tf.atan2(x, y) + tf.math.xlogy(x, tf.abs(y) + 1.0) + tf.math.xdivy(x, y + 2.0)
    return {"ys": [z], "xs": [x, y], "feeds": {x: _rand(3), y: _rand(3, seed=1)}}


# -- reductions -------------------------------------------------------------------------------

def program_reduce_sum_axes(tf):
    x = _ph(tf, [2, 3, 4], "x")
    z = tf.reduce_sum(x, axis=1) * 2.0
    w = tf.reduce_sum(x, axis=[0, 2], keepdims=True)
    return {"ys": [z, w], "xs": [x], "feeds": {x: _rand(2, 3, 4)}}


def program_reduce_mean(tf):
    x = _ph(tf, [3, 4], "x")
    z = tf.reduce_mean(x, axis=0) + tf.reduce_mean(x)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(3, 4)}}


def program_reduce_dynamic(tf):
    x = _ph(tf, [None, 4], "x")
    z = tf.reduce_sum(x, axis=1) + tf.reduce_mean(x, axis=1)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(3, 4)}}


def program_reduce_max_min(tf):
    x = _ph(tf, [3, 4], "x")
    z = tf.reduce_max(x, axis=1) + tf.reduce_min(x, axis=1)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(3, 4)}}


def program_reduce_prod(tf):
    x = _ph(tf, [None, 4], "x")
    z = tf.reduce_prod(x, axis=1)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(3, 4)}}


def program_cumsum_cumprod(tf):
    x = _ph(tf, [2, 5], "x")
    z = tf.cumsum(x, axis=1) + tf.cumsum(x, axis=1, exclusive=True, reverse=True)
    z = z + tf.cumprod(x + 2.0, axis=1)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(2, 5)}}


def program_add_n(tf):
    x = _ph(tf, [2, 3], "x")
    y = _ph(tf, [2, 3], "y")
    z = tf.add_n([x, y, x * y])
    return {"ys": [z], "xs": [x, y], "feeds": {x: _rand(2, 3), y: _rand(2, 3, seed=1)}}


# -- matrix products --------------------------------------------------------------------------

def program_matmul_transposes(tf):
    a = _ph(tf, [3, 2], "a")
    b = _ph(tf, [4, 3], "b")
    z = tf.matmul(a, b, transpose_a=True, transpose_b=True)
    z2 = tf.matmul(b, a)
    return {"ys": [z, z2], "xs": [a, b], "feeds": {a: _rand(3, 2), b: _rand(4, 3, seed=1)}}


def program_batch_matmul(tf):
    a = _ph(tf, [2, 3, 4], "a")
    b = _ph(tf, [2, 4, 2], "b")
    z = tf.matmul(a, b)
    return {"ys": [z], "xs": [a, b], "feeds": {a: _rand(2, 3, 4), b: _rand(2, 4, 2, seed=1)}}


def program_batch_matmul_broadcast(tf):
    a = _ph(tf, [2, 3, 4], "a")
    b = _ph(tf, [4, 2], "b")
    z = tf.matmul(a, b)
    return {"ys": [z], "xs": [a, b], "feeds": {a: _rand(2, 3, 4), b: _rand(4, 2, seed=1)}}


# -- array ------------------------------------------------------------------------------------

def program_reshape_transpose(tf):
    x = _ph(tf, [2, 3, 4], "x")
    z = tf.transpose(tf.reshape(x, [6, 4]), [1, 0])
    z = tf.squeeze(tf.expand_dims(z, 0), [0])
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(2, 3, 4)}}


def program_reshape_unknown(tf):
    x = _ph(tf, [None, 6], "x")
    z = tf.reshape(x, [-1, 2, 3]) * 2.0
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(2, 6)}}


def program_concat(tf):
    x = _ph(tf, [2, 3], "x")
    y = _ph(tf, [2, 2], "y")
    w = _ph(tf, [2, 1], "w")
    z = tf.concat([x, y, w], axis=1) * 3.0
    z2 = tf.concat([x, x], axis=0)
    return {"ys": [z, z2], "xs": [x, y, w],
            "feeds": {x: _rand(2, 3), y: _rand(2, 2, seed=1), w: _rand(2, 1, seed=2)}}


def program_stack_unstack(tf):
    x = _ph(tf, [2, 3], "x")
    y = _ph(tf, [2, 3], "y")
    s = tf.stack([x, y], axis=1)
    a, b = tf.unstack(s * s, axis=1)
    return {"ys": [a + 2.0 * b], "xs": [x, y], "feeds": {x: _rand(2, 3), y: _rand(2, 3, seed=1)}}


def program_slice_strided(tf):
    x = _ph(tf, [4, 5], "x")
    z = tf.slice(x, [1, 0], [2, 3]) * 2.0
    w = x[1:3, ::2] + x[0, 1]
    return {"ys": [z, w], "xs": [x], "feeds": {x: _rand(4, 5)}}


def program_gather_embedding(tf):
    params = _ph(tf, [5, 3], "params")
    ids = tf.placeholder(tf.int32, [4], name="ids")
    z = tf.gather(params, ids) * 2.0
    return {"ys": [z], "xs": [params],
            "feeds": {params: _rand(5, 3), ids: np.array([0, 3, 3, 1], np.int32)}}


def program_gather_then_dense(tf):
    params = _ph(tf, [5, 3], "params")
    ids = tf.placeholder(tf.int32, [2], name="ids")
    z = tf.gather(params, ids) + tf.reduce_sum(params * params)
    return {"ys": [z], "xs": [params],
            "feeds": {params: _rand(5, 3), ids: np.array([4, 0], np.int32)}}


def program_gather_axis1(tf):
    params = _ph(tf, [3, 4], "params")
    ids = tf.placeholder(tf.int32, [2], name="ids")
    z = tf.gather(params, ids, axis=1)
    return {"ys": [z], "xs": [params],
            "feeds": {params: _rand(3, 4), ids: np.array([3, 1], np.int32)}}


def program_gather_nd(tf):
    params = _ph(tf, [3, 4], "params")
    z = tf.gather_nd(params, [[0, 1], [2, 3]])
    return {"ys": [z], "xs": [params], "feeds": {params: _rand(3, 4)}}


def program_tile_pad_reverse(tf):
    x = _ph(tf, [2, 3], "x")
    z = tf.tile(x, [2, 1]) * 2.0
    p = tf.pad(x, [[1, 0], [0, 2]])
    r = tf.reverse(x, [1])
    return {"ys": [z, p, r], "xs": [x], "feeds": {x: _rand(2, 3)}}


def program_mirror_pad(tf):
    x = _ph(tf, [3, 3], "x")
    z = tf.pad(x, [[1, 1], [2, 0]], mode="REFLECT") + 0.0
    w = tf.pad(x, [[1, 2], [0, 1]], mode="SYMMETRIC")
    return {"ys": [z, w], "xs": [x], "feeds": {x: _rand(3, 3)}}


def program_split(tf):
    x = _ph(tf, [4, 6], "x")
    a, b = tf.split(x, 2, axis=1)
    c, d = tf.split(x, [1, 3], axis=0)
    return {"ys": [a * b, tf.reduce_sum(c) + tf.reduce_sum(d * d)], "xs": [x],
            "feeds": {x: _rand(4, 6)}}


def program_select(tf):
    x = _ph(tf, [2, 3], "x")
    y = _ph(tf, [2, 3], "y")
    c = tf.placeholder(tf.bool, [2, 3], name="c")
    z = tf.where(c, x, y) + tf.where_v2(c, x * 2.0, 1.0)
    return {"ys": [z], "xs": [x, y],
            "feeds": {x: _rand(2, 3), y: _rand(2, 3, seed=1),
                      c: np.array([[True, False, True], [False, False, True]])}}


def program_cast_identity(tf):
    x = _ph(tf, [3], "x")
    z = tf.cast(tf.identity(x), tf.float64) * 2.0
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(3)}}


def program_broadcast_to(tf):
    x = _ph(tf, [1, 3], "x")
    z = tf.broadcast_to(x, [4, 3]) * 2.0
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(1, 3)}}


def program_segments(tf):
    x = _ph(tf, [5, 2], "x")
    z = tf.math.unsorted_segment_sum(x, [0, 2, 1, 0, 2], 3) * 2.0
    w = tf.math.segment_sum(x, [0, 0, 1, 1, 2])
    return {"ys": [z, w], "xs": [x], "feeds": {x: _rand(5, 2)}}


# -- nn ---------------------------------------------------------------------------------------

def program_softmax(tf):
    x = _ph(tf, [3, 4], "x")
    z = tf.nn.softmax(x) * tf.nn.log_softmax(x)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(3, 4)}}


def program_softmax_xent(tf):
    logits = _ph(tf, [3, 4], "logits")
    labels = _ph(tf, [3, 4], "labels")
    z = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    return {"ys": [z], "xs": [logits, labels],
            "feeds": {logits: _rand(3, 4), labels: np.full((3, 4), 0.25, np.float32)}}


def program_l2_loss_bias_add_nchw(tf):
    x = _ph(tf, [2, 3, 2, 2], "x")
    b = _ph(tf, [3], "b")
    z = tf.nn.l2_loss(tf.nn.bias_add(x, b, data_format="NCHW"))
    return {"ys": [z], "xs": [x, b], "feeds": {x: _rand(2, 3, 2, 2), b: _rand(3, seed=1)}}


def program_top_k(tf):
    x = _ph(tf, [None, 5], "x")
    values, _ = tf.nn.top_k(x, 2)
    return {"ys": [values * 2.0], "xs": [x], "feeds": {x: _rand(2, 5)}}


# -- gradients() options ----------------------------------------------------------------------

def program_grad_ys(tf):
    x = _ph(tf, [2, 2], "x")
    dy = _ph(tf, [2, 2], "dy")
    z = tf.tanh(x)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(2, 2), dy: _rand(2, 2, seed=1)},
            "kwargs": {"grad_ys": [dy]}}


def program_tree_aggregation(tf):
    x = _ph(tf, [3], "x")
    z = x * x + tf.sin(x) + tf.exp(x)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(3)},
            "kwargs": {"aggregation_method": tf.AggregationMethod.EXPERIMENTAL_TREE}}


def program_gate_gradients(tf):
    x = _ph(tf, [2, 3], "x")
    w = _ph(tf, [3, 2], "w")
    z = tf.matmul(x, w)
    return {"ys": [z], "xs": [x, w], "feeds": {x: _rand(2, 3), w: _rand(3, 2, seed=1)},
            "kwargs": {"gate_gradients": True}}


def program_colocate(tf):
    x = _ph(tf, [3], "x")
    z = tf.square(x) * 3.0
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(3)},
            "kwargs": {"colocate_gradients_with_ops": True}}


def program_stop_gradients(tf):
    a = _ph(tf, [2], "a")
    b = 2.0 * a
    c = a + b
    return {"ys": [c], "xs": [a, b], "feeds": {a: _rand(2)},
            "kwargs": {"stop_gradients": [a, b]}}


def program_stop_gradient_op(tf):
    x = _ph(tf, [3], "x")
    z = x * tf.stop_gradient(x * 2.0)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(3)}}


def program_unconnected_zero(tf):
    x = _ph(tf, [2], "x")
    y = _ph(tf, [3], "y")
    z = x * 2.0
    return {"ys": [z], "xs": [x, y], "feeds": {x: _rand(2), y: _rand(3, seed=1)},
            "kwargs": {"unconnected_gradients": "zero"}}


def program_second_order(tf):
    x = _ph(tf, [3], "x")
    y = tf.reduce_sum(tf.tanh(x) * tf.sigmoid(x) * x)
    g = tf.gradients(y, x)[0]
    return {"ys": [g], "xs": [x], "feeds": {x: _rand(3)}}


# -- control flow -----------------------------------------------------------------------------

def program_cond(tf):
    x = _ph(tf, [3], "x")
    p = tf.placeholder(tf.bool, [], name="p")
    y = tf.cond(p, lambda: tf.square(x) * 2.0, lambda: tf.sin(x))
    return {"ys": [tf.reduce_sum(y)], "xs": [x], "feeds": {x: _rand(3), p: True}}


def program_cond_false(tf):
    x = _ph(tf, [3], "x")
    w = _ph(tf, [3], "w")
    p = tf.placeholder(tf.bool, [], name="p")
    y = tf.cond(p, lambda: x * w, lambda: tf.exp(x))
    return {"ys": [y], "xs": [x, w], "feeds": {x: _rand(3), w: _rand(3, seed=1), p: False}}


def program_while_loop(tf):
    x = _ph(tf, [3], "x")

    def body(i, v):
        return i + 1, tf.tanh(v) * 1.5

    _, y = tf.while_loop(lambda i, v: i < 3, body, [tf.constant(0), x])
    return {"ys": [tf.reduce_sum(y)], "xs": [x], "feeds": {x: _rand(3)}}


def program_while_invariant(tf):
    x = _ph(tf, [3], "x")
    w = _ph(tf, [3], "w")

    def body(i, v):
        return i + 1, v * w + 1.0

    _, y = tf.while_loop(lambda i, v: i < 4, body, [tf.constant(0), x])
    return {"ys": [y], "xs": [x, w], "feeds": {x: _rand(3), w: _rand(3, seed=1)}}


def program_while_max_iterations(tf):
    x = _ph(tf, [2], "x")
    _, y = tf.while_loop(lambda i, v: i < 10, lambda i, v: [i + 1, tf.sin(v) + v],
                         [tf.constant(0), x], maximum_iterations=3)
    return {"ys": [y], "xs": [x], "feeds": {x: _rand(2)}}


def program_nested_while(tf):
    x = _ph(tf, [2], "x")

    def inner(v):
        return tf.while_loop(lambda j, u: j < 2, lambda j, u: (j + 1, u * 1.1 + 0.1),
                             [tf.constant(0), v])[1]

    _, y = tf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, inner(v) * v),
                         [tf.constant(0), x])
    return {"ys": [y], "xs": [x], "feeds": {x: _rand(2)}}


def program_while_tensor_array(tf):
    x = _ph(tf, [4, 2], "x")
    ta = tf.TensorArray(tf.float32, size=4).unstack(x)
    out = tf.TensorArray(tf.float32, size=4)

    def body(i, acc, o):
        v = ta.read(i)
        return i + 1, acc + v * v, o.write(i, tf.sin(v))

    _, acc, out = tf.while_loop(lambda i, a, o: i < 4, body,
                                [tf.constant(0), tf.zeros([2]), out])
    return {"ys": [acc, out.stack()], "xs": [x], "feeds": {x: _rand(4, 2)}}


# -- conv / pool / normalisation (their gradient kernels: kernels/nn/*grad*) ----------------------

def program_conv2d(tf):
    x = _ph(tf, [1, 5, 5, 2], "x")
    f = _ph(tf, [3, 3, 2, 3], "f")
    z = tf.nn.conv2d(x, f, strides=[1, 2, 2, 1], padding="SAME")
    return {"ys": [z], "xs": [x, f], "feeds": {x: _rand(1, 5, 5, 2), f: _rand(3, 3, 2, 3, seed=1)}}


def program_pooling(tf):
    x = _ph(tf, [1, 4, 4, 2], "x")
    z = tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    w = tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
    return {"ys": [z, w], "xs": [x], "feeds": {x: _rand(1, 4, 4, 2)}}


def program_depthwise_conv(tf):
    x = _ph(tf, [1, 4, 4, 2], "x")
    f = _ph(tf, [2, 2, 2, 2], "f")
    z = tf.nn.depthwise_conv2d_native(x, f, [1, 1, 1, 1], "VALID")
    return {"ys": [z], "xs": [x, f], "feeds": {x: _rand(1, 4, 4, 2), f: _rand(2, 2, 2, 2, seed=1)}}


def program_fused_batch_norm(tf):
    x = _ph(tf, [2, 2, 2, 3], "x")
    scale = _ph(tf, [3], "scale")
    offset = _ph(tf, [3], "offset")
    y, _, _ = tf.nn.fused_batch_norm(x, scale, offset, is_training=True)
    return {"ys": [y * y], "xs": [x, scale, offset],
            "feeds": {x: _rand(2, 2, 2, 3), scale: _rand(3, seed=1), offset: _rand(3, seed=2)}}


def program_lrn(tf):
    x = _ph(tf, [1, 2, 2, 4], "x")
    z = tf.nn.lrn(x, depth_radius=2)
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(1, 2, 2, 4)}}


# -- more families ----------------------------------------------------------------------------

def program_image_resize(tf):
    x = _ph(tf, [1, 2, 3, 1], "x")
    z = tf.image.resize_bilinear(x, [3, 5]) * 2.0
    w = tf.image.resize_nearest_neighbor(x, [4, 6])
    return {"ys": [z, w], "xs": [x], "feeds": {x: _rand(1, 2, 3, 1)}}


def program_space_depth_batch(tf):
    x = _ph(tf, [1, 4, 4, 2], "x")
    z = tf.space_to_depth(x, 2) * 2.0
    w = tf.depth_to_space(z, 2)
    v = tf.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]])
    return {"ys": [w, v], "xs": [x], "feeds": {x: _rand(1, 4, 4, 2)}}


def program_clip_and_segments(tf):
    x = _ph(tf, [4, 2], "x")
    z = tf.clip_by_value(x, -0.5, 0.5) * 2.0
    w = tf.math.segment_max(x, [0, 0, 1, 1]) + tf.math.segment_prod(x, [0, 1, 1, 2])[:2]
    return {"ys": [z, w], "xs": [x], "feeds": {x: _rand(4, 2)}}


def program_dynamic_stitch_partition(tf):
    x = _ph(tf, [4, 2], "x")
    parts = tf.dynamic_partition(x, [0, 1, 0, 1], 2)
    z = tf.dynamic_stitch([[0, 2], [1, 3]], [parts[0] * 2.0, parts[1]])
    return {"ys": [z], "xs": [x], "feeds": {x: _rand(4, 2)}}


def program_hessians(tf):
    x = _ph(tf, [3], "x")
    y = tf.reduce_sum(x * x * tf.sin(x))
    h = tf.hessians(y, x)[0]
    return {"ys": [h], "xs": [x], "feeds": {x: _rand(3)}}


def program_conv2d_backprop_second_order(tf):
    x = _ph(tf, [1, 4, 4, 2], "x")
    f = _ph(tf, [2, 2, 2, 2], "f")
    y = tf.nn.conv2d(x, f, [1, 1, 1, 1], "VALID")
    (gx,) = tf.gradients(tf.reduce_sum(y * y), [x])
    return {"ys": [gx], "xs": [f], "feeds": {x: _rand(1, 4, 4, 2), f: _rand(2, 2, 2, 2, seed=1)}}


def program_embedding_lookup(tf):
    params = _ph(tf, [6, 3], "params")
    ids = tf.placeholder(tf.int32, [2, 2], name="ids")
    z = tf.nn.embedding_lookup(params, ids) * 3.0
    return {"ys": [z], "xs": [params],
            "feeds": {params: _rand(6, 3), ids: np.array([[0, 5], [2, 2]], np.int32)}}


def program_cond_in_while(tf):
    x = _ph(tf, [2], "x")

    def body(i, v):
        v = tf.cond(i < 2, lambda: v * 2.0, lambda: tf.sin(v))
        return i + 1, v

    _, y = tf.while_loop(lambda i, v: i < 4, body, [tf.constant(0), x])
    return {"ys": [y], "xs": [x], "feeds": {x: _rand(2)}}


def program_concat_indexed_slices(tf):
    a = _ph(tf, [2, 3], "a")
    b = _ph(tf, [3, 3], "b")
    c = _ph(tf, [2, 2], "c")
    y0 = tf.gather(tf.concat([a, b], 0), [0, 3, 3])
    y1 = tf.gather(tf.concat([a, c], 1), [1, 0])
    return {"ys": [y0, y1], "xs": [a, b, c],
            "feeds": {a: _rand(2, 3), b: _rand(3, 3, seed=1), c: _rand(2, 2, seed=2)}}


def program_sparse(tf):
    values = _ph(tf, [3], "values")
    b = _ph(tf, [4, 2], "b")
    sp = tf.SparseTensor([[0, 1], [1, 0], [2, 3]], values, [3, 4])
    y = tf.sparse.sparse_dense_matmul(sp, b)
    z = tf.sparse.reduce_sum(sp, axis=1)
    return {"ys": [y, z], "xs": [values, b],
            "feeds": {values: _rand(3), b: _rand(4, 2, seed=1)}}


def program_gate_gradients_indexed_slices(tf):
    params = _ph(tf, [4, 2], "params")
    w = _ph(tf, [2, 2], "w")
    z = tf.matmul(tf.gather(params, [3, 1]), w)
    return {"ys": [z], "xs": [params, w],
            "feeds": {params: _rand(4, 2), w: _rand(2, 2, seed=1)},
            "kwargs": {"gate_gradients": True}}


def program_colocate_while(tf):
    x = _ph(tf, [2], "x")
    _, y = tf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, tf.sin(v) * v),
                         [tf.constant(0), x])
    return {"ys": [y], "xs": [x], "feeds": {x: _rand(2)},
            "kwargs": {"colocate_gradients_with_ops": True}}


def program_named_gradients(tf):
    x = _ph(tf, [3], "x")
    y = tf.reduce_sum(tf.exp(x) * x)
    return {"ys": [y], "xs": [x], "feeds": {x: _rand(3)}, "kwargs": {"name": "my_grads"}}


def program_sparse_segments_digamma(tf):
    x = _ph(tf, [4, 2], "x")
    z = tf.sparse.segment_sum(x, [0, 2, 3], [0, 0, 1])
    w = tf.sparse.segment_mean(x, [1, 2], [0, 1]) + tf.sparse.segment_sqrt_n(x, [3, 0], [0, 0])
    v = tf.math.digamma(tf.abs(x) + 1.0)
    return {"ys": [z, w, v], "xs": [x], "feeds": {x: _rand(4, 2)}}


def program_fake_quant(tf):
    x = _ph(tf, [2, 3], "x")
    lo = _ph(tf, [], "lo")
    hi = _ph(tf, [], "hi")
    lo3 = _ph(tf, [3], "lo3")
    hi3 = _ph(tf, [3], "hi3")
    a = tf.quantization.fake_quant_with_min_max_args(x * 4.0, min=-1.0, max=1.0)
    b = tf.quantization.fake_quant_with_min_max_vars(x * 4.0, lo, hi)
    c = tf.quantization.fake_quant_with_min_max_vars_per_channel(x * 4.0, lo3, hi3)
    return {"ys": [a, b, c], "xs": [x, lo, hi, lo3, hi3],
            "feeds": {x: _rand(2, 3), lo: np.float32(-1.5), hi: np.float32(2.0),
                      lo3: np.array([-1.0, -2.0, -0.5], np.float32),
                      hi3: np.array([1.0, 0.5, 3.0], np.float32)}}


def program_matrix_diag(tf):
    x = _ph(tf, [2, 3, 3], "x")
    d = _ph(tf, [2, 3], "d")
    a = tf.linalg.diag_part(x) * 2.0
    b = tf.linalg.set_diag(x, d)
    c = tf.linalg.diag(d)
    return {"ys": [a, b, c], "xs": [x, d], "feeds": {x: _rand(2, 3, 3), d: _rand(2, 3, seed=1)}}


def program_einsum(tf):
    a = _ph(tf, [2, 2, 3], "a")
    b = _ph(tf, [2, 3, 4], "b")
    y = tf.einsum("bij,bjk->bik", a, b)
    return {"ys": [y], "xs": [a, b], "feeds": {a: _rand(2, 2, 3), b: _rand(2, 3, 4, seed=1)}}


def program_crop_and_resize(tf):
    image = _ph(tf, [2, 5, 6, 2], "image")
    boxes = _ph(tf, [3, 4], "boxes")
    crops = tf.image.crop_and_resize(image, boxes, [1, 0, 1], [3, 4])
    near = tf.image.crop_and_resize(image, boxes, [0, 1, 1], [2, 2], method="nearest")
    return {"ys": [crops * crops, near], "xs": [image, boxes],
            "feeds": {image: _rand(2, 5, 6, 2),
                      boxes: np.array([[0.1, 0.2, 0.8, 0.9], [0.0, 0.0, 1.0, 1.0],
                                       [0.3, -0.2, 0.6, 0.7]], np.float32)}}


# -- issue 24's second wave: Qr, RandomGamma, sparse gradient kernels ---------------------------

def program_qr(tf):
    deep = _ph(tf, [4, 3], "deep")
    square = _ph(tf, [2, 3, 3], "square")
    wide = _ph(tf, [2, 4], "wide")
    q1, r1 = tf.linalg.qr(deep)
    q2, r2 = tf.linalg.qr(square)
    q3, r3 = tf.linalg.qr(wide)
    ys = [q1 * 2.0, r1, q2 + r2, q3, r3 * r3]
    return {"ys": ys, "xs": [deep, square, wide],
            "feeds": {deep: _rand(4, 3), square: _rand(2, 3, 3, seed=1),
                      wide: _rand(2, 4, seed=2)}}


def program_random_gamma(tf):
    alpha = _ph(tf, [3], "alpha")
    beta = _ph(tf, [3], "beta")
    tf.set_random_seed(24)
    sample = tf.random.gamma([2, 2], alpha, beta, seed=7)
    return {"ys": [sample * sample], "xs": [alpha],
            "feeds": {alpha: np.array([0.5, 2.0, 7.0], np.float32),
                      beta: np.array([1.0, 2.0, 0.5], np.float32)}}


def _sparse(tf, indices, values, shape):
    return tf.SparseTensor(np.array(indices, np.int64), values, np.array(shape, np.int64))


def program_sparse_add_slice(tf):
    va = _ph(tf, [3], "va")
    vb = _ph(tf, [3], "vb")
    a = _sparse(tf, [[0, 0], [1, 2], [2, 1]], va, [3, 4])
    b = _sparse(tf, [[0, 0], [1, 1], [2, 3]], vb, [3, 4])
    total = tf.sparse.add(a, b)
    part = tf.sparse.slice(a, [1, 1], [2, 3])
    return {"ys": [total.values * 2.0, part.values], "xs": [va, vb],
            "feeds": {va: _rand(3), vb: _rand(3, seed=1)}}


def program_sparse_fill_reorder(tf):
    values = _ph(tf, [3], "values")
    default = _ph(tf, [], "default")
    sp = _sparse(tf, [[3, 1], [0, 2], [3, 0]], values, [5, 3])
    filled, _ = tf.sparse.fill_empty_rows(sp, default)
    ordered = tf.sparse.reorder(sp)
    return {"ys": [filled.values * filled.values, ordered.values * 3.0],
            "xs": [values, default],
            "feeds": {values: _rand(3), default: np.float32(0.5)}}


def program_embedding_lookup_mod(tf):
    p0 = _ph(tf, [3, 2], "p0")
    p1 = _ph(tf, [2, 2], "p1")
    p2 = _ph(tf, [2, 2], "p2")
    ids = tf.placeholder(tf.int32, [2, 3], name="ids")
    z = tf.nn.embedding_lookup([p0, p1, p2], ids) * 2.0
    return {"ys": [z], "xs": [p0, p1, p2],
            "feeds": {p0: _rand(3, 2), p1: _rand(2, 2, seed=1), p2: _rand(2, 2, seed=2),
                      ids: np.array([[0, 4, 6], [2, 4, 1]], np.int32)}}


def program_embedding_lookup_div(tf):
    p0 = _ph(tf, [3, 2], "p0")
    p1 = _ph(tf, [2, 2], "p1")
    ids = tf.placeholder(tf.int64, [4], name="ids")
    z = tf.nn.embedding_lookup([p0, p1], ids, partition_strategy="div")
    return {"ys": [z * z], "xs": [p0, p1],
            "feeds": {p0: _rand(3, 2), p1: _rand(2, 2, seed=1),
                      ids: np.array([4, 0, 2, 3], np.int64)}}


def program_embedding_lookup_div_dynamic(tf):
    p0 = _ph(tf, [None, 3], "p0")
    p1 = _ph(tf, [2, 3], "p1")
    p2 = _ph(tf, [None, None], "p2")
    ids = tf.placeholder(tf.int32, [None], name="ids")
    z = tf.nn.embedding_lookup([p0, p1, p2], ids, partition_strategy="div")
    return {"ys": [z * 3.0], "xs": [p0, p1, p2],
            "feeds": {p0: _rand(3, 3), p1: _rand(2, 3, seed=1), p2: _rand(2, 3, seed=2),
                      ids: np.array([6, 0, 2, 3, 3], np.int32)}}


def program_fused_batch_norm_second_order_nchw_inference(tf):
    x = _ph(tf, [2, 3, 2, 2], "x")
    scale = _ph(tf, [3], "scale")
    offset = _ph(tf, [3], "offset")
    mean = _ph(tf, [3], "mean")
    variance = _ph(tf, [3], "variance")
    y, _, _ = tf.nn.fused_batch_norm(x, scale, offset, mean=mean, variance=variance,
                                     is_training=False, data_format="NCHW")
    gx, gscale = tf.gradients(tf.reduce_sum(y * y * y), [x, scale])
    return {"ys": [gx, gscale], "xs": [x, scale, mean],
            "feeds": {x: _rand(2, 3, 2, 2), scale: _rand(3, seed=1), offset: _rand(3, seed=2),
                      mean: _rand(3, seed=3), variance: _rand(3, low=0.5, high=1.5, seed=4)}}


def program_fused_batch_norm_second_order_nchw(tf):
    x = _ph(tf, [2, 3, 2, 2], "x")
    scale = _ph(tf, [3], "scale")
    offset = _ph(tf, [3], "offset")
    y, _, _ = tf.nn.fused_batch_norm(x, scale, offset, is_training=True, data_format="NCHW")
    (gx,) = tf.gradients(tf.reduce_sum(y * y * y), [x])
    return {"ys": [gx * x], "xs": [x, scale],
            "feeds": {x: _rand(2, 3, 2, 2), scale: _rand(3, seed=1), offset: _rand(3, seed=2)}}


def program_fused_batch_norm_second_order(tf):
    x = _ph(tf, [2, 2, 2, 3], "x")
    scale = _ph(tf, [3], "scale")
    offset = _ph(tf, [3], "offset")
    y, _, _ = tf.nn.fused_batch_norm(x, scale, offset, is_training=True)
    gx, gscale = tf.gradients(tf.reduce_sum(y * y * y), [x, scale])
    return {"ys": [gx, gscale], "xs": [x, scale],
            "feeds": {x: _rand(2, 2, 2, 3), scale: _rand(3, seed=1), offset: _rand(3, seed=2)}}


# -- function calls: SymbolicGradient (forward graphs written by TF, imported) ------------------

_FORWARD = Path(__file__).resolve().parent / "data" / "gradients_tf"


def _import_forward(tf, name):
    """Import the forward GraphDef `name` into the default graph; its tensor getter."""
    graph_def = tf.GraphDef()
    graph_def.ParseFromString((_FORWARD / f"{name}.pb").read_bytes())
    tf.import_graph_def(graph_def, name="")
    return tf.get_default_graph().get_tensor_by_name


def program_function_calls(tf):
    t = _import_forward(tf, "forward_function_calls")
    x, w = t("x:0"), t("w:0")
    return {"ys": [t("y:0"), t("v:0")], "xs": [x, w],
            "feeds": {x: _rand(3), w: _rand(3, seed=1)}}


def program_function_call_both_outputs(tf):
    t = _import_forward(tf, "forward_function_calls")
    x, w = t("x:0"), t("w:0")
    return {"ys": [t("y:0") * t("z:0")], "xs": [x, w],
            "feeds": {x: _rand(3), w: _rand(3, seed=1)}}


def program_function_call_library_gradient(tf):
    """A Defun call whose library names a gradient function (FunctionDefLibrary.gradient):
    SymbolicGradient runs that function, not one built from the body."""
    t = _import_forward(tf, "forward_function_library_gradient")
    x = t("x:0")
    return {"ys": [t("y:0")], "xs": [x], "feeds": {x: _rand(3)}}


def program_function_call_variable(tf):
    """A StatefulPartitionedCall of a tf.function reading a resource variable: the
    gradient with respect to the variable's handle is its value's gradient."""
    t = _import_forward(tf, "forward_function_variable")
    x, handle = t("x:0"), t("v:0")
    return {"ys": [t("y:0")], "xs": [x, handle], "feeds": {x: _rand(3)},
            "init": tf.get_default_graph().get_operation_by_name("v/Assign")}


def program_function_call_nested_control_flow(tf):
    """SymbolicGradient of a tf.function whose body holds an If and a While."""
    t = _import_forward(tf, "forward_functional_control_flow")
    x, w = t("x:0"), t("w:0")
    return {"ys": [t("nested_y:0")], "xs": [x, w],
            "feeds": {x: _rand(3), w: _rand(3, seed=1)},
            "nodes_only": "TF 2.21's C++ SymbolicGradient has no gradient for If/While and "
                          "returns zeros; aioflow's are the gradient (checked numerically in "
                          "test_gradient_checker.py)"}


def program_functional_if(tf):
    t = _import_forward(tf, "forward_functional_control_flow")
    x, w, p = t("x:0"), t("w:0"), t("p:0")
    return {"ys": [t("cond_y:0")], "xs": [x, w],
            "feeds": {x: _rand(3), w: _rand(3, seed=1), p: True}}


def program_functional_if_false(tf):
    t = _import_forward(tf, "forward_functional_control_flow")
    x, w, p = t("x:0"), t("w:0"), t("p:0")
    return {"ys": [t("cond_y:0")], "xs": [x, w],
            "feeds": {x: _rand(3), w: _rand(3, seed=1), p: False}}


def program_functional_while(tf):
    t = _import_forward(tf, "forward_functional_control_flow")
    x, w = t("x:0"), t("w:0")
    return {"ys": [t("while_v:0"), t("while_u:0")], "xs": [x, w],
            "feeds": {x: _rand(3), w: _rand(3, seed=1)}}


def program_functional_if_gradients_twice(tf):
    """A second tf.gradients of a rewritten If: the optionals the first one added are
    found and reused, not added again."""
    t = _import_forward(tf, "forward_functional_control_flow")
    x, w, p = t("x:0"), t("w:0"), t("p:0")
    tf.gradients(t("cond_y:0"), [x])
    return {"ys": [t("cond_y:0") * 2.0], "xs": [w],
            "feeds": {x: _rand(3), w: _rand(3, seed=1), p: False}}


def program_functional_while_gradients_twice(tf):
    """A second tf.gradients of a rewritten While: its accumulators are found and reused."""
    t = _import_forward(tf, "forward_functional_control_flow")
    x, w = t("x:0"), t("w:0")
    tf.gradients(t("while_v:0"), [x])
    return {"ys": [t("while_v:0"), t("while_u:0")], "xs": [x, w],
            "feeds": {x: _rand(3), w: _rand(3, seed=1)}}


def program_functional_if_second_order(tf):
    """The gradient of an If's gradient (the gradient If's own gradient)."""
    t = _import_forward(tf, "forward_functional_control_flow")
    x, w, p = t("x:0"), t("w:0"), t("p:0")
    gx = tf.gradients(t("cond_y:0"), [x])[0]
    return {"ys": [gx * gx], "xs": [x, w],
            "feeds": {x: _rand(3), w: _rand(3, seed=1), p: True}}


def program_functional_while_second_order(tf):
    """The gradient of a While's gradient."""
    t = _import_forward(tf, "forward_functional_control_flow")
    x, w = t("x:0"), t("w:0")
    gx = tf.gradients(t("while_v:0"), [x])[0]
    return {"ys": [gx], "xs": [x, w], "feeds": {x: _rand(3), w: _rand(3, seed=1)}}


def _nested(tf, ys, xs=("x", "w"), p=True, x_shape=3, k=0):
    """A program on forward_functional_nested.pb: gradients of `ys` with respect to `xs`."""
    t = _import_forward(tf, "forward_functional_nested")
    values = {"x": _rand(x_shape), "w": _rand(3, seed=1)}
    feeds = {t(f"{name}:0"): values[name] for name in ("x", "w")}
    feeds[t("p:0")] = p
    feeds[t("k:0")] = np.int32(k)
    spec = {"ys": [t(f"{y}:0") for y in ys], "xs": [t(f"{x}:0") for x in xs],
            "feeds": feeds}
    if "v" in xs:
        spec["init"] = tf.get_default_graph().get_operation_by_name("v/Assign")
    return spec


def program_functional_while_unknown_shape(tf):
    return _nested(tf, ["unknown_shape_y"], xs=["x"], x_shape=4)


def program_functional_cond_in_while(tf):
    return _nested(tf, ["cond_in_while_y"], xs=["w"])


def program_functional_cond_in_while_false(tf):
    return _nested(tf, ["cond_in_while_y"], xs=["w"], p=False)


def program_functional_while_in_cond(tf):
    return _nested(tf, ["while_in_cond_y"], xs=["w"])


def program_functional_if_two_outputs(tf):
    return _nested(tf, ["two_outputs_y1", "two_outputs_y2"], xs=["w"], p=False)


def program_functional_if_one_output_used(tf):
    return _nested(tf, ["two_outputs_y2"], xs=["w"])


def program_functional_while_max_iterations(tf):
    return _nested(tf, ["max_iterations_y"], xs=["w"])


def program_functional_if_variable(tf):
    return _nested(tf, ["variable_y"], xs=["w", "v"])


def program_functional_case(tf):
    return _nested(tf, ["case_y"], xs=["w"], k=1)


def program_functional_case_default(tf):
    """An out-of-range index runs the last branch."""
    return _nested(tf, ["case_y"], xs=["w"], k=7)


def program_functional_if_indexed_slices(tf):
    """One branch's gradient is IndexedSlices (a gather), the other's dense: TF makes the
    dense one IndexedSlices too, and the If returns their components."""
    return _nested(tf, ["gather_y"], xs=["w"])


def program_functional_if_indexed_slices_false(tf):
    return _nested(tf, ["gather_y"], xs=["w"], p=False)


def program_functional_while_gather(tf):
    """Gathers in a loop body from a captured tensor and a captured variable."""
    return _nested(tf, ["while_gather_y"], xs=["w", "v"])


def program_functional_while_gather_loop_var(tf):
    """The loop variable itself gathered: its gradient in the body is IndexedSlices."""
    return _nested(tf, ["while_gather_loop_var_y"], xs=["w"])


def program_functional_if_embedding_lookup(tf):
    """A variable's embedding lookup in one branch: its gradient is IndexedSlices there
    and zeros of the variable's shape, made IndexedSlices, in the other."""
    return _nested(tf, ["embedding_in_cond_y"], xs=["w", "v"])


def program_functional_if_embedding_lookup_false(tf):
    return _nested(tf, ["embedding_in_cond_y"], xs=["w", "v"], p=False)


def program_functional_while_in_while(tf):
    return _nested(tf, ["while_in_while_y"], xs=["w"])


def program_functional_while_variable(tf):
    return _nested(tf, ["while_variable_y"], xs=["w", "v"])


PROGRAMS = {name[len("program_"):]: fn for name, fn in sorted(globals().items())
            if name.startswith("program_")}


def build(tf, program):
    """(graph, number of forward nodes, the program's dict, the gradients) of one program
    built in a new graph with `tf`."""
    graph = tf.Graph()
    with graph.as_default():
        spec = program(tf)
        n_forward = len(graph.as_graph_def().node)
        grads = tf.gradients(spec["ys"], spec["xs"], **spec.get("kwargs", {}))
    return graph, n_forward, spec, grads


def fetchable(tf, grads):
    """The gradients as fetches: a Tensor, or an IndexedSlices' (values, indices,
    dense_shape); None stays None."""
    out = []
    for g in grads:
        if g is None or isinstance(g, tf.Tensor):
            out.append(g)
        else:
            out.append((g.values, g.indices, g.dense_shape))
    return out


def densify(value):
    """A fetched gradient as a dense array (IndexedSlices summed into their rows)."""
    if isinstance(value, (tuple, list)):
        values, indices, dense_shape = value
        dense = np.zeros(dense_shape, values.dtype)
        np.add.at(dense, indices, values)
        return dense
    return value
