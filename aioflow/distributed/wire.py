"""Values on the wire: runtime values <-> TensorProto (numeric arrays as tensor_content,
read back with np.frombuffer: no copy on the receiving side), and OpErrors <-> gRPC
status codes (TF's codes are gRPC's)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors, tensor_util
from aioflow.proto import tensor_pb2, tensor_shape_pb2


def to_proto(value) -> tensor_pb2.TensorProto:
    """A TensorProto of a runtime value (a NumPy array or scalar)."""
    array = np.asarray(value)
    if array.dtype.kind in "biufc" and array.dtype.byteorder in "=|<":
        proto = tensor_pb2.TensorProto(
            dtype=dtypes.as_dtype(array.dtype).as_datatype_enum,
            tensor_shape=tensor_shape_pb2.TensorShapeProto(
                dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in array.shape]))
        proto.tensor_content = array.tobytes()  # (the one copy: into the message)
        return proto
    return tensor_util.make_tensor_proto(array)


def from_proto(proto: tensor_pb2.TensorProto):
    """The runtime value of a TensorProto (numeric content viewed, not copied)."""
    if proto.tensor_content and proto.dtype not in (dtypes.string.as_datatype_enum,):
        dtype = dtypes.as_dtype(proto.dtype)
        if dtype.is_numpy_compatible:
            shape = [d.size for d in proto.tensor_shape.dim]
            return np.frombuffer(proto.tensor_content, dtype=dtype.as_numpy_dtype).reshape(shape)
    return tensor_util.make_ndarray(proto)


def error_of(code: int, message: str) -> errors.OpError:
    """The OpError of a status code (UnknownError for one TF does not know)."""
    return errors.exception_type_from_error_code(code)(None, None, message)
