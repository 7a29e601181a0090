"""The `af.io` namespace: TF's `tf.io` names aioflow has (the base64 pair is also in
af.strings; the tf.Example parsing names are also at the top level, as TF 1 has them;
the image codecs also in af.image)."""

from aioflow.lib.tf_record import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)
from aioflow.ops.image_codec_ops import (
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    extract_jpeg_shape,
)
from aioflow.ops.io_ops import matching_files, read_file
from aioflow.ops.parsing_ops import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from aioflow.ops.string_ops import decode_base64, encode_base64

__all__ = ["read_file", "matching_files", "decode_base64", "encode_base64", "FixedLenFeature",
           "FixedLenSequenceFeature", "VarLenFeature", "parse_example",
           "parse_single_example", "decode_jpeg", "decode_and_crop_jpeg",
           "extract_jpeg_shape", "decode_png", "decode_bmp", "decode_gif", "decode_image",
           "encode_jpeg", "encode_png", "TFRecordWriter", "TFRecordOptions",
           "TFRecordCompressionType", "tf_record_iterator"]
