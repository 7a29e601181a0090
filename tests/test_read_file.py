"""ReadFile (aioflow/kernels/io/file_io_kernels.py): TF 2.21's OpDef, the bytes of the file, and
TF's
error classes and words for a missing file, a directory and a non-scalar name."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format
from op_def_compare import assert_equal_to_tf

import aioflow as af
from aioflow.framework import errors
from aioflow.proto import op_def_pb2

TF_OP_DEF = ('name: "ReadFile" input_arg { name: "filename" type: DT_STRING } '
             'output_arg { name: "contents" type: DT_STRING }')


def test_op_def_is_tfs():
    assert_equal_to_tf([text_format.Parse(TF_OP_DEF, op_def_pb2.OpDef())])


async def _read(path):
    g = af.Graph()
    with g.as_default():
        p = af.placeholder(af.string)
        contents = af.io.read_file(p)
    async with af.Session(graph=g) as sess:
        return await sess.run(contents, {p: path})


async def test_reads_the_whole_file(tmp_path):
    data = bytes(range(256)) * 1000
    (tmp_path / "f.bin").write_bytes(data)
    got = await _read(str(tmp_path / "f.bin"))
    assert isinstance(got, bytes) and got == data
    assert await _read(str(tmp_path / "f.bin").encode()) == data


@pytest.mark.parametrize("make, cls, words", [
    (lambda d: d / "missing.txt", errors.NotFoundError, "missing.txt; No such file or "
                                                         "directory"),
    (lambda d: d, errors.FailedPreconditionError, "; Is a directory"),
])
async def test_file_errors_are_tfs(tmp_path, make, cls, words):
    with pytest.raises(cls, match=words) as info:
        await _read(str(make(tmp_path)))
    assert "ReadFile" in str(info.value)  # the node is named


async def test_a_non_scalar_name_is_refused():
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Input filename tensor must be scalar, but had shape: \[2\]"):
        await _read(np.array([b"a", b"b"], dtype=object))
    g = af.Graph()
    with g.as_default(), pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        af.read_file(af.constant(["a", "b"]))
