"""OpDef of TF's RandomGammaGrad (tensorflow/core/ops/random_ops.cc), the derivative of a
Gamma sample with respect to its alpha that RandomGamma's gradient emits."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op

(register_op("RandomGammaGrad").input("alpha: T").input("sample: T").output("output: T")
    .attr("T: {float, double}").set_shape_fn(cs.broadcast_binary))
