"""TF 1.x's initializers (init_ops.py): zeros, ones, constant, and the random ones
(random_uniform, random_normal, truncated_normal, variance_scaling, glorot_uniform and
glorot_normal) built on the seeded random ops, so that a seeded initializer gives
TensorFlow's values. orthogonal needs a QR op aioflow does not have yet."""

from __future__ import annotations

import math

from aioflow.framework import dtypes
from aioflow.ops import random_ops


class Initializer:
    """An initializer: `init(shape, dtype=None, partition_info=None)` builds the value."""

    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}


class zeros_initializer(Initializer):  # noqa: N801 - TF's name
    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        from aioflow.ops.array_ops import zeros

        return zeros(shape, dtypes.as_dtype(dtype or self.dtype))

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class ones_initializer(zeros_initializer):  # noqa: N801 - TF's name
    def __call__(self, shape, dtype=None, partition_info=None):
        from aioflow.ops.array_ops import ones

        return ones(shape, dtypes.as_dtype(dtype or self.dtype))


class constant_initializer(Initializer):  # noqa: N801 - TF's name
    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None):
        from aioflow.ops.constant_op import constant

        return constant(self.value, dtype=dtypes.as_dtype(dtype or self.dtype), shape=shape)

    def get_config(self) -> dict:
        return {"value": self.value, "dtype": self.dtype.name}


# TF's stddev correction for a normal truncated at two standard deviations
# (the stddev of the unit normal truncated to [-2, 2]).
_TRUNCATED_STDDEV = 0.87962566103423978


def _float_dtype(dtype) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype.name}.")
    return dtype


class random_uniform_initializer(Initializer):  # noqa: N801 - TF's name
    """Values uniform in [minval, maxval) (maxval None: 1 for floats)."""

    def __init__(self, minval=0.0, maxval=None, seed=None, dtype=dtypes.float32):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_uniform(shape, self.minval, self.maxval,
                                         dtypes.as_dtype(dtype or self.dtype), seed=self.seed)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed,
                "dtype": self.dtype.name}


class random_normal_initializer(Initializer):  # noqa: N801 - TF's name
    """Values from a normal distribution of `mean` and `stddev`."""

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_normal(shape, self.mean, self.stddev,
                                        _float_dtype(dtype or self.dtype), seed=self.seed)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed,
                "dtype": self.dtype.name}


class truncated_normal_initializer(random_normal_initializer):  # noqa: N801 - TF's name
    """Normal values, redrawn when more than two standard deviations from the mean."""

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.truncated_normal(shape, self.mean, self.stddev,
                                           _float_dtype(dtype or self.dtype), seed=self.seed)


def compute_fans(shape) -> tuple[float, float]:
    """(fan_in, fan_out) of a weight shape, as TF's _compute_fans: a matrix's two dims; a
    conv kernel's input and output depths times its receptive field."""
    shape = [int(d) for d in shape]
    if not shape:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive_field = math.prod(shape[:-2])
    return float(shape[-2] * receptive_field), float(shape[-1] * receptive_field)


class variance_scaling_initializer(Initializer):  # noqa: N801 - TF's name
    """Scale / fan (in, out or their average) as the variance of a truncated normal, an
    untruncated normal, or a uniform distribution."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=dtypes.float32):
        if scale <= 0.0:
            raise ValueError("`scale` must be positive float.")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError("Invalid `mode` argument:", mode)
        distribution = distribution.lower()
        if distribution not in ("normal", "uniform", "truncated_normal",
                                "untruncated_normal"):
            raise ValueError("Invalid `distribution` argument:", distribution)
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _float_dtype(dtype or self.dtype)
        scale_shape = shape if partition_info is None else partition_info.full_shape
        fan_in, fan_out = compute_fans(scale_shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out,
               "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, fan)
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / _TRUNCATED_STDDEV
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dtype,
                                            seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "dtype": self.dtype.name}


class glorot_uniform_initializer(variance_scaling_initializer):  # noqa: N801 - TF's name
    """Xavier uniform: limit sqrt(6 / (fan_in + fan_out))."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


class glorot_normal_initializer(variance_scaling_initializer):  # noqa: N801 - TF's name
    """Xavier normal: a truncated normal of variance 2 / (fan_in + fan_out)."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


class orthogonal_initializer(Initializer):  # noqa: N801 - TF's name
    """An orthogonal matrix, as TF computes it: the Q of the QR decomposition of a seeded
    normal matrix, its columns' signs fixed by R's diagonal, times `gain`; a shape of more
    than two dims is flattened to [prod(shape[:-1]), shape[-1]] (conv kernels)."""

    def __init__(self, gain=1.0, seed=None, dtype=dtypes.float32):
        self.gain, self.seed = gain, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        from aioflow.ops import array_ops, linalg_ops, math_ops

        dtype = _float_dtype(dtype or self.dtype)
        shape = list(shape)
        if len(shape) < 2:
            raise ValueError("The tensor to initialize, specified by argument `shape` must be "
                             f"at least two-dimensional. Received shape={shape}")
        num_rows = int(math.prod(shape[:-1]))
        num_cols = int(shape[-1])
        flat_shape = (num_cols, num_rows) if num_rows < num_cols else (num_rows, num_cols)
        a = random_ops.random_normal(flat_shape, dtype=dtype, seed=self.seed)
        q, r = linalg_ops.qr(a, full_matrices=False)
        q *= math_ops.sign(linalg_ops.diag_part(r))
        if num_rows < num_cols:
            q = array_ops.matrix_transpose(q)
        return self.gain * array_ops.reshape(q, shape)

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}
