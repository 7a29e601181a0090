"""OpDefs of TF's random ops (tensorflow/core/ops/random_ops.cc, stateless_random_ops.cc,
stateless_random_ops_v2.cc): the seeded stateful ones, which keep a Philox generator in their
kernel, and the stateless ones, whose values depend only on their seed inputs."""

from __future__ import annotations

import numpy as np

from aioflow.framework import common_shapes as cs
from aioflow.framework.constant_value import constant_value, constant_value_as_shape
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_FLOATS = "{half, bfloat16, float, double}"
_INDEX = "{int32, int64}"


def shape_input(op) -> list[TensorShape]:
    """The output's shape is the value of the `shape` input (input 0)."""
    return [constant_value_as_shape(op.inputs[0])]


def _multinomial(op) -> list[TensorShape]:
    """[batch, num_samples] from 2-D logits and a scalar num_samples (TF's WithRank and
    MakeDimForScalarInput: a non-scalar or negative num_samples is refused)."""
    logits = op.inputs[0].shape.with_rank(2)
    op.inputs[1].shape.with_rank(0)
    num = constant_value(op.inputs[1])
    if num is not None and np.ndim(num) != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {np.ndim(num)} for '{op.name}' "
                         f"(op: '{op.type}')")
    if num is not None:
        num = int(num)
        if num < 0:
            raise ValueError(f"Dimension size, given by scalar input 1, must be non-negative "
                             f"but is {num}")
    return [TensorShape([logits.dims[0], num])]


def _gamma(op) -> list[TensorShape]:
    """The `shape` input's value followed by alpha's shape."""
    return [constant_value_as_shape(op.inputs[0]).concatenate(op.inputs[-1].shape)]


def _key_counter_alg(op) -> list[TensorShape]:
    return [TensorShape([1]), TensorShape([2]), cs.SCALAR][:len(op.outputs)]


for _name in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal"):
    (register_op(_name).input("shape: T").output("output: dtype")
        .attr("seed: int = 0").attr("seed2: int = 0").attr(f"dtype: {_FLOATS}")
        .attr(f"T: {_INDEX}").set_is_stateful().set_shape_fn(shape_input))

(register_op("RandomUniformInt").input("shape: T").input("minval: Tout").input("maxval: Tout")
    .output("output: Tout").attr("seed: int = 0").attr("seed2: int = 0")
    .attr(f"Tout: {_INDEX}").attr(f"T: {_INDEX}").set_is_stateful().set_shape_fn(shape_input))

(register_op("RandomShuffle").input("value: T").output("output: T")
    .attr("seed: int = 0").attr("seed2: int = 0").attr("T: type").set_is_stateful()
    .set_shape_fn(cs.unchanged_shape))

(register_op("Multinomial").input("logits: T").input("num_samples: int32")
    .output("output: output_dtype").attr("seed: int = 0").attr("seed2: int = 0")
    .attr("T: realnumbertype").attr("output_dtype: {int32, int64} = DT_INT64")
    .set_is_stateful().set_shape_fn(_multinomial))

(register_op("RandomGamma").input("shape: S").input("alpha: T").output("output: T")
    .attr("seed: int = 0").attr("seed2: int = 0").attr(f"S: {_INDEX}")
    .attr("T: {half, float, double}").set_is_stateful().set_shape_fn(_gamma))

for _name in ("StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal"):
    (register_op(_name).input("shape: T").input("seed: Tseed").output("output: dtype")
        .attr(f"dtype: {_FLOATS} = DT_FLOAT").attr(f"T: {_INDEX} = DT_INT32")
        .attr(f"Tseed: {_INDEX} = DT_INT64").set_shape_fn(shape_input))

(register_op("StatelessRandomUniformInt").input("shape: T").input("seed: Tseed")
    .input("minval: dtype").input("maxval: dtype").output("output: dtype")
    .attr(f"dtype: {_INDEX}").attr(f"T: {_INDEX}").attr(f"Tseed: {_INDEX} = DT_INT64")
    .set_shape_fn(shape_input))

for _name in ("StatelessRandomUniformV2", "StatelessRandomNormalV2",
              "StatelessTruncatedNormalV2"):
    (register_op(_name).input("shape: Tshape").input("key: uint64").input("counter: uint64")
        .input("alg: int32").output("output: dtype").attr(f"dtype: {_FLOATS} = DT_FLOAT")
        .attr(f"Tshape: {_INDEX} = DT_INT32").set_shape_fn(shape_input))

(register_op("StatelessRandomUniformIntV2").input("shape: Tshape").input("key: uint64")
    .input("counter: uint64").input("alg: int32").input("minval: dtype").input("maxval: dtype")
    .output("output: dtype").attr("dtype: {int32, int64, uint32, uint64}")
    .attr(f"Tshape: {_INDEX} = DT_INT32").set_shape_fn(shape_input))

(register_op("StatelessRandomUniformFullInt").input("shape: T").input("seed: Tseed")
    .output("output: dtype").attr("dtype: {int32, int64, uint32, uint64} = DT_UINT64")
    .attr(f"T: {_INDEX} = DT_INT32").attr("Tseed: {int32, int64, uint32, uint64} = DT_INT64")
    .set_shape_fn(shape_input))

(register_op("StatelessRandomUniformFullIntV2").input("shape: Tshape").input("key: uint64")
    .input("counter: uint64").input("alg: int32").output("output: dtype")
    .attr("dtype: {int32, int64, uint32, uint64} = DT_UINT64")
    .attr(f"Tshape: {_INDEX} = DT_INT32").set_shape_fn(shape_input))

(register_op("StatelessRandomGetKeyCounterAlg").input("seed: Tseed").output("key: uint64")
    .output("counter: uint64").output("alg: int32").attr(f"Tseed: {_INDEX} = DT_INT64")
    .set_shape_fn(_key_counter_alg))

(register_op("StatelessRandomGetKeyCounter").input("seed: Tseed").output("key: uint64")
    .output("counter: uint64").attr(f"Tseed: {_INDEX} = DT_INT64")
    .set_shape_fn(_key_counter_alg))

register_op("StatelessRandomGetAlg").output("alg: int32").set_is_stateful().set_shape_fn(
    cs.scalar)
