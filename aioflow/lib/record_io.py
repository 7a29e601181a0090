"""TFRecord framing, as TensorFlow's io::RecordWriter / RecordReader write and read it:
each record is its length (uint64, little-endian), the masked CRC-32C of those 8 bytes,
the data, and the masked CRC-32C of the data. Event files are TFRecord files of Events."""

from __future__ import annotations

import struct
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
