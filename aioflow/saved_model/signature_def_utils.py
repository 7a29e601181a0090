"""SignatureDefs (tf.compat.v1.saved_model.signature_def_utils and utils): building them
from tensors, and reading a signature's tensors back from a graph."""

from __future__ import annotations

from aioflow.framework import ops as ops_mod
from aioflow.framework import sparse_tensor
from aioflow.proto import meta_graph_pb2
from aioflow.saved_model import signature_constants

__all__ = ["build_signature_def", "build_tensor_info", "classification_signature_def",
           "get_tensor_from_tensor_info", "predict_signature_def",
           "regression_signature_def", "signature_tensor_names"]


def build_tensor_info(tensor) -> meta_graph_pb2.TensorInfo:
    """The TensorInfo of a Tensor (name, dtype, shape) or SparseTensor (coo_sparse)."""
    info = meta_graph_pb2.TensorInfo(dtype=tensor.dtype.as_datatype_enum,
                                     tensor_shape=tensor.shape.as_proto())
    if isinstance(tensor, sparse_tensor.SparseTensor):
        info.coo_sparse.values_tensor_name = tensor.values.name
        info.coo_sparse.indices_tensor_name = tensor.indices.name
        info.coo_sparse.dense_shape_tensor_name = tensor.dense_shape.name
    else:
        info.name = tensor.name
    return info


def build_signature_def(inputs=None, outputs=None, method_name=None, defaults=None):
    """A SignatureDef from {key: TensorInfo} maps and a method name."""
    sig = meta_graph_pb2.SignatureDef()
    for key, info in (inputs or {}).items():
        sig.inputs[key].CopyFrom(info)
    for key, info in (outputs or {}).items():
        sig.outputs[key].CopyFrom(info)
    if method_name is not None:
        sig.method_name = method_name
    for key, value in (defaults or {}).items():
        sig.defaults[key].CopyFrom(value)
    return sig


def predict_signature_def(inputs, outputs):
    """A predict SignatureDef from {key: tensor} maps (TF's ValueErrors when empty)."""
    if inputs is None or not inputs:
        raise ValueError("Prediction inputs cannot be None or empty.")
    if outputs is None or not outputs:
        raise ValueError("Prediction outputs cannot be None or empty.")
    return build_signature_def(
        {k: build_tensor_info(t) for k, t in inputs.items()},
        {k: build_tensor_info(t) for k, t in outputs.items()},
        signature_constants.PREDICT_METHOD_NAME)


def regression_signature_def(examples, predictions):
    """A regress SignatureDef: a string `examples` tensor to float `predictions`."""
    if examples is None:
        raise ValueError("Regression `examples` cannot be None.")
    if predictions is None:
        raise ValueError("Regression `predictions` cannot be None.")
    return build_signature_def(
        {signature_constants.REGRESS_INPUTS: build_tensor_info(examples)},
        {signature_constants.REGRESS_OUTPUTS: build_tensor_info(predictions)},
        signature_constants.REGRESS_METHOD_NAME)


def classification_signature_def(examples, classes, scores):
    """A classify SignatureDef: `examples` to `classes` and/or `scores`."""
    if examples is None:
        raise ValueError("Classification `examples` cannot be None.")
    if classes is None and scores is None:
        raise ValueError("Classification `classes` and `scores` cannot both be None.")
    outputs = {}
    if classes is not None:
        outputs[signature_constants.CLASSIFY_OUTPUT_CLASSES] = build_tensor_info(classes)
    if scores is not None:
        outputs[signature_constants.CLASSIFY_OUTPUT_SCORES] = build_tensor_info(scores)
    return build_signature_def(
        {signature_constants.CLASSIFY_INPUTS: build_tensor_info(examples)}, outputs,
        signature_constants.CLASSIFY_METHOD_NAME)


def _scoped(name: str, import_scope) -> str:
    return f"{import_scope}/{name}" if import_scope else name


def get_tensor_from_tensor_info(tensor_info, graph=None, import_scope=None):
    """The Tensor (or SparseTensor) a TensorInfo names in `graph` (the default graph)."""
    graph = graph or ops_mod.get_default_graph()

    def tensor(name):
        return graph.get_tensor_by_name(_scoped(name, import_scope))

    encoding = tensor_info.WhichOneof("encoding")
    if encoding == "name":
        return tensor(tensor_info.name)
    if encoding == "coo_sparse":
        coo = tensor_info.coo_sparse
        return sparse_tensor.SparseTensor(tensor(coo.indices_tensor_name),
                                          tensor(coo.values_tensor_name),
                                          tensor(coo.dense_shape_tensor_name))
    raise ValueError(f"Invalid TensorInfo.encoding: {encoding}")


def signature_tensor_names(signature_def) -> tuple[dict, dict]:
    """({input key: tensor name}, {output key: tensor name}) of a dense signature."""
    return ({k: v.name for k, v in signature_def.inputs.items()},
            {k: v.name for k, v in signature_def.outputs.items()})
