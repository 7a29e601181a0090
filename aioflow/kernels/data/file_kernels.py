"""Datasets that read files: TFRecordDataset (V1, V2), TextLineDataset,
FixedLengthRecordDataset (V1, V2), each with TF's compression types ("", "ZLIB", "GZIP")
(tensorflow/core/kernels/data/tf_record_dataset_op.cc, text_line_dataset_op.cc,
fixed_length_record_dataset_op.cc).

Files are opened and read on the pool, a block of records per call (up to 256 records or
1 MiB), so the loop never waits for a disk and a thread hop is paid once per block, not
per record. The files are read one after another, in order; errors are TF's
(NotFoundError for a missing file, DataLossError for a corrupted record)."""

from __future__ import annotations

import os
from collections import deque

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.lib.record_io import InflatingReader, RecordReader, compression_wbits

from .dataset import Dataset, DatasetIterator, scalar_int, variant

BLOCK_RECORDS = 256
BLOCK_BYTES = 1 << 20


def _open(path: str):
    try:
        return open(path, "rb")  # noqa: SIM115 - closed by the reader
    except FileNotFoundError as e:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from e
    except IsADirectoryError as e:
        raise errors.FailedPreconditionError(None, None, f"{path}; Is a directory") from e


def _string(value: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


class FileDataset(Dataset):
    """A dataset of the records of `filenames`, read by `reader_for(path)` (an object
    with read_many(limit) and close(), used on the pool)."""

    def __init__(self, type_string: str, filenames: list[str], reader_for):
        super().__init__([dtypes.string], [[]])
        self.type_string = type_string
        self.filenames = filenames
        self.reader_for = reader_for

    def make_iterator(self, ictx, prefix):
        return _FileIterator(self, ictx, prefix)


class _FileIterator(DatasetIterator):
    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.file_index = 0
        self.reader = None
        self.records: deque = deque()
        self.consumed = 0   # records of the current file handed out (for save/restore)

    async def get_next(self):
        while not self.records:
            d = self.dataset
            if self.file_index >= len(d.filenames):
                return None
            if self.reader is None:
                self.reader = await self.ictx.run_blocking(d.reader_for,
                                                           d.filenames[self.file_index])
            try:
                block = await self.ictx.run_blocking(self.reader.read_many, BLOCK_RECORDS)
            except errors.OpError:
                self._next_file()  # TF: a bad file is left (or it would fail forever)
                raise
            if not block:
                self._next_file()
                continue
            self.records.extend(block)
        self.consumed += 1
        return [_string(self.records.popleft())]

    def _next_file(self):
        self.close()
        self.file_index += 1
        self.consumed = 0

    def close(self):
        if self.reader is not None:
            self.reader.close()
            self.reader = None

    def save(self, state):
        state[self.key("current_file_index")] = np.array(self.file_index, np.int64)
        state[self.key("records_consumed")] = np.array(self.consumed, np.int64)

    async def restore(self, state):
        self.close()
        self.records.clear()
        self.file_index = int(state[self.key("current_file_index")])
        self.consumed = int(state[self.key("records_consumed")])
        if self.file_index < len(self.dataset.filenames) and self.consumed:
            await self.ictx.run_blocking(self._reopen)

    def _reopen(self):
        """Open the current file again and skip the records already handed out."""
        self.reader = self.dataset.reader_for(self.dataset.filenames[self.file_index])
        skipped = 0
        while skipped < self.consumed:
            block = self.reader.read_many(min(BLOCK_RECORDS, self.consumed - skipped))
            if not block:
                break
            skipped += len(block)


def _filenames(value) -> list[str]:
    arr = np.asarray(value, dtype=object)
    if arr.ndim > 1:
        raise errors.InvalidArgumentError(
            None, None, "`filenames` must be a scalar or a vector.")
    # (a name is bytes, as TF's: one that is not UTF-8 opens the file of those bytes)
    return [os.fsdecode(v) if isinstance(v, bytes) else str(v) for v in arr.reshape(-1)]


def _compression(value) -> str:
    raw = np.asarray(value, dtype=object)[()]
    name = raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else str(raw)
    compression_wbits(name)
    return name


class _TFRecordReader:
    def __init__(self, path: str, compression: str):
        self.reader = RecordReader(_open(path), compression)

    def read_many(self, limit: int) -> list[bytes]:
        return self.reader.read_many(limit, BLOCK_BYTES)

    def close(self) -> None:
        self.reader.close()


@register_kernel("TFRecordDatasetV2", "CPU")
@register_kernel("TFRecordDataset", "CPU")
class TFRecordDatasetOp(OpKernel):
    """Inputs: filenames, compression_type, buffer_size[, byte_offsets]."""

    def compute(self, ctx, inputs):
        filenames = _filenames(inputs[0])
        compression = _compression(inputs[1])
        buffer_size = scalar_int(inputs[2], "buffer_size")
        if buffer_size < -1:  # (-1: the default, TF 2's "choose")
            raise errors.InvalidArgumentError(
                None, None, "`buffer_size` must be >= 0 (0 == no buffering)")
        return (variant(FileDataset("TFRecord", filenames,
                                    lambda p: _TFRecordReader(p, compression))),)


class _LineReader:
    """Lines without their "\\n" (and a "\\r" before it), as TF's InputBuffer::ReadLine."""

    def __init__(self, path: str, compression: str):
        f = _open(path)
        wbits = compression_wbits(compression)
        self.f = f if wbits is None else InflatingReader(f, wbits)
        self.rest = b""
        self.eof = False

    def read_many(self, limit: int) -> list[bytes]:
        lines: list[bytes] = []
        while len(lines) < limit:
            cut = self.rest.find(b"\n")
            if cut < 0:
                if self.eof:
                    if self.rest:
                        lines.append(self.rest[:-1] if self.rest.endswith(b"\r")
                                     else self.rest)
                        self.rest = b""
                    break
                chunk = self.f.read(BLOCK_BYTES)
                if not chunk:
                    self.eof = True
                self.rest += chunk
                continue
            line, self.rest = self.rest[:cut], self.rest[cut + 1:]
            lines.append(line[:-1] if line.endswith(b"\r") else line)
        return lines

    def close(self) -> None:
        self.f.close()


@register_kernel("TextLineDataset", "CPU")
class TextLineDatasetOp(OpKernel):
    def compute(self, ctx, inputs):
        filenames = _filenames(inputs[0])
        compression = _compression(inputs[1])
        return (variant(FileDataset("TextLine", filenames,
                                    lambda p: _LineReader(p, compression))),)


class _FixedLengthReader:
    """Records of `record_bytes` between a header and a footer."""

    def __init__(self, path: str, header: int, record: int, footer: int, compression: str):
        self.path = path
        f = _open(path)
        wbits = compression_wbits(compression)
        if wbits is None:
            size = os.fstat(f.fileno()).st_size
            body = size - header - footer
            if body < 0 or body % record:
                f.close()
                raise errors.InvalidArgumentError(
                    None, None, f"Excluding the header ({header} bytes) and footer "
                                f"({footer} bytes), input file \"{path}\" has body length "
                                f"{body} bytes, which is not an exact multiple of the "
                                f"record length ({record} bytes).")
            self.remaining = body // record
            self.f = f
        else:
            self.f = InflatingReader(f, wbits)
            self.remaining = None
        self.f.read(header)
        self.record, self.footer = record, footer
        self.lookahead = b""

    def read_many(self, limit: int) -> list[bytes]:
        out = []
        while len(out) < limit:
            if self.remaining is not None:
                if self.remaining == 0:
                    break
                out.append(self.f.read(self.record))
                self.remaining -= 1
                continue
            # compressed: keep `footer` bytes back, the end is known only at EOF
            want = self.record + self.footer - len(self.lookahead)
            self.lookahead += self.f.read(want) if want > 0 else b""
            if len(self.lookahead) < self.record + self.footer:
                break
            out.append(self.lookahead[:self.record])
            self.lookahead = self.lookahead[self.record:]
        return out

    def close(self) -> None:
        self.f.close()


@register_kernel("FixedLengthRecordDatasetV2", "CPU")
@register_kernel("FixedLengthRecordDataset", "CPU")
class FixedLengthRecordDatasetOp(OpKernel):
    """Inputs: filenames, header_bytes, record_bytes, footer_bytes, buffer_size
    [, compression_type]."""

    def compute(self, ctx, inputs):
        filenames = _filenames(inputs[0])
        header = scalar_int(inputs[1], "header_bytes")
        record = scalar_int(inputs[2], "record_bytes")
        footer = scalar_int(inputs[3], "footer_bytes")
        if header < 0:
            raise errors.InvalidArgumentError(None, None, "`header_bytes` must be >= 0")
        if record <= 0:
            raise errors.InvalidArgumentError(None, None, "`record_bytes` must be > 0")
        if footer < 0:
            raise errors.InvalidArgumentError(None, None, "`footer_bytes` must be >= 0")
        compression = _compression(inputs[5]) if len(inputs) > 5 else ""
        return (variant(FileDataset(
            "FixedLengthRecord", filenames,
            lambda p: _FixedLengthReader(p, header, record, footer, compression))),)
