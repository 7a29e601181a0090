"""tf.io.TFRecordWriter, tf.io.TFRecordOptions and tf.compat.v1.python_io's
tf_record_iterator and TFRecordCompressionType (tensorflow/python/lib/io/tf_record.py):
TFRecord files written and read from Python, compressed or not, byte for byte as TF's.

These are blocking file calls, as TF's are; from a coroutine, run them in an executor
(a TFRecordDataset in a graph reads on the pool by itself)."""

from __future__ import annotations

from collections.abc import Iterator

from aioflow.lib.record_io import RecordWriter, compression_wbits, open_reader

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter",
           "tf_record_iterator"]


class TFRecordCompressionType:
    """TF 1's enum of compression types."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_NAMES = {TFRecordCompressionType.NONE: "", TFRecordCompressionType.ZLIB: "ZLIB",
          TFRecordCompressionType.GZIP: "GZIP"}


class TFRecordOptions:
    """How a TFRecord file is compressed ("", "ZLIB", "GZIP", or the enum)."""

    compression_type_map = {"ZLIB": TFRecordCompressionType.ZLIB,
                            "GZIP": TFRecordCompressionType.GZIP,
                            "": TFRecordCompressionType.NONE}

    def __init__(self, compression_type=None, **_zlib_options):
        if compression_type in _NAMES:
            compression_type = _NAMES[compression_type]
        self.compression_type = compression_type or ""
        compression_wbits(self.compression_type)

    @classmethod
    def get_compression_type_string(cls, options) -> str:
        if not options:
            return ""
        if isinstance(options, TFRecordOptions):
            return options.compression_type
        return TFRecordOptions(options).compression_type


class TFRecordWriter:
    """Writes records to a TFRecord file (a context manager; close() finishes it)."""

    def __init__(self, path, options=None):
        compression = TFRecordOptions.get_compression_type_string(options)
        self._writer = RecordWriter(open(path, "wb"), compression)  # noqa: SIM115

    def write(self, record) -> None:
        self._writer.write(record.encode() if isinstance(record, str) else record)

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def tf_record_iterator(path, options=None) -> Iterator[bytes]:
    """The records of a TFRecord file (DataLossError for a corrupted one, as TF's)."""
    reader = open_reader(str(path), TFRecordOptions.get_compression_type_string(options))
    try:
        while (record := reader.read()) is not None:
            yield record
    finally:
        reader.close()
