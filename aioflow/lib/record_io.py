"""TFRecord framing, as TensorFlow's io::RecordWriter / RecordReader write and read it:
each record is its length (uint64, little-endian), the masked CRC-32C of those 8 bytes,
the data, and the masked CRC-32C of the data. Event files are TFRecord files of Events."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from aioflow.framework import errors
from aioflow.lib import crc32c

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")


def encode_record(data: bytes) -> bytes:
    """One framed record holding `data`."""
    header = _LENGTH.pack(len(data))
    return b"".join((header, _CRC.pack(crc32c.mask(crc32c.value(header))), data,
                     _CRC.pack(crc32c.mask(crc32c.value(data)))))


def read_records(f: BinaryIO, path: str = "<stream>") -> Iterator[bytes]:
    """The data of each record in `f`, checking both checksums. A record cut short at the
    end (a writer still running) ends the iteration, as TF's reader stops at it;
    DataLossError for a corrupted one."""
    while True:
        header = f.read(12)
        if len(header) < 12:
            return
        (length,) = _LENGTH.unpack_from(header)
        if crc32c.mask(crc32c.value(header[:8])) != _CRC.unpack_from(header, 8)[0]:
            raise errors.DataLossError(None, None, f"corrupted record at {f.tell() - 12} in "
                                       f"{path}: the length's checksum does not match")
        body = f.read(length + 4)
        if len(body) < length + 4:
            return
        data = body[:length]
        if crc32c.mask(crc32c.value(data)) != _CRC.unpack_from(body, length)[0]:
            raise errors.DataLossError(None, None, f"corrupted record at "
                                       f"{f.tell() - 16 - length} in {path}: the data's "
                                       "checksum does not match")
        yield data


# -- TFRecord files with compression (tf.io.TFRecordWriter, TFRecordDataset) -----------------

#: zlib's window bits for each of TF's compression types ("" is none).
_WBITS = {"ZLIB": 15, "GZIP": 31}
_HEADER = 12


def compression_wbits(compression: str) -> int | None:
    """The zlib window bits of a compression type ("", "ZLIB", "GZIP"); None for none;
    InvalidArgumentError for anything else."""
    if compression in ("", None):
        return None
    if compression not in _WBITS:
        raise errors.InvalidArgumentError(
            None, None, f"Unsupported compression_type: {compression}.")
    return _WBITS[compression]


class RecordWriter:
    """Writes framed records to a binary file, deflated as TF's ZlibOutputBuffer does
    (default level, memLevel 9, a zlib or gzip header), so the files are TF's byte for
    byte."""

    def __init__(self, f: BinaryIO, compression: str = ""):
        self.f = f
        wbits = compression_wbits(compression)
        self.deflate = None if wbits is None else zlib.compressobj(
            zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, wbits, 9)

    def write(self, data: bytes) -> None:
        record = encode_record(bytes(data))
        self.f.write(record if self.deflate is None else self.deflate.compress(record))

    def flush(self) -> None:
        if self.deflate is not None:
            self.f.write(self.deflate.flush(zlib.Z_SYNC_FLUSH))
        self.f.flush()

    def close(self) -> None:
        if self.deflate is not None:
            self.f.write(self.deflate.flush(zlib.Z_FINISH))
            self.deflate = None
        self.f.close()


class InflatingReader:
    """A binary file read through zlib (`read(n)` of the inflated stream)."""

    def __init__(self, f: BinaryIO, wbits: int, chunk: int = 1 << 16):
        self.f = f
        self.inflate = zlib.decompressobj(wbits)
        self.pending = b""
        self.chunk = chunk

    def read(self, n: int) -> bytes:
        while len(self.pending) < n and not self.inflate.eof:
            raw = self.f.read(self.chunk)
            if not raw:
                break
            try:
                self.pending += self.inflate.decompress(raw)
            except zlib.error as e:
                raise errors.DataLossError(None, None, f"inflate() failed with error: {e}") \
                    from e
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def close(self) -> None:
        self.f.close()


class RecordReader:
    """Reads a TFRecord file's records as TF's io::RecordReader, with its errors:
    "corrupted record at <offset>" (DataLossError) for a checksum that does not match,
    "truncated record at <offset>..." for data cut short; a header cut short is the end.
    Offsets count bytes of the uncompressed stream."""

    def __init__(self, f: BinaryIO, compression: str = ""):
        wbits = compression_wbits(compression)
        self.f = f if wbits is None else InflatingReader(f, wbits)
        self.offset = 0

    def read(self) -> bytes | None:
        """The next record's data, or None at the end of the file."""
        offset = self.offset
        header = self.f.read(_HEADER)
        if len(header) < _HEADER:
            return None
        if crc32c.mask(crc32c.value(header[:8])) != _CRC.unpack_from(header, 8)[0]:
            hint = " (Is this even a TFRecord file?)" if offset == 0 else ""
            raise errors.DataLossError(None, None, f"corrupted record at {offset}{hint}")
        (length,) = _LENGTH.unpack_from(header)
        body = self.f.read(length + 4)
        if len(body) < length + 4:
            raise errors.DataLossError(None, None, f"truncated record at {offset}' failed "
                                                   f"with Read less bytes than requested")
        data = body[:length]
        if crc32c.mask(crc32c.value(data)) != _CRC.unpack_from(body, length)[0]:
            raise errors.DataLossError(None, None, f"corrupted record at {offset + _HEADER}")
        self.offset = offset + _HEADER + length + 4
        return data

    def read_many(self, limit: int, max_bytes: int = 1 << 20) -> list[bytes]:
        """Up to `limit` records (fewer at the end, or past `max_bytes`)."""
        out: list[bytes] = []
        size = 0
        while len(out) < limit and size < max_bytes:
            data = self.read()
            if data is None:
                break
            out.append(data)
            size += len(data)
        return out

    def close(self) -> None:
        self.f.close()


def open_reader(path: str, compression: str = "") -> RecordReader:
    return RecordReader(open(path, "rb"), compression)  # noqa: SIM115 - closed by the reader
