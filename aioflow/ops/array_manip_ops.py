"""Builders with TF's names for the array manipulations imported graphs often carry:
`roll`, `invert_permutation`, `setdiff1d` (ListDiff), `linspace`, `dynamic_partition`,
`dynamic_stitch`, `timestamp`, and `af.quantization`'s fake-quantization ops."""

from __future__ import annotations

import types

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op


def roll(input, shift, axis, name=None) -> ops.Tensor:  # noqa: A002
    """Elements shifted along `axis` by `shift` (scalars or matching vectors), wrapping."""
    return apply_op("Roll", name=name, input=input, shift=shift, axis=axis)


def invert_permutation(x, name=None) -> ops.Tensor:
    """y[x[i]] = i."""
    return apply_op("InvertPermutation", name=name, x=x)


def setdiff1d(x, y, index_dtype=dtypes.int32, name=None):
    """(values of x not in y, their positions in x): TF 1's tf.setdiff1d."""
    return apply_op("ListDiff", name=name, x=x, y=y, out_idx=index_dtype)


def linspace(start, stop, num, name=None) -> ops.Tensor:
    """`num` evenly spaced values from start to stop, both included."""
    with ops.name_scope(name, "LinSpace", [start, stop]):
        start = ops.convert_to_tensor(start, name="start")
        stop = ops.convert_to_tensor(stop, dtype=start.dtype, name="stop")
        return apply_op("LinSpace", start=start, stop=stop, num=num)


def dynamic_partition(data, partitions, num_partitions, name=None) -> list:
    """`num_partitions` tensors: the slices of data whose partition id is each index."""
    out = apply_op("DynamicPartition", name=name, data=data, partitions=partitions,
                   num_partitions=num_partitions)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def dynamic_stitch(indices, data, name=None) -> ops.Tensor:
    """merged[indices[m][i]] = data[m][i]."""
    return apply_op("DynamicStitch", name=name, indices=list(indices), data=list(data))


def timestamp(name=None) -> ops.Tensor:
    """Seconds since the epoch when the node runs (float64)."""
    return apply_op("Timestamp", name=name)


def fake_quant_with_min_max_args(inputs, min=-6.0, max=6.0, num_bits=8,  # noqa: A002
                                 narrow_range=False, name=None) -> ops.Tensor:
    return apply_op("FakeQuantWithMinMaxArgs", name=name, inputs=inputs, min=min, max=max,
                    num_bits=num_bits, narrow_range=narrow_range)


def fake_quant_with_min_max_vars(inputs, min, max, num_bits=8,  # noqa: A002
                                 narrow_range=False, name=None) -> ops.Tensor:
    return apply_op("FakeQuantWithMinMaxVars", name=name, inputs=inputs, min=min, max=max,
                    num_bits=num_bits, narrow_range=narrow_range)


def fake_quant_with_min_max_vars_per_channel(inputs, min, max, num_bits=8,  # noqa: A002
                                             narrow_range=False, name=None) -> ops.Tensor:
    return apply_op("FakeQuantWithMinMaxVarsPerChannel", name=name, inputs=inputs, min=min,
                    max=max, num_bits=num_bits, narrow_range=narrow_range)


quantization = types.SimpleNamespace(
    fake_quant_with_min_max_args=fake_quant_with_min_max_args,
    fake_quant_with_min_max_vars=fake_quant_with_min_max_vars,
    fake_quant_with_min_max_vars_per_channel=fake_quant_with_min_max_vars_per_channel)

__all__ = ["dynamic_partition", "dynamic_stitch", "invert_permutation", "linspace",
           "quantization", "roll", "setdiff1d", "timestamp"]
