"""Random-op builders with TF's names, seeds and node structure (tf.compat.v1's
random_uniform, random_normal, truncated_normal, random_shuffle, multinomial, random_gamma and
tf.random's stateless_* builders).

Stateful builders take their `seed`/`seed2` attrs from `random_seed.get_seed` (the graph
seed and the op seed, as TF does); stateless ones turn their `seed` into a key and counter
with the algorithm `alg` names ("auto_select": StatelessRandomGetKeyCounter; "philox": TF's
scramble of the seed through StatelessRandomUniformFullIntV2), then call the V2 op.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import common_shapes, dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.random_seed import get_seed, seed_attrs
from aioflow.ops import array_ops, bitwise_ops, math_ops

_FLOATS = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
_PHILOX, _THREEFRY, _AUTO_SELECT = 1, 2, 3


def _shape_tensor(shape) -> ops.Tensor:
    """TF's shape_util.shape_tensor: a list becomes a Const named "shape" (int32 when
    empty)."""
    dtype = None
    if isinstance(shape, (tuple, list)):
        if not shape:
            dtype = dtypes.int32
        else:
            shape = tuple(getattr(d, "value", d) for d in shape)
    return ops.convert_to_tensor(shape, dtype=dtype, name="shape")


def _set_static_shape(tensor: ops.Tensor, shape) -> None:
    """TF's maybe_set_static_shape: a shape given as a list is the result's shape."""
    if isinstance(shape, (tuple, list)):
        tensor.set_shape(shape)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None,
                   name: str | None = None) -> ops.Tensor:
    """Uniform values in [minval, maxval): RandomUniform scaled by Mul/Add as TF writes it
    (nothing when minval is 0 and maxval 1), RandomUniformInt for integers."""
    dtype = dtypes.as_dtype(dtype)
    accepted = _FLOATS + (dtypes.int32, dtypes.int64)
    if dtype not in accepted:
        raise ValueError(f"Argument `dtype` got invalid value {dtype}. Accepted dtypes are "
                         f"{accepted}.")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        maxval = 1
    with ops.name_scope(name, "random_uniform", [shape, minval, maxval]) as name:
        shape_t = _shape_tensor(shape)
        minval_is_zero = isinstance(minval, int) and minval == 0
        maxval_is_one = isinstance(maxval, int) and maxval == 1
        if not minval_is_zero or not maxval_is_one or dtype.is_integer:
            minval = ops.convert_to_tensor(minval, dtype=dtype, name="min")
            maxval = ops.convert_to_tensor(maxval, dtype=dtype, name="max")
        attrs = seed_attrs(seed)
        if dtype.is_integer:
            result = apply_op("RandomUniformInt", name=name, shape=shape_t, minval=minval,
                              maxval=maxval, **attrs)
        else:
            result = apply_op("RandomUniform", shape=shape_t, dtype=dtype, **attrs)
            if minval_is_zero:
                if not maxval_is_one:
                    result = math_ops.multiply(result, maxval)
            else:
                result = math_ops.add(result * (maxval - minval), minval, name=name)
        _set_static_shape(result, shape)
        return result


def _scaled(op_type: str, default_name: str, shape, mean, stddev, dtype, seed, name):
    """`op_type`'s standard values * stddev + mean (random_normal, truncated_normal)."""
    with ops.name_scope(name, default_name, [shape, mean, stddev]) as name:
        shape_t = _shape_tensor(shape)
        mean_t = ops.convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev_t = ops.convert_to_tensor(stddev, dtype=dtype, name="stddev")
        rnd = apply_op(op_type, shape=shape_t, dtype=dtype, **seed_attrs(seed))
        value = math_ops.add(rnd * stddev_t, mean_t, name=name)
        _set_static_shape(value, shape)
        return value


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None,
                  name: str | None = None) -> ops.Tensor:
    """Normal values: RandomStandardNormal * stddev + mean."""
    return _scaled("RandomStandardNormal", "random_normal", shape, mean, stddev, dtype, seed,
                   name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None,
                     name: str | None = None) -> ops.Tensor:
    """Normal values within two standard deviations: TruncatedNormal * stddev + mean."""
    return _scaled("TruncatedNormal", "truncated_normal", shape, mean, stddev, dtype, seed,
                   name)


def random_shuffle(value, seed=None, name: str | None = None) -> ops.Tensor:
    """`value`'s rows in a random order (RandomShuffle)."""
    return apply_op("RandomShuffle", name=name, value=value, **seed_attrs(seed))


def _multinomial(logits, num_samples, dtype, seed) -> ops.Tensor:
    logits = ops.convert_to_tensor(logits, name="logits")
    dtype = dtypes.as_dtype(dtype) if dtype else dtypes.int64
    accepted = (dtypes.int32, dtypes.int64)
    if dtype not in accepted:
        raise ValueError(f"Argument `dtype` got invalid value {dtype}. Accepted dtypes are "
                         f"{accepted}.")
    return apply_op("Multinomial", logits=logits, num_samples=num_samples,
                    output_dtype=dtype, **seed_attrs(seed))


def multinomial(logits, num_samples, seed=None, name: str | None = None,
                output_dtype=None) -> ops.Tensor:
    """Class indices drawn from each row of unnormalised log-probabilities (Multinomial)."""
    with ops.name_scope(name, "multinomial", [logits]):
        return _multinomial(logits, num_samples, output_dtype, seed)


def categorical(logits, num_samples, dtype=None, seed=None,
                name: str | None = None) -> ops.Tensor:
    """tf.random.categorical: multinomial under the name "categorical"."""
    with ops.name_scope(name, "categorical", [logits]):
        return _multinomial(logits, num_samples, dtype, seed)


def random_gamma(shape, alpha, beta=None, dtype=dtypes.float32, seed=None,
                 name: str | None = None) -> ops.Tensor:
    """Gamma(alpha, beta) samples of shape `shape + alpha's shape` (RandomGamma)."""
    with ops.name_scope(name, "random_gamma", [shape, alpha, beta]):
        shape = ops.convert_to_tensor(shape, name="shape", dtype=dtypes.int32)
        alpha = ops.convert_to_tensor(alpha, name="alpha", dtype=dtype)
        beta = ops.convert_to_tensor(beta if beta is not None else 1, name="beta",
                                     dtype=dtype)
        broadcast_shape = array_ops.broadcast_dynamic_shape(
            array_ops.shape(alpha), array_ops.shape(beta))
        alpha_broadcast = array_ops.broadcast_to(alpha, broadcast_shape)
        # TF's shape inference evaluates the BroadcastArgs of two known shapes.
        alpha_broadcast.set_shape(common_shapes.broadcast_shapes(alpha.shape, beta.shape))
        gamma = apply_op("RandomGamma", shape=shape, alpha=alpha_broadcast,
                         **seed_attrs(seed))
        tiny = np.finfo(alpha.dtype.as_numpy_dtype).tiny
        return math_ops.maximum(tiny, gamma / beta)


# -- stateless ---------------------------------------------------------------------------------

def _alg_to_int(alg) -> int | ops.Tensor:
    """TF's convert_alg_to_int: ints and tensors as they are, names canonicalised."""
    if isinstance(alg, (int, ops.Tensor)):
        return alg
    if isinstance(alg, str):
        canon = alg.strip().lower().replace("-", "").replace("_", "")
        names = {"philox": _PHILOX, "threefry": _THREEFRY, "autoselect": _AUTO_SELECT}
        if canon in names:
            return names[canon]
        raise ValueError(
            f"Argument `alg` got unsupported value {alg}. Supported values are philox for the "
            "Philox algorithm, threefry for the ThreeFry algorithm, and auto_select for "
            "auto-selection.")
    raise TypeError(f"Can't convert argument `alg` (of value {alg} and type {type(alg)}) "
                    "to int.")


def _uint32s_to_uint64(x) -> ops.Tensor:
    """x[0] | x[1] << 32 in uint64."""
    return bitwise_ops.bitwise_or(
        math_ops.cast(x[0], dtypes.uint64),
        bitwise_ops.left_shift(math_ops.cast(x[1], dtypes.uint64),
                               ops.convert_to_tensor(np.uint64(32))))


def _philox_scramble_seed(seed):
    """TF's Python form of GenerateKey: one Philox block of the seed under a fixed key."""
    key = ops.convert_to_tensor(np.array([0x02461E293EC8F720], dtype=np.uint64))
    counter = math_ops.cast(seed, dtypes.uint64)
    mix = apply_op("StatelessRandomUniformFullIntV2", shape=[4], key=key, counter=counter,
                   dtype=dtypes.uint32, alg=_PHILOX)
    key = array_ops.reshape(_uint32s_to_uint64(mix[:2]), [1])
    counter = array_ops.stack([0, _uint32s_to_uint64(mix[2:])], axis=0)
    return key, counter


def get_key_counter_alg(seed, alg):
    """The key, counter and algorithm the V2 ops take for `seed` and `alg`."""
    alg = _alg_to_int(_AUTO_SELECT if alg is None else alg)
    if alg == _AUTO_SELECT:
        key, counter = apply_op("StatelessRandomGetKeyCounter", seed=seed)
    elif alg == _PHILOX:
        key, counter = _philox_scramble_seed(seed)
    elif alg == _THREEFRY:
        key = array_ops.reshape(_uint32s_to_uint64(math_ops.cast(seed, dtypes.uint32)), [1])
        counter = array_ops.zeros([1], dtypes.uint64)
    else:
        raise ValueError(
            f"Argument `alg` got unsupported value {alg}. Supported values are {_PHILOX} for "
            f"the Philox algorithm, {_THREEFRY} for the ThreeFry algorithm, and "
            f"{_AUTO_SELECT} for auto-selection.")
    return key, counter, alg


def stateless_random_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32,
                             name: str | None = None, alg="auto_select") -> ops.Tensor:
    """Uniform values fixed by `seed` (shape [2]): StatelessRandomUniformV2 scaled, or the
    integer forms (IntV2 in [minval, maxval), FullIntV2 when both are None)."""
    dtype = dtypes.as_dtype(dtype)
    accepted = _FLOATS + (dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.uint64)
    if dtype not in accepted:
        raise ValueError(f"Argument `dtype` got invalid value {dtype}. Accepted dtypes are "
                         f"{accepted}.")
    if dtype.is_integer:
        if (minval is None) != (maxval is None):
            raise ValueError(
                f"For integer `dtype` argument {dtype}, argument `minval` and `maxval` must be "
                f"both None or not None. Got `minval`={minval} and `maxval`={maxval}.")
        if minval is not None and dtype in (dtypes.uint32, dtypes.uint64):
            raise ValueError(
                f"Argument `dtype` got invalid value {dtype} when argument `minval` is not "
                "None. Please don't use unsigned integers in this case.")
    elif maxval is None:
        maxval = 1
    with ops.name_scope(name, "stateless_random_uniform", [shape, seed, minval, maxval]) as name:
        shape_t = _shape_tensor(shape)
        if dtype.is_integer and minval is None:
            key, counter, alg = get_key_counter_alg(seed, alg)
            result = apply_op("StatelessRandomUniformFullIntV2", name=name, shape=shape_t,
                              key=key, counter=counter, dtype=dtype, alg=alg)
        else:
            minval = ops.convert_to_tensor(minval, dtype=dtype, name="min")
            maxval = ops.convert_to_tensor(maxval, dtype=dtype, name="max")
            key, counter, alg = get_key_counter_alg(seed, alg)
            if dtype.is_integer:
                result = apply_op("StatelessRandomUniformIntV2", name=name, shape=shape_t,
                                  key=key, counter=counter, minval=minval, maxval=maxval,
                                  alg=alg)
            else:
                rnd = apply_op("StatelessRandomUniformV2", shape=shape_t, key=key,
                               counter=counter, dtype=dtype, alg=alg)
                result = math_ops.add(rnd * (maxval - minval), minval, name=name)
        _set_static_shape(result, shape)
        return result


def _stateless_scaled(op_type, default_name, shape, seed, mean, stddev, dtype, name, alg):
    with ops.name_scope(name, default_name, [shape, seed, mean, stddev]) as name:
        shape_t = _shape_tensor(shape)
        mean = ops.convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev = ops.convert_to_tensor(stddev, dtype=dtype, name="stddev")
        key, counter, alg = get_key_counter_alg(seed, alg)
        rnd = apply_op(op_type, shape=shape_t, key=key, counter=counter, dtype=dtype, alg=alg)
        result = math_ops.add(rnd * stddev, mean, name=name)
        _set_static_shape(result, shape)
        return result


def stateless_random_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                            name: str | None = None, alg="auto_select") -> ops.Tensor:
    """Normal values fixed by `seed`: StatelessRandomNormalV2 * stddev + mean."""
    return _stateless_scaled("StatelessRandomNormalV2", "stateless_random_normal", shape,
                             seed, mean, stddev, dtype, name, alg)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                               name: str | None = None, alg="auto_select") -> ops.Tensor:
    """Truncated normal values fixed by `seed`: StatelessTruncatedNormalV2 * stddev + mean."""
    return _stateless_scaled("StatelessTruncatedNormalV2", "stateless_truncated_normal",
                             shape, seed, mean, stddev, dtype, name, alg)


__all__ = ["categorical", "get_key_counter_alg", "get_seed", "multinomial", "random_gamma",
           "random_normal", "random_shuffle", "random_uniform", "stateless_random_normal",
           "stateless_random_uniform", "stateless_truncated_normal", "truncated_normal"]
