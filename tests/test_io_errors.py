"""OSErrors become TF's error classes by errno (tsl ErrnoToCode), in every file kernel."""

import errno
import os

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.io_errors import io_error
from aioflow.framework.op_def_library import apply_op


@pytest.mark.parametrize("number, cls", [
    (errno.ENOENT, errors.NotFoundError), (errno.ENAMETOOLONG, errors.InvalidArgumentError),
    (errno.EISDIR, errors.FailedPreconditionError), (errno.ENOTEMPTY,
                                                      errors.FailedPreconditionError),
    (errno.EACCES, errors.PermissionDeniedError), (errno.EEXIST, errors.AlreadyExistsError),
    (errno.ENOSPC, errors.ResourceExhaustedError), (errno.EFBIG, errors.OutOfRangeError),
    (errno.EXDEV, errors.UnimplementedError), (errno.EAGAIN, errors.UnavailableError),
    (errno.ESTALE, errors.AbortedError), (errno.ECANCELED, errors.CancelledError),
    (errno.EIO, errors.UnknownError), (errno.ELOOP, errors.UnknownError),
])
def test_errno_table(number, cls):
    err = io_error(OSError(number, os.strerror(number), "/some/file"))
    assert type(err) is cls
    assert err.message == f"/some/file; {os.strerror(number)}"


def test_context_overrides_the_filename_and_bytes_decode():
    err = io_error(OSError(errno.ENOENT, "gone", "x"), b"/a/b")
    assert err.message == f"/a/b; {os.strerror(errno.ENOENT)}"


def _run(fetch, feeds=None):
    with af.SyncSession() as sess:
        return sess.run(fetch, feeds)


def test_read_file_name_too_long_is_invalid_argument(tmp_path):
    with af.Graph().as_default():
        op = af.io.read_file(str(tmp_path / ("x" * 300)))
        with pytest.raises(errors.InvalidArgumentError, match="File name too long"):
            _run(op)


def test_read_file_directory_is_failed_precondition(tmp_path):
    with af.Graph().as_default():
        op = af.io.read_file(str(tmp_path))
        with pytest.raises(errors.FailedPreconditionError, match="Is a directory"):
            _run(op)


def test_merge_checkpoints_name_too_long_is_invalid_argument(tmp_path):
    long_prefix = str(tmp_path / ("x" * 300))
    with af.Graph().as_default():
        op = apply_op("MergeV2Checkpoints", checkpoint_prefixes=np.array([long_prefix]),
                      destination_prefix=long_prefix)
        with pytest.raises(errors.InvalidArgumentError, match="File name too long"):
            _run(op)


def test_table_from_text_file_directory_is_failed_precondition(tmp_path):
    with af.Graph().as_default():
        init = af.lookup.TextFileInitializer(
            str(tmp_path), af.string, af.lookup.TextFileIndex.WHOLE_LINE, af.int64,
            af.lookup.TextFileIndex.LINE_NUMBER)
        table = af.lookup.StaticHashTable(init, -1)
        with pytest.raises(errors.FailedPreconditionError, match="Is a directory"):
            _run(table.initializer)
