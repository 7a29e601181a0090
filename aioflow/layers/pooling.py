"""tf.layers' pooling layers: max and average pooling in 1, 2 and 3 dimensions (MaxPool,
AvgPool; 1-D pools as 2-D ones over an added dimension, as Keras does)."""

from __future__ import annotations

from aioflow.layers.base import Layer
from aioflow.ops import array_ops, nn_conv_ops


def _tuple(value, n: int) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else (int(value),) * n


class _Pooling(Layer):
    rank = 2
    kind = "max"

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = _tuple(pool_size, self.rank)
        self.strides = _tuple(strides if strides is not None else pool_size, self.rank)
        self.padding = padding.upper()
        self.channels_last = data_format in (None, "channels_last")

    def call(self, inputs):
        if self.rank == 1:  # Keras: a 2-D pool over an added last spatial axis
            axis = 2 if self.channels_last else 3
            x = array_ops.expand_dims(inputs, axis)
            pooled = self._pool(x, (*self.pool_size, 1), (*self.strides, 1), 2)
            return array_ops.squeeze(pooled, axis)
        return self._pool(inputs, self.pool_size, self.strides, self.rank)

    def _pool(self, x, size, strides, rank):
        if self.channels_last:
            ksize, stride = [1, *size, 1], [1, *strides, 1]
            fmt = "NHWC" if rank == 2 else "NDHWC"
        else:
            ksize, stride = [1, 1, *size], [1, 1, *strides]
            fmt = "NCHW" if rank == 2 else "NCDHW"
        if rank == 2:
            fn = nn_conv_ops.max_pool if self.kind == "max" else nn_conv_ops.avg_pool
        else:
            fn = nn_conv_ops.max_pool3d if self.kind == "max" else nn_conv_ops.avg_pool3d
        return fn(x, ksize, stride, self.padding, data_format=fmt)


def _pool_class(name: str, rank: int, kind: str):
    cls = type(name, (_Pooling,), {"rank": rank, "kind": kind,
                                   "__doc__": f"{kind} pooling in {rank} dimension(s)."})

    def functional(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                   name=None):
        return cls(pool_size, strides, padding=padding, data_format=data_format,
                   name=name)(inputs)

    return cls, functional


MaxPooling1D, max_pooling1d = _pool_class("MaxPooling1D", 1, "max")
MaxPooling2D, max_pooling2d = _pool_class("MaxPooling2D", 2, "max")
MaxPooling3D, max_pooling3d = _pool_class("MaxPooling3D", 3, "max")
AveragePooling1D, average_pooling1d = _pool_class("AveragePooling1D", 1, "avg")
AveragePooling2D, average_pooling2d = _pool_class("AveragePooling2D", 2, "avg")
AveragePooling3D, average_pooling3d = _pool_class("AveragePooling3D", 3, "avg")
MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
