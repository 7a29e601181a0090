"""The file datasets of TF 1.x's tf.data (tensorflow/python/data/ops/readers.py):
TFRecordDataset, TextLineDataset, FixedLengthRecordDataset, built as TF builds them in
graph mode: the filenames flattened into a TensorSliceDataset (is_files), and a
flat_map (or, with num_parallel_reads, an interleave) of a function `read_one_file`
that makes the reader dataset of one file."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.tensor_spec import TensorSpec
from aioflow.ops import array_ops

from .dataset_ops import AUTOTUNE, DatasetV1

DEFAULT_READER_BUFFER_SIZE_BYTES = 256 * 1024
_STRING = TensorSpec([], dtypes.string)


def _optional(name: str, value, default, dtype=dtypes.int64) -> ops.Tensor:
    """TF's convert.optional_param_to_tensor."""
    return ops.convert_to_tensor(default if value is None else value, dtype=dtype, name=name)


def _filenames_dataset(filenames) -> DatasetV1:
    if isinstance(filenames, DatasetV1):
        return filenames
    filenames = ops.convert_to_tensor(filenames, dtype=dtypes.string)
    if filenames.dtype != dtypes.string:
        raise TypeError(f"The `filenames` argument must contain `tf.string` elements. Got "
                        f"`{filenames.dtype!r}` elements.")
    filenames = array_ops.reshape(filenames, [-1], name="flat_filenames")
    variant = apply_op("TensorSliceDataset", components=[filenames],
                       output_shapes=[[]], is_files=True, metadata="",
                       replicate_on_split=False)
    return DatasetV1(variant, _STRING)


def _reader(creator, filenames, num_parallel_reads) -> DatasetV1:
    def read_one_file(filename):
        filename = ops.convert_to_tensor(filename, dtypes.string, name="filename")
        return creator(filename)

    files = _filenames_dataset(filenames)
    if num_parallel_reads is None:
        return files.flat_map(read_one_file)
    if num_parallel_reads == AUTOTUNE:
        return files.interleave(read_one_file, num_parallel_calls=num_parallel_reads)
    return files._legacy_parallel_interleave(read_one_file, num_parallel_reads, 1)


def _one_file(op_type: str, **inputs) -> DatasetV1:
    return DatasetV1(apply_op(op_type, metadata="", **inputs), _STRING)


def TFRecordDataset(filenames, compression_type=None, buffer_size=None,  # noqa: N802
                    num_parallel_reads=None) -> DatasetV1:
    """The records of TFRecord files (compression_type "", "ZLIB" or "GZIP")."""
    def creator(filename):
        return _one_file(
            "TFRecordDataset", filenames=filename,
            compression_type=_optional("compression_type", compression_type, "",
                                       dtypes.string),
            buffer_size=_optional("buffer_size", buffer_size, -1))
    return _reader(creator, filenames, num_parallel_reads)


def TextLineDataset(filenames, compression_type=None, buffer_size=None,  # noqa: N802
                    num_parallel_reads=None) -> DatasetV1:
    """The lines of text files, without their line endings."""
    def creator(filename):
        return _one_file(
            "TextLineDataset", filenames=filename,
            compression_type=_optional("compression_type", compression_type, "",
                                       dtypes.string),
            buffer_size=_optional("buffer_size", buffer_size,
                                  DEFAULT_READER_BUFFER_SIZE_BYTES))
    return _reader(creator, filenames, num_parallel_reads)


def FixedLengthRecordDataset(filenames, record_bytes, header_bytes=None,  # noqa: N802
                             footer_bytes=None, buffer_size=None, compression_type=None,
                             num_parallel_reads=None) -> DatasetV1:
    """Records of `record_bytes` bytes between a header and a footer."""
    def creator(filename):
        record = _optional("record_bytes", record_bytes, None)
        header = _optional("header_bytes", header_bytes, 0)
        footer = _optional("footer_bytes", footer_bytes, 0)
        buffer = _optional("buffer_size", buffer_size, DEFAULT_READER_BUFFER_SIZE_BYTES)
        compression = _optional("compression_type", compression_type, "", dtypes.string)
        return _one_file("FixedLengthRecordDatasetV2", filenames=filename, header_bytes=header,
                         record_bytes=record, footer_bytes=footer, buffer_size=buffer,
                         compression_type=compression)
    return _reader(creator, filenames, num_parallel_reads)
