"""Builders of the space <-> batch and space <-> depth rearrangements with TF's names:
`space_to_batch_nd` / `batch_to_space_nd`, TF 1's `space_to_batch` / `batch_to_space`
(one block size for both spatial dims; built as the ND ops, as TF 2.21 builds them) and
`space_to_depth` / `depth_to_space`."""

from __future__ import annotations

import numpy as np

from aioflow.framework import ops
from aioflow.framework.op_def_library import apply_op


def space_to_batch_nd(input, block_shape, paddings, name=None) -> ops.Tensor:  # noqa: A002
    """Zero-pads the spatial dims after the batch, then moves block offsets into the batch."""
    return apply_op("SpaceToBatchND", name=name, input=input, block_shape=block_shape,
                    paddings=paddings)


def batch_to_space_nd(input, block_shape, crops, name=None) -> ops.Tensor:  # noqa: A002
    """space_to_batch_nd's inverse, then crops the spatial dims."""
    return apply_op("BatchToSpaceND", name=name, input=input, block_shape=block_shape,
                    crops=crops)


def space_to_batch(input, paddings, block_size=None, name=None,  # noqa: A002
                   block_shape=None) -> ops.Tensor:
    """TF 1's space_to_batch: block_size for both spatial dims of a 4-D input."""
    block_size = block_shape if block_size is None else block_size
    return space_to_batch_nd(input, np.array([block_size, block_size], np.int64), paddings,
                             name=name)


def batch_to_space(input, crops, block_size, name=None, block_shape=None) -> ops.Tensor:  # noqa: A002
    """TF 1's batch_to_space: block_size for both spatial dims of a 4-D input."""
    block_size = block_shape if block_size is None else block_size
    return batch_to_space_nd(input, np.array([block_size, block_size], np.int64), crops,
                             name=name)


def space_to_depth(input, block_size, name=None, data_format="NHWC") -> ops.Tensor:  # noqa: A002
    """block_size x block_size patches of each image moved into channels."""
    return apply_op("SpaceToDepth", name=name, input=input, block_size=block_size,
                    data_format=data_format)


def depth_to_space(input, block_size, name=None, data_format="NHWC") -> ops.Tensor:  # noqa: A002
    """space_to_depth's inverse."""
    return apply_op("DepthToSpace", name=name, input=input, block_size=block_size,
                    data_format=data_format)


__all__ = ["batch_to_space", "batch_to_space_nd", "depth_to_space", "space_to_batch",
           "space_to_batch_nd", "space_to_depth"]
