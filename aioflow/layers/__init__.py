"""tf.compat.v1.layers: TF 1's layers (classes and functions) as graph builders with TF's
variable names and collections, so that TF's checkpoints of them restore here."""

from aioflow.layers.base import Layer
from aioflow.layers.convolutional import (
    Conv1D,
    Conv2D,
    Conv2DTranspose,
    Conv3D,
    Convolution1D,
    Convolution2D,
    Convolution2DTranspose,
    Convolution3D,
    SeparableConv1D,
    SeparableConv2D,
    SeparableConvolution2D,
    conv1d,
    conv2d,
    conv2d_transpose,
    conv3d,
    separable_conv1d,
    separable_conv2d,
)
from aioflow.layers.core import Dense, Dropout, Flatten, dense, dropout, flatten
from aioflow.layers.normalization import BatchNormalization, batch_normalization
from aioflow.layers.pooling import (
    AveragePooling1D,
    AveragePooling2D,
    AveragePooling3D,
    AvgPool1D,
    AvgPool2D,
    AvgPool3D,
    MaxPool1D,
    MaxPool2D,
    MaxPool3D,
    MaxPooling1D,
    MaxPooling2D,
    MaxPooling3D,
    average_pooling1d,
    average_pooling2d,
    average_pooling3d,
    max_pooling1d,
    max_pooling2d,
    max_pooling3d,
)

__all__ = [
    "Layer", "Dense", "Dropout", "Flatten", "dense", "dropout", "flatten",
    "BatchNormalization", "batch_normalization", "Conv1D", "Conv2D", "Conv3D",
    "Conv2DTranspose", "Convolution1D", "Convolution2D", "Convolution3D",
    "Convolution2DTranspose", "SeparableConv1D", "SeparableConv2D", "SeparableConvolution2D",
    "conv1d", "conv2d", "conv3d", "conv2d_transpose", "separable_conv1d", "separable_conv2d",
    "AveragePooling1D", "AveragePooling2D", "AveragePooling3D", "AvgPool1D", "AvgPool2D",
    "AvgPool3D", "MaxPool1D", "MaxPool2D", "MaxPool3D", "MaxPooling1D", "MaxPooling2D",
    "MaxPooling3D", "average_pooling1d", "average_pooling2d", "average_pooling3d",
    "max_pooling1d", "max_pooling2d", "max_pooling3d",
]
