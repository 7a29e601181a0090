"""OpDefs of TF's candidate samplers (tensorflow/core/ops/candidate_sampling_ops.cc), as
tf.nn.sampled_softmax_loss and tf.nn.nce_loss use them: UniformCandidateSampler,
LogUniformCandidateSampler, AllCandidateSampler and ComputeAccidentalHits, with TF's
attrs and shape functions (`true_classes` a [batch, num_true] matrix, the samples a
[num_sampled] vector, the accidental hits vectors of unknown length)."""

from __future__ import annotations

from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape


def _sampler(op) -> list[TensorShape]:
    classes = op.inputs[0].shape.with_rank(2)
    num_true, num_sampled = op.get_attr("num_true"), op.get_attr("num_sampled")
    batch = classes.as_list()[0]
    return [TensorShape([num_sampled]), TensorShape([batch, num_true]),
            TensorShape([num_sampled])]


def _accidental_hits(op) -> list[TensorShape]:
    op.inputs[0].shape.with_rank(2)
    op.inputs[1].shape.with_rank(1)
    return [TensorShape([None])] * 3


def _sampler_op(name: str, range_attr: bool = True):
    reg = (register_op(name).input("true_classes: int64").output("sampled_candidates: int64")
           .output("true_expected_count: float").output("sampled_expected_count: float")
           .attr("num_true: int >= 1").attr("num_sampled: int >= 1").attr("unique: bool"))
    if range_attr:
        reg = reg.attr("range_max: int >= 1")
    reg.attr("seed: int = 0").attr("seed2: int = 0").set_is_stateful().set_shape_fn(_sampler)


_sampler_op("UniformCandidateSampler")
_sampler_op("LogUniformCandidateSampler")
_sampler_op("AllCandidateSampler", range_attr=False)

(register_op("ComputeAccidentalHits").input("true_classes: int64")
    .input("sampled_candidates: int64").output("indices: int32").output("ids: int64")
    .output("weights: float").attr("num_true: int").attr("seed: int = 0")
    .attr("seed2: int = 0").set_shape_fn(_accidental_hits))
