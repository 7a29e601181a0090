"""ReadFile (tensorflow/core/kernels/whole_file_read_ops.cc): a file's whole contents as a
scalar string. A pool kernel: the read never runs on the event loop. Errors as TF's file
system reports them (NotFoundError for a missing file, FailedPreconditionError for a
directory); the executor adds the node's name."""

from __future__ import annotations

import errno
import os

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel

from .cwise_kernels import shape_str

_ERRNO_CLASSES = {
    errno.ENOENT: errors.NotFoundError,
    errno.EISDIR: errors.FailedPreconditionError,
    errno.EACCES: errors.PermissionDeniedError,
    errno.EPERM: errors.PermissionDeniedError,
}


@register_kernel("ReadFile", "CPU")
class ReadFileOp(OpKernel):
    """contents = the bytes of the file named by a scalar string."""

    expensive = True

    def compute(self, ctx, inputs):
        filename = np.asarray(inputs[0])
        if filename.ndim != 0:
            raise errors.InvalidArgumentError(
                None, None, "Input filename tensor must be scalar, but had shape: "
                f"{shape_str(filename.shape)}")
        path = filename.item()
        path = path if isinstance(path, bytes) else str(path).encode()
        try:
            with open(path, "rb") as f:
                contents = f.read()
        except OSError as e:
            cls = _ERRNO_CLASSES.get(e.errno, errors.UnknownError)
            reason = os.strerror(e.errno) if e.errno else str(e)
            raise cls(None, None, f"{path.decode('utf-8', 'replace')}; {reason}") from None
        return (np.array(contents, dtype=object),)
