"""tf.Example parsing with TF's names: the feature configurations (FixedLenFeature,
FixedLenSequenceFeature, VarLenFeature) and `parse_example` / `parse_single_example`,
which build one ParseExampleV2 node as TF 2.21's builders do (features in sorted key
order; a FixedLenSequenceFeature's shape gains a variable first dimension; a dense
feature without a default is required), returning a dict of Tensors and SparseTensors.

TF's SparseFeature and RaggedFeature are not built (aioflow has no RaggedTensor): they
raise TypeError naming the feature."""

from __future__ import annotations

import collections
import re

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.sparse_tensor import SparseTensor
from aioflow.framework.tensor_shape import TensorShape
from aioflow.ops import array_ops
from aioflow.ops.constant_op import constant


class FixedLenFeature(collections.namedtuple("FixedLenFeature",
                                             ["shape", "dtype", "default_value"])):
    """A dense feature of a fixed shape; without a default, every example must have it."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """A dense feature of any number of rows of `shape`, padded with `default_value` (0 or
    "" by default) to the longest example of the batch."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature of any length, parsed into a SparseTensor [batch, longest]."""


def _key_name(prefix: str, key: str) -> str:
    return prefix + re.sub(r"[^A-Za-z0-9_.\-/]", "_", key)


def _default(key: str, feature, shape: list, dtype: dtypes.DType):
    """The dense_defaults input of one dense feature, as TF's _parse_example_raw."""
    value = feature.default_value
    if shape and shape[0] is None:  # variable length: a scalar padding value
        if value is None:
            return ops.convert_to_tensor("" if dtype == dtypes.string else 0, dtype=dtype)
        value = ops.convert_to_tensor(value, dtype=dtype, name=_key_name("padding_", key))
        return array_ops.reshape(value, [])
    if value is None:
        return constant([], dtype=dtype)
    if isinstance(value, ops.Tensor):
        return value
    value = ops.convert_to_tensor(value, dtype=dtype, name=_key_name("key_", key))
    return array_ops.reshape(value, shape)


def _params(features: dict):
    """(sparse keys, sparse types, dense keys, dense types, dense shapes, dense features),
    keys in sorted order."""
    if not features:
        raise ValueError("Invalid argument: features cannot be None.")
    sparse_keys, sparse_types = [], []
    dense_keys, dense_types, dense_shapes, dense_features = [], [], [], []
    for key in sorted(features):
        feature = features[key]
        if isinstance(feature, VarLenFeature):
            sparse_keys.append(key)
            sparse_types.append(dtypes.as_dtype(feature.dtype))
        elif isinstance(feature, FixedLenFeature):
            dense_keys.append(key)
            dense_types.append(dtypes.as_dtype(feature.dtype))
            dense_shapes.append(list(TensorShape(feature.shape).as_list()))
            dense_features.append(feature)
        elif isinstance(feature, FixedLenSequenceFeature):
            if not feature.allow_missing:
                raise ValueError("Unsupported: FixedLenSequenceFeature requires "
                                 "allow_missing to be True.")
            dense_keys.append(key)
            dense_types.append(dtypes.as_dtype(feature.dtype))
            dense_shapes.append([None, *TensorShape(feature.shape).as_list()])
            dense_features.append(feature)
        else:
            raise TypeError(f"Feature {key!r}: {type(feature).__name__} is not supported "
                            f"(FixedLenFeature, FixedLenSequenceFeature and VarLenFeature "
                            f"are)")
    return sparse_keys, sparse_types, dense_keys, dense_types, dense_shapes, dense_features


def parse_example(serialized, features: dict, name: str | None = None,
                  example_names=None) -> dict:
    """Parse a vector (or a scalar) of serialized tf.Example protos into a dict: a Tensor
    per dense feature (batch + its shape), a SparseTensor per VarLenFeature."""
    (sparse_keys, sparse_types, dense_keys, dense_types, dense_shapes,
     dense_features) = _params(features)
    with ops.name_scope(name, "ParseExample", [serialized, example_names]):
        serialized = ops.convert_to_tensor(serialized, dtype=dtypes.string,
                                           name="serialized")
        names = constant([] if example_names is None else example_names, dtypes.string,
                         name="names") if not isinstance(example_names, ops.Tensor) \
            else example_names
        defaults = [_default(k, f, s, t) for k, f, s, t in
                    zip(dense_keys, dense_features, dense_shapes, dense_types, strict=True)]
        outputs = apply_op(
            "ParseExampleV2", name="ParseExampleV2", serialized=serialized, names=names,
            sparse_keys=constant(sparse_keys, dtypes.string, shape=[len(sparse_keys)],
                                 name="sparse_keys"),
            dense_keys=constant(dense_keys, dtypes.string, shape=[len(dense_keys)],
                                name="dense_keys"),
            ragged_keys=constant([], dtypes.string, shape=[0], name="ragged_keys"),
            dense_defaults=defaults, num_sparse=len(sparse_keys), sparse_types=sparse_types,
            ragged_value_types=[], ragged_split_types=[],
            dense_shapes=[TensorShape(s) for s in dense_shapes])
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    n = len(sparse_keys)
    result = {}
    for i, key in enumerate(sparse_keys):
        result[key] = SparseTensor(outputs[i], outputs[n + i], outputs[2 * n + i])
    for i, key in enumerate(dense_keys):
        result[key] = outputs[3 * n + i]
    return result


def parse_single_example(serialized, features: dict, name: str | None = None,
                         example_names=None) -> dict:
    """parse_example of one serialized Example (a scalar): no batch dimension."""
    with ops.name_scope(name, "ParseSingleExample", [serialized, example_names]):
        serialized = ops.convert_to_tensor(serialized, dtype=dtypes.string,
                                           name="serialized")
        if serialized.shape.rank not in (None, 0):
            raise ValueError(f"Input serialized must be a scalar, got shape "
                             f"{serialized.shape}")
        return parse_example(serialized, features, example_names=example_names)


__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "VarLenFeature", "parse_example",
           "parse_single_example"]
