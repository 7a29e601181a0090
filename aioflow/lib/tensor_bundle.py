"""TensorFlow's tensor bundle (the V2 checkpoint format), read and written byte for byte
as tensorflow/core/util/tensor_bundle/tensor_bundle.cc does.

A bundle with prefix P is

- ``P.data-00000-of-0000N``: the tensors' bytes, one after another (no padding). A
  numeric tensor is its little-endian buffer; a string tensor is the varint64 lengths of
  its elements, a 4-byte masked CRC-32C of those lengths (taken as uint32 values, not
  varint bytes), then the elements' bytes.
- ``P.index``: a LevelDB-style table (SSTable) mapping ``""`` to a BundleHeaderProto
  (num_shards, endianness, version) and every tensor name, in byte order, to a
  BundleEntryProto (dtype, shape, shard_id, offset, size, masked CRC-32C of the bytes).

The table (tensorflow/core/lib/io/table_builder.cc, format.cc, block_builder.cc): data
blocks of prefix-compressed entries (``varint shared, varint non_shared, varint
value_len, key delta, value``) with a restart point every 16 entries (the index block:
every entry), each block followed by a type byte (0: uncompressed) and the masked
CRC-32C of block + type; then an empty metaindex block, an index block whose keys
separate the data blocks (FindShortestSeparator / FindShortSuccessor) and whose values
are block handles (varint64 offset, varint64 size), and a 48-byte footer (the two
handles padded to 40 bytes, then the magic number 0xdb4775248b80fb57 little-endian).

Everything here is blocking file I/O: callers on the event loop run it on a thread (the
SaveV2 / RestoreV2 / MergeV2Checkpoints kernels are pool kernels). A tensor is read
straight into the array that is returned (one copy in memory, as TF's reader), then
checksummed.
"""

from __future__ import annotations

import functools
import math
import os
import random
import struct

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.io_errors import io_error
from aioflow.lib import crc32c, tensor_slice
from aioflow.proto import tensor_bundle_pb2, tensor_shape_pb2, versions_pb2

HEADER_KEY = b""
#: Versions of the bundle format (kTensorBundleVersion, ...MinProducer, ...MinConsumer).
BUNDLE_VERSION = 1
BUNDLE_MIN_PRODUCER = 0
BUNDLE_MIN_CONSUMER = 0

_BLOCK_SIZE = 262144         # table::Options::block_size
_RESTART_INTERVAL = 16       # table::Options::block_restart_interval (index block: 1)
_TABLE_MAGIC = 0xDB4775248B80FB57
_FOOTER_LEN = 48             # 2 * BlockHandle::kMaxEncodedLength + 8
_TRAILER_LEN = 5             # type byte + crc
_NO_COMPRESSION = 0
_U32_MAX = 0xFFFFFFFF


def data_filename(prefix: str, shard: int, num_shards: int) -> str:
    """DataFilename: ``<prefix>.data-<shard:05d>-of-<num_shards:05d>``."""
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def meta_filename(prefix: str) -> str:
    """MetaFilename: ``<prefix>.index``."""
    return f"{prefix}.index"


def _as_str(value) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _as_key(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8")


def _tf_io_errors(fn):
    """Raise OSErrors from `fn` as TF's file system reports them (io_error)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except OSError as e:
            raise io_error(e) from None
    return wrapper


# -- varints ------------------------------------------------------------------------------

class _Corrupt(Exception):
    """A malformed table or data record (becomes DataLossError with TF's words)."""


def _put_varint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _get_varint(buf, pos: int, limit: int) -> tuple[int, int]:
    """(value, next position); _Corrupt when the varint runs past `limit` or 10 bytes."""
    result = shift = 0
    while pos < limit and shift <= 63:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise _Corrupt("bad varint")


# -- table writer -------------------------------------------------------------------------

class _BlockBuilder:
    """block_builder.cc: prefix-compressed entries and restart points."""

    def __init__(self, restart_interval: int):
        self.interval = restart_interval
        self.buf = bytearray()
        self.restarts = [0]
        self.counter = 0
        self.last_key = b""

    @property
    def empty(self) -> bool:
        return not self.buf

    def size_estimate(self) -> int:
        return len(self.buf) + 4 * len(self.restarts) + 4

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.counter < self.interval:
            last = self.last_key
            limit = min(len(last), len(key))
            while shared < limit and last[shared] == key[shared]:
                shared += 1
        else:
            self.restarts.append(len(self.buf))
            self.counter = 0
        _put_varint(self.buf, shared)
        _put_varint(self.buf, len(key) - shared)
        _put_varint(self.buf, len(value))
        self.buf += key[shared:]
        self.buf += value
        self.last_key = key
        self.counter += 1

    def finish(self) -> bytes:
        out = self.buf + struct.pack(f"<{len(self.restarts)}I", *self.restarts)
        return bytes(out + struct.pack("<I", len(self.restarts)))


def _shortest_separator(start: bytes, limit: bytes) -> bytes:
    """A short key k with start <= k < limit (the bytewise comparator's)."""
    n = min(len(start), len(limit))
    i = 0
    while i < n and start[i] == limit[i]:
        i += 1
    if i < n:
        b = start[i]
        if b < 0xFF and b + 1 < limit[i]:
            return start[:i] + bytes([b + 1])
    return start


def _short_successor(key: bytes) -> bytes:
    """A short key k >= key."""
    for i, b in enumerate(key):
        if b != 0xFF:
            return key[:i] + bytes([b + 1])
    return key


def _handle(offset: int, size: int) -> bytes:
    out = bytearray()
    _put_varint(out, offset)
    _put_varint(out, size)
    return bytes(out)


class TableWriter:
    """table_builder.cc without compression: add keys in increasing order, then finish."""

    def __init__(self, file):
        self.file = file
        self.offset = 0
        self.data = _BlockBuilder(_RESTART_INTERVAL)
        self.index = _BlockBuilder(1)
        self.last_key = b""
        self.pending: bytes | None = None  # handle of the last data block, not yet indexed

    def add(self, key: bytes, value: bytes) -> None:
        if self.pending is not None:
            self.index.add(_shortest_separator(self.last_key, key), self.pending)
            self.pending = None
        self.last_key = key
        self.data.add(key, value)
        if self.data.size_estimate() >= _BLOCK_SIZE:
            self._flush()

    def _flush(self) -> None:
        if self.data.empty:
            return
        self.pending = self._write_block(self.data)
        self.data = _BlockBuilder(_RESTART_INTERVAL)

    def _write_block(self, block: _BlockBuilder) -> bytes:
        contents = block.finish()
        trailer = bytes([_NO_COMPRESSION])
        crc = crc32c.mask(crc32c.extend(crc32c.value(contents), trailer))
        self.file.write(contents + trailer + struct.pack("<I", crc))
        handle = _handle(self.offset, len(contents))
        self.offset += len(contents) + _TRAILER_LEN
        return handle

    def finish(self) -> None:
        self._flush()
        meta_handle = self._write_block(_BlockBuilder(_RESTART_INTERVAL))
        if self.pending is not None:
            self.index.add(_short_successor(self.last_key), self.pending)
            self.pending = None
        index_handle = self._write_block(self.index)
        footer = (meta_handle + index_handle).ljust(_FOOTER_LEN - 8, b"\0")
        self.file.write(footer + struct.pack("<Q", _TABLE_MAGIC))


# -- table reader -------------------------------------------------------------------------

def _read_block(data: bytes, handle: bytes) -> bytes:
    """format.cc ReadBlock: the block's contents, its checksum verified."""
    try:
        offset, pos = _get_varint(handle, 0, len(handle))
        size, _ = _get_varint(handle, pos, len(handle))
    except _Corrupt:
        raise _Corrupt("bad block handle") from None
    end = offset + size + _TRAILER_LEN
    if end > len(data):
        raise _Corrupt("truncated block read")
    body = data[offset:offset + size + 1]
    stored = struct.unpack_from("<I", data, offset + size + 1)[0]
    if crc32c.value(body) != crc32c.unmask(stored):
        raise _Corrupt("block checksum mismatch")
    if body[-1] != _NO_COMPRESSION:
        raise _Corrupt("bad block type")
    return body[:-1]


def _block_entries(block: bytes) -> list[tuple[bytes, bytes]]:
    """The (key, value) pairs of one block, in order."""
    if len(block) < 4:
        raise _Corrupt("bad block contents")
    num_restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    limit = len(block) - 4 * (num_restarts + 1)
    if num_restarts == 0 or limit < 0:
        raise _Corrupt("bad block contents")
    out, key, pos = [], b"", 0
    while pos < limit:
        shared, pos = _get_varint(block, pos, limit)
        non_shared, pos = _get_varint(block, pos, limit)
        value_len, pos = _get_varint(block, pos, limit)
        if shared > len(key) or pos + non_shared + value_len > limit:
            raise _Corrupt("bad entry in block")
        key = key[:shared] + block[pos:pos + non_shared]
        pos += non_shared
        out.append((key, block[pos:pos + value_len]))
        pos += value_len
    return out


def read_table(data: bytes, filename: str) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of a table file's bytes, in key order; DataLossError as TF's
    Table::Open and its iterator (the data blocks' errors worded as BundleReader's)."""
    if len(data) < _FOOTER_LEN:
        raise errors.DataLossError(None, None, "file is too short to be an sstable")
    if struct.unpack_from("<Q", data, len(data) - 8)[0] != _TABLE_MAGIC:
        raise errors.DataLossError(None, None, "not an sstable (bad magic number)")
    footer = data[len(data) - _FOOTER_LEN:]
    try:
        _, pos = _get_varint(footer, 0, 40)
        _, pos = _get_varint(footer, pos, 40)
        _, end = _get_varint(footer, pos, 40)
        _, end = _get_varint(footer, end, 40)
        # TF never reads the (empty) metaindex block; checking it costs nothing.
        _block_entries(_read_block(data, footer[:pos]))
        index = _block_entries(_read_block(data, footer[pos:end]))
    except _Corrupt as e:
        raise errors.DataLossError(None, None, str(e)) from None
    out = []
    try:
        for _, handle in index:
            out.extend(_block_entries(_read_block(data, handle)))
    except _Corrupt as e:
        raise errors.DataLossError(None, None, _corrupt_file(filename, str(e))) from None
    return out


def _corrupt_file(filename: str, cause: str,
                  what: str = "failed to seek to header entry") -> str:
    """CorruptFileError's message."""
    return (f"Unable to read file ({filename}). Perhaps the file is corrupt or was produced "
            f"by a newer version of TensorFlow with format changes ({what}): {cause}")


# -- tensors <-> bytes --------------------------------------------------------------------

def _numpy_dtype(dtype: dtypes.DType) -> np.dtype:
    return np.dtype(dtype.as_numpy_dtype).newbyteorder("<")


def _varint_lengths(lengths) -> bytes:
    """The varint64 lengths of a string tensor's elements, as written before them."""
    out = bytearray()
    for n in lengths:
        _put_varint(out, n)
    return bytes(out)


def _checksummed_lengths(lengths) -> bytes:
    """The lengths as TF checksums them: uint32 each, or uint64 when over 2**32 - 1."""
    if all(n <= _U32_MAX for n in lengths):
        return np.asarray(lengths, dtype="<u4").tobytes()
    return b"".join(struct.pack("<I", n) if n <= _U32_MAX else struct.pack("<Q", n)
                    for n in lengths)


def _element_bytes(v) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)


def _dtype_of(value: np.ndarray) -> dtypes.DType:
    if value.dtype == object or value.dtype.kind in "SU":
        return dtypes.string
    return dtypes.as_dtype(value.dtype)


def shape_proto(shape) -> tensor_shape_pb2.TensorShapeProto:
    proto = tensor_shape_pb2.TensorShapeProto()
    for d in shape:
        proto.dim.add(size=int(d))
    return proto


# -- writer -------------------------------------------------------------------------------

class BundleWriter:
    """BundleWriter: `add(name, array)` streams each tensor to the data file (in call
    order), `finish()` writes the index (names sorted) and moves both files into place.

    Files are written under temporary names (``.tempstate<random>``) and renamed by
    finish, so a failed save leaves no half-written checkpoint under the prefix; `abort()`
    removes them. InvalidArgumentError for a duplicate name, as TF's."""

    @_tf_io_errors
    def __init__(self, prefix: str):
        self.prefix = _as_str(prefix)
        self.entries: dict[bytes, tensor_bundle_pb2.BundleEntryProto] = {}
        self.size = 0
        _create_dir(os.path.dirname(self.prefix))
        self._data_path = data_filename(self.prefix, 0, 1)
        self._tmp_data = f"{self._data_path}.tempstate{random.getrandbits(64)}"
        self._tmp_meta = f"{meta_filename(self.prefix)}.tempstate{random.getrandbits(64)}"
        self._out = open(self._tmp_data, "wb")  # noqa: SIM115  (closed by finish/abort)

    @_tf_io_errors
    def add(self, key, value, dtype=None) -> None:
        """Append one tensor (an ndarray, NumPy scalar, bytes or string array); `dtype`
        (a DType or enum) is the tensor's TF type when its NumPy type is ambiguous
        (quantized types are stored as their integer twins), else it is inferred."""
        key = _as_key(key)
        if key == HEADER_KEY:
            raise errors.InvalidArgumentError(None, None, "Adding the reserved empty key")
        if key in self.entries:
            raise errors.InvalidArgumentError(
                None, None, f"Adding duplicate key: {key.decode('utf-8', 'replace')}")
        value = np.asarray(value)
        dtype = _dtype_of(value) if dtype is None else dtypes.as_dtype(dtype).base_dtype
        if not dtype.is_numpy_compatible and dtype != dtypes.variant:
            raise errors.InvalidArgumentError(
                None, None, f"Cannot save {dtype.name} tensor {_show(key)} in a checkpoint")
        entry = tensor_bundle_pb2.BundleEntryProto(dtype=dtype.as_datatype_enum,
                                                   offset=self.size)
        entry.shape.CopyFrom(shape_proto(value.shape))
        if dtype == dtypes.string:
            size, crc = self._write_strings(value)
        elif dtype == dtypes.variant:
            size, crc = self._write_variants(key, value)
        else:
            size, crc = self._write_numeric(value, dtype)
        entry.size = size
        entry.crc32c = crc32c.mask(crc)
        self.entries[key] = entry
        self.size += size

    def add_slice(self, key, full_shape, sl, value, dtype=None) -> None:
        """BundleWriter::AddSlice: the slice `sl` (a tensor_slice.TensorSlice) of the
        tensor `key` of `full_shape`: stored under its encoded slice key, listed in the
        full tensor's entry (dtype, shape, slices; no data). A full slice is a plain add."""
        key = _as_key(key)
        if all(sl.is_full_at(d) or (sl.starts[d] == 0 and sl.lengths[d] == dim)
               for d, dim in enumerate(full_shape)):
            self.add(key, value, dtype)
            return
        value = np.asarray(value)
        dtype = _dtype_of(value) if dtype is None else dtypes.as_dtype(dtype).base_dtype
        full = self.entries.get(key)
        if full is None:
            full = self.entries[key] = tensor_bundle_pb2.BundleEntryProto()
        full.dtype = dtype.as_datatype_enum
        full.shape.CopyFrom(shape_proto(full_shape))
        full.slices.append(sl.to_proto())
        self.add(tensor_slice.encode_tensor_name_slice(key, sl), value, dtype)

    def _write_numeric(self, value: np.ndarray, dtype: dtypes.DType) -> tuple[int, int]:
        arr = np.ascontiguousarray(value, dtype=_numpy_dtype(dtype))
        raw = arr.reshape(-1).view(np.uint8)
        if raw.size:
            self._out.write(memoryview(raw))
        return raw.size, crc32c.value(raw)

    def _write_strings(self, value: np.ndarray) -> tuple[int, int]:
        items = [_element_bytes(v) for v in value.reshape(-1)]
        lengths = [len(v) for v in items]
        varints = _varint_lengths(lengths)
        crc = crc32c.value(_checksummed_lengths(lengths))
        length_checksum = struct.pack("<I", crc32c.mask(crc))
        crc = crc32c.extend(crc, length_checksum)
        body = b"".join(items)
        crc = crc32c.extend(crc, body)
        self._out.write(varints + length_checksum)
        self._out.write(body)
        return len(varints) + 4 + len(body), crc

    def _write_variants(self, key, value: np.ndarray) -> tuple[int, int]:
        """TF's WriteVariantTensor: per element, [varint64 length][a serialized
        VariantTensorDataProto][its crc32c]. An element gives its proto's bytes through
        `bytes()` (tf.data's iterator state does); anything else cannot be saved."""
        out = bytearray()
        for v in value.reshape(-1):
            if isinstance(v, (bytes, bytearray)):
                elem = bytes(v)
            elif hasattr(type(v), "__bytes__"):
                elem = bytes(v)
            else:
                raise errors.InvalidArgumentError(
                    None, None, f"Cannot save variant tensor {_show(key)} in a checkpoint: "
                                f"{type(v).__name__} has no serialized form")
            _put_varint(out, len(elem))
            out += elem
            out += struct.pack("<I", crc32c.value(elem))
        if out:
            self._out.write(out)
        return len(out), crc32c.value(bytes(out))

    @_tf_io_errors
    def finish(self) -> None:
        """Close the data file and write the index (header first, then names in order)."""
        try:
            self._out.close()
            os.replace(self._tmp_data, self._data_path)
            header = header_proto(1)
            entries = sorted(self.entries.items())
            write_index(self._tmp_meta, header, entries)
            os.replace(self._tmp_meta, meta_filename(self.prefix))
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Remove the temporary files of an unfinished bundle."""
        if not self._out.closed:
            self._out.close()
        for path in (self._tmp_data, self._tmp_meta):
            try:
                os.remove(path)
            except OSError:
                pass


def _create_dir(dirname: str) -> None:
    """Env::CreateDir of the prefix's directory (not its parents), as TF's writers."""
    if not dirname:
        return
    try:
        os.mkdir(dirname)
    except FileExistsError:
        pass
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{dirname}; No such file or directory") \
            from None


def header_proto(num_shards: int) -> tensor_bundle_pb2.BundleHeaderProto:
    """The header TF writes: num_shards, little-endian, version {producer: 1}."""
    return tensor_bundle_pb2.BundleHeaderProto(
        num_shards=num_shards, endianness=tensor_bundle_pb2.BundleHeaderProto.LITTLE,
        version=versions_pb2.VersionDef(producer=BUNDLE_VERSION,
                                        min_consumer=BUNDLE_MIN_CONSUMER))


def write_index(path: str, header, entries) -> None:
    """Write an index table: the header under "" and (name, BundleEntryProto) pairs in
    increasing name order."""
    with open(path, "wb") as f:
        table = TableWriter(f)
        table.add(HEADER_KEY, header.SerializeToString())
        for key, entry in entries:
            table.add(key, entry.SerializeToString())
        table.finish()


# -- reader -------------------------------------------------------------------------------

def _not_found_files(prefix: str) -> errors.OpError:
    """TF's error for a prefix without an index; UnimplementedError when the prefix is a
    V1 checkpoint file (TensorSliceReader's format, which TF would read and aioflow does
    not)."""
    if os.path.isfile(prefix):
        return errors.UnimplementedError(
            None, None, f"{prefix} is a V1 checkpoint (TensorSliceReader format); only V2 "
            "checkpoints (.index and .data files) can be read")
    return errors.NotFoundError(
        None, None, "Unsuccessful TensorSliceReader constructor: Failed to find any "
        f"matching files for {prefix}")


def _check_versions(version) -> None:
    """CheckVersions(header.version, 1, 0, "Checkpoint", "checkpoint")."""
    if version.producer < BUNDLE_MIN_PRODUCER:
        raise errors.InvalidArgumentError(
            None, None, f"Checkpoint producer version {version.producer} below min producer "
            f"{BUNDLE_MIN_PRODUCER} supported by TensorFlow. Please regenerate your checkpoint.")
    if version.min_consumer > BUNDLE_VERSION:
        raise errors.InvalidArgumentError(
            None, None, f"Checkpoint min consumer version {version.min_consumer} above current "
            f"version {BUNDLE_VERSION} for TensorFlow. Please upgrade TensorFlow.")
    if BUNDLE_VERSION in version.bad_consumers:
        raise errors.InvalidArgumentError(
            None, None, f"Checkpoint disallows consumer version {BUNDLE_VERSION}. Please "
            "upgrade TensorFlow: this version is likely buggy.")


class BundleReader:
    """BundleReader: the index is read at construction; `lookup(name)` reads one tensor
    from its data shard into a new array and verifies its checksum.

    NotFoundError when the bundle does not exist (TF's words) or a name is not in it;
    DataLossError for a corrupt or truncated index or data file. Safe to use from several
    threads at once (reads are positioned, `os.preadv`). Close it (or use `with`)."""

    @_tf_io_errors
    def __init__(self, prefix):
        self.prefix = _as_str(prefix)
        filename = meta_filename(self.prefix)
        try:
            with open(filename, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise _not_found_files(self.prefix) from None
        table = read_table(data, filename)
        if not table or table[0][0] != HEADER_KEY:
            raise errors.DataLossError(None, None, _corrupt_file(filename, "no header entry"))
        header = _parse(tensor_bundle_pb2.BundleHeaderProto, HEADER_KEY, table[0][1],
                        filename)
        _check_versions(header.version)
        self.num_shards = header.num_shards
        self.big_endian = header.endianness == tensor_bundle_pb2.BundleHeaderProto.BIG
        self._values = dict(table[1:])
        self._fds: dict[int, int] = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)

    def keys(self) -> list[bytes]:
        """The tensor names, in byte order (the header excluded)."""
        return list(self._values)

    def contains(self, key) -> bool:
        return _as_key(key) in self._values

    def entry(self, key) -> tensor_bundle_pb2.BundleEntryProto:
        """The name's BundleEntryProto; NotFoundError "Key <name> not found in checkpoint"."""
        key = _as_key(key)
        value = self._values.get(key)
        if value is None:
            raise errors.NotFoundError(
                None, None, f"Key {key.decode('utf-8', 'replace')} not found in checkpoint")
        entry = _parse(tensor_bundle_pb2.BundleEntryProto, key, value, None)
        dims = [d.size for d in entry.shape.dim]
        # TF's TensorShape::IsValid: known rank, at most 254 dimensions, none negative, at
        # most 2^63 - 1 elements
        if entry.shape.unknown_rank or len(dims) > 254 or any(d < 0 for d in dims) or \
                math.prod(dims) >= 1 << 63:
            raise errors.DataLossError(None, None, f"Invalid tensor shape: {_show(key)}")
        try:
            dtypes.as_dtype(entry.dtype)
        except TypeError:
            raise errors.DataLossError(
                None, None, f"Invalid dtype {entry.dtype} in bundle entry: key "
                            f"{_show(key)}") from None
        return entry

    def dtype_and_shape(self, key) -> tuple[dtypes.DType, tuple[int, ...]]:
        entry = self.entry(key)
        return dtypes.as_dtype(entry.dtype), tuple(d.size for d in entry.shape.dim)

    def lookup(self, key) -> np.ndarray:
        """The tensor stored under `key` (a new array; object array of bytes for strings)."""
        key = _as_key(key)
        entry = self.entry(key)
        if entry.slices:
            return self.lookup_slice(key, tensor_slice.TensorSlice.full(len(entry.shape.dim)))
        return self.read_entry(key, entry)

    def lookup_slice(self, key, sl) -> np.ndarray:
        """BundleReader::LookupSlice: the slice `sl` of the tensor `key`, copied from the
        stored slices overlapping it (or from the whole stored tensor); InvalidArgument
        when they do not cover it, as TF's."""
        key = _as_key(key)
        entry = self.entry(key)
        dtype = dtypes.as_dtype(entry.dtype)
        full_shape = tuple(d.size for d in entry.shape.dim)
        stored = ([tensor_slice.TensorSlice.from_proto(p) for p in entry.slices]
                  or [tensor_slice.TensorSlice.full(len(full_shape))])
        out_shape = sl.slice_shape(full_shape)
        out = np.empty(out_shape, dtype=object if dtype == dtypes.string
                       else _numpy_dtype(dtype))
        wanted = math.prod(out_shape)
        overlapping, covered = [], 0
        for part in stored:
            volume = 1
            for (s0, s1), (d0, d1) in zip(part.bounds(full_shape), sl.bounds(full_shape),
                                          strict=True):
                volume *= max(0, min(s1, d1) - max(s0, d0))
            if volume:
                overlapping.append(part)
                covered += volume
        if covered != wanted:
            raise errors.InvalidArgumentError(
                None, None, f"Does not have sufficient slices for partitioned tensor "
                f"{_show(key)} to restore in slice_spec: {sl}")
        for part in overlapping:
            if part.is_full():
                value = self.read_entry(key, entry) if not entry.slices else None
            else:
                part_key = tensor_slice.encode_tensor_name_slice(key, part)
                value = self.read_entry(part_key, self.entry(part_key))
            tensor_slice.copy_overlap(value, part, out, sl, full_shape)
        return out

    @_tf_io_errors
    def read_entry(self, key: bytes, entry) -> np.ndarray:
        """GetValue: the tensor an entry describes, checksum verified."""
        dtype = dtypes.as_dtype(entry.dtype)
        shape = tuple(d.size for d in entry.shape.dim)
        if dtype == dtypes.string:
            value, crc = self._read_strings(key, entry, shape)
        elif dtype == dtypes.variant:
            value, crc = self._read_variants(key, entry, shape)
        elif dtype.is_numpy_compatible and dtype != dtypes.string:
            value, crc = self._read_numeric(key, entry, dtype, shape)
        else:
            raise errors.UnimplementedError(
                None, None, f"Restoring {dtype.name} tensors ({_show(key)}) is not supported")
        stored = crc32c.unmask(entry.crc32c)
        if stored != crc:
            raise errors.DataLossError(
                None, None, f"TensorBundle at {self.prefix} shard {entry.shard_id} "
                f"({entry.size} bytes): Checksum does not match: stored {stored:08d} vs. "
                f"calculated on the restored bytes {crc}")
        return value

    def _fd(self, shard: int) -> int:
        fd = self._fds.get(shard)
        if fd is None:
            path = data_filename(self.prefix, shard, self.num_shards)
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                raise errors.NotFoundError(None, None, f"{path}; No such file or directory") \
                    from None
            self._fds[shard] = fd
        return fd

    def _check_extent(self, key, entry) -> None:
        """The entry's bytes lie within its data file (before anything is allocated for
        them: an index cannot make the reader allocate what the data cannot hold)."""
        size = os.fstat(self._fd(entry.shard_id)).st_size
        if entry.offset < 0 or entry.size < 0 or entry.offset + entry.size > size:
            raise errors.DataLossError(
                None, None, f"TensorBundle at {self.prefix} shard {entry.shard_id}: entry "
                f"{_show(key)} of {entry.size} bytes at offset {entry.offset} runs past the "
                f"data file's {size} bytes (data file truncated, or a corrupt index)")

    def _pread_into(self, entry, buf: memoryview) -> None:
        """Fill `buf` from the entry's shard at its offset; DataLossError when short."""
        fd = self._fd(entry.shard_id)
        done, total = 0, len(buf)
        while done < total:
            n = os.preadv(fd, [buf[done:]], entry.offset + done)
            if n <= 0:
                raise errors.DataLossError(
                    None, None, f"TensorBundle at {self.prefix} shard {entry.shard_id}: read "
                    f"less bytes than requested (data file truncated): {done} of {total} "
                    f"bytes at offset {entry.offset}")
            done += n

    def _read_numeric(self, key, entry, dtype, shape):
        np_dtype = np.dtype(dtype.as_numpy_dtype)
        nbytes = math.prod(shape) * np_dtype.itemsize
        if entry.size != nbytes:
            raise errors.DataLossError(
                None, None, f"Invalid size in bundle entry: key {_show(key)}; stored size "
                f"{entry.size}; expected size {nbytes}")
        self._check_extent(key, entry)
        out = np.empty(shape, dtype=np_dtype)
        raw = out.reshape(-1).view(np.uint8)
        if raw.size:
            self._pread_into(entry, memoryview(raw))
        crc = crc32c.value(raw)
        if self.big_endian and np_dtype.itemsize > 1:
            out.byteswap(inplace=True)
        return out, crc

    def _read_strings(self, key, entry, shape):
        n = math.prod(shape)
        if entry.size < n:  # (a length byte at least for each)
            raise errors.DataLossError(
                None, None, f"Invalid size in bundle entry: key {_show(key)}; stored size "
                f"{entry.size}; expected size is at least {n}")
        self._check_extent(key, entry)
        out = np.empty(n, dtype=object)
        if entry.size == 0:
            return out.reshape(shape), 0
        raw = bytearray(entry.size)
        self._pread_into(entry, memoryview(raw))
        try:
            lengths, pos = _decode_varints(raw, n)
        except _Corrupt:
            raise errors.DataLossError(
                None, None, f"String lengths longer than expected offset "
                f"{entry.offset + entry.size}") from None
        crc = crc32c.value(_checksummed_lengths(lengths))
        if pos + 4 > len(raw):
            raise errors.DataLossError(None, None, "String lengths longer than expected "
                                       f"offset {entry.offset + entry.size}")
        stored = crc32c.unmask(struct.unpack_from("<I", raw, pos)[0])
        if stored != crc:
            raise errors.DataLossError(
                None, None, f"The length checksum does not match: expected {stored:08d} but "
                f"actual is {crc:08d}")
        crc = crc32c.extend(crc, raw[pos:pos + 4])
        pos += 4
        if pos + sum(lengths) > len(raw):
            raise errors.DataLossError(
                None, None, f"TensorBundle at {self.prefix}: string data of {_show(key)} runs "
                f"past its entry's {entry.size} bytes")
        crc = crc32c.extend(crc, memoryview(raw)[pos:pos + sum(lengths)])
        view = memoryview(raw)
        for i, length in enumerate(lengths):
            out[i] = bytes(view[pos:pos + length])
            pos += length
        return out.reshape(shape), crc


    def _read_variants(self, key, entry, shape):
        """A variant tensor's elements as the bytes of their VariantTensorDataProtos (an
        object array; the kernel that takes them decodes them)."""
        n = int(np.prod(shape, dtype=np.int64))
        raw = bytearray(entry.size)
        if entry.size:
            self._pread_into(entry, memoryview(raw))
        out = np.empty(n, dtype=object)
        pos = 0
        for i in range(n):
            try:
                length, pos = _get_varint(raw, pos, len(raw))
            except _Corrupt:
                raise errors.DataLossError(
                    None, None, f"Variant tensor {_show(key)}: bad length of element "
                                f"{i}") from None
            elem = bytes(raw[pos:pos + length])
            pos += length
            if pos + 4 > len(raw) or struct.unpack_from("<I", raw, pos)[0] != \
                    crc32c.value(elem):
                raise errors.DataLossError(
                    None, None, f"Checksum does not match for variant tensor {_show(key)} "
                                f"element {i}")
            pos += 4
            out[i] = elem
        return out.reshape(shape), crc32c.value(bytes(raw))


def _decode_varints(raw, n: int) -> tuple[list[int], int]:
    """The first n varint64s of `raw` (vectorised) and the position after them."""
    if n == 0:
        return [], 0
    head = np.frombuffer(raw, dtype=np.uint8, count=min(len(raw), 10 * n))
    ends = np.flatnonzero(head < 0x80)[:n]
    if ends.size < n:
        raise _Corrupt("bad varint")
    starts = np.concatenate(([0], ends[:-1] + 1))
    sizes = ends - starts + 1
    if sizes.max() > 10:
        raise _Corrupt("bad varint")
    used = head[:ends[-1] + 1]
    group = np.repeat(np.arange(n), sizes)
    shift = (np.arange(used.size) - starts[group]) * 7
    parts = (used & 0x7F).astype(np.uint64) << shift.astype(np.uint64)
    values = np.bitwise_or.reduceat(parts, starts)
    return values.tolist(), int(ends[-1]) + 1


def _show(key: bytes) -> str:
    return key.decode("utf-8", "replace")


def _parse(cls, key: bytes, value: bytes, filename: str | None):
    """ParseEntryProto: DataLossError "Entry for key <key> not parseable."."""
    msg = cls()
    try:
        msg.ParseFromString(value)
    except Exception:  # noqa: BLE001  (protobuf's DecodeError and friends)
        detail = f"Entry for key {_show(key)} not parseable."
        if filename is not None:
            detail = _corrupt_file(filename, detail, "unable to parse header")
        raise errors.DataLossError(None, None, detail) from None
    return msg


# -- merging ------------------------------------------------------------------------------

@_tf_io_errors
def merge_bundles(prefixes, merged_prefix, allow_missing_files: bool = False) -> None:
    """MergeBundles: one index over the data files of several bundles (renamed to
    ``<merged>.data-<i>-of-<n>``, numbered in the order they are first referenced); the
    source index files are deleted. InvalidArgumentError for a tensor in two bundles."""
    merged_prefix = _as_str(merged_prefix)
    _create_dir(os.path.dirname(merged_prefix))
    state = _MergeState()
    merged_any = False
    for prefix in prefixes:
        prefix = _as_str(prefix)
        if allow_missing_files and not os.path.exists(meta_filename(prefix)):
            continue
        _merge_one(prefix, state)
        merged_any = True
    if allow_missing_files and not merged_any:
        raise errors.InvalidArgumentError(
            None, None, "Expected at least one input to merge, but all were missing")
    total = len(state.shard_ids)
    for path, shard in state.shard_ids.items():
        os.replace(path, data_filename(merged_prefix, shard, total))
    header = header_proto(state.num_shards)
    if state.header is not None:
        header.endianness = state.header.endianness
        header.version.CopyFrom(state.header.version)
    write_index(meta_filename(merged_prefix), header, sorted(state.entries.items()))
    for prefix in prefixes:
        try:
            os.remove(meta_filename(_as_str(prefix)))
        except OSError:
            pass


class _MergeState:
    def __init__(self):
        self.num_shards = 0
        self.header = None
        self.entries: dict[bytes, tensor_bundle_pb2.BundleEntryProto] = {}
        self.shard_ids: dict[str, int] = {}


def _merge_one(prefix: str, state: _MergeState) -> None:
    filename = meta_filename(prefix)
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{filename}; No such file or directory") \
            from None
    table = read_table(data, filename)
    if not table or table[0][0] != HEADER_KEY:
        raise errors.DataLossError(None, None, _corrupt_file(filename, "no header entry"))
    header = _parse(tensor_bundle_pb2.BundleHeaderProto, HEADER_KEY, table[0][1], filename)
    state.num_shards += header.num_shards
    if state.header is None:
        state.header = header
    elif state.header.endianness != header.endianness:
        raise errors.InvalidArgumentError(
            None, None, "Merging bundles with conflicting endianness; inputs corrupted?")
    elif state.header.version.SerializeToString() != header.version.SerializeToString():
        raise errors.InvalidArgumentError(
            None, None, "Merging bundles with different format versions: merged "
            f"{state.header.version.SerializeToString()!r} vs. curr "
            f"{header.version.SerializeToString()!r}")
    for key, value in table[1:]:
        existing = state.entries.get(key)
        if existing is not None and not existing.slices:
            raise errors.InvalidArgumentError(
                None, None, f"Duplicate tensor keyed by {_show(key)} encountered, when "
                f"merging prefix: {prefix}")
        entry = _parse(tensor_bundle_pb2.BundleEntryProto, key, value, None)
        if existing is not None:
            if not entry.slices:
                raise errors.InternalError(
                    None, None, f"Duplicate tensor keyed by {_show(key)}; attempting to merge "
                    "in a non-slice bundle entry")
            existing.slices.extend(entry.slices)
            continue
        path = data_filename(prefix, entry.shard_id, header.num_shards)
        entry.shard_id = state.shard_ids.setdefault(path, len(state.shard_ids))
        state.entries[key] = entry
