"""OpDefs of TF's image codec ops (tensorflow/core/ops/image_ops.cc): DecodeJpeg,
DecodeAndCropJpeg, ExtractJpegShape, EncodeJpeg, EncodeJpegVariableQuality, DecodePng,
EncodePng, DecodeBmp, DecodeGif, DecodeImage.

Spelled as TF 2.21's OpDefs (tests/test_image_codec.py compares them with the ones
TensorFlow wrote into tests/data/image_codec_tf.npz). Shape functions as TF's: the
contents are a scalar, an image has rank 3 with the `channels` attr's depth when set."""

from __future__ import annotations

from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_DECODE_ATTRS = ("channels: int = 0", "ratio: int = 1", "fancy_upscaling: bool = true",
                 "try_recover_truncated: bool = false", "acceptable_fraction: float = 1.0",
                 "dct_method: string = ''")


def _with_rank(op, index: int, rank: int) -> TensorShape:
    shape = op.inputs[index].shape
    if shape.rank is not None and shape.rank != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {shape.rank} for "
                         f"'{op.name}' (op: '{op.type}')")
    return shape


def _image(op) -> list[TensorShape]:
    """[?, ?, channels] (the depth unknown when channels is 0) from scalar contents."""
    _with_rank(op, 0, 0)
    channels = op.get_attr("channels") if op.node_def.attr["channels"].HasField("i") else 0
    return [TensorShape([None, None, channels or None])]


def _crop(op) -> list[TensorShape]:
    _with_rank(op, 1, 1)
    return _image(op)


def _jpeg_shape(op) -> list[TensorShape]:
    _with_rank(op, 0, 0)
    return [TensorShape([3])]


def _encode(op) -> list[TensorShape]:
    _with_rank(op, 0, 3)
    return [TensorShape([])]


def _encode_variable(op) -> list[TensorShape]:
    _with_rank(op, 0, 3)
    _with_rank(op, 1, 0)
    return [TensorShape([])]


def _gif(op) -> list[TensorShape]:
    _with_rank(op, 0, 0)
    return [TensorShape([None, None, None, 3])]


def _decode_image(op) -> list[TensorShape]:
    """Rank 3 or 4 (a GIF's frames) unless expand_animations is off."""
    _with_rank(op, 0, 0)
    if op.get_attr("expand_animations"):
        return [TensorShape(None)]
    return _image(op)


_op = register_op("DecodeJpeg").input("contents: string").output("image: uint8")
for _spec in _DECODE_ATTRS:
    _op.attr(_spec)
_op.set_shape_fn(_image)

_op = (register_op("DecodeAndCropJpeg").input("contents: string").input("crop_window: int32")
       .output("image: uint8"))
for _spec in _DECODE_ATTRS:
    _op.attr(_spec)
_op.set_shape_fn(_crop)

(register_op("ExtractJpegShape").input("contents: string").output("image_shape: output_type")
    .attr("output_type: {int32, int64} = DT_INT32").set_shape_fn(_jpeg_shape))

(register_op("EncodeJpeg").input("image: uint8").output("contents: string")
    .attr("format: {'', 'grayscale', 'rgb'} = ''").attr("quality: int = 95")
    .attr("progressive: bool = false").attr("optimize_size: bool = false")
    .attr("chroma_downsampling: bool = true").attr("density_unit: {'in', 'cm'} = 'in'")
    .attr("x_density: int = 300").attr("y_density: int = 300")
    .attr("xmp_metadata: string = ''").set_shape_fn(_encode))

(register_op("EncodeJpegVariableQuality").input("images: uint8").input("quality: int32")
    .output("contents: string").set_shape_fn(_encode_variable))

(register_op("DecodePng").input("contents: string").output("image: dtype")
    .attr("channels: int = 0").attr("dtype: {uint8, uint16} = DT_UINT8")
    .set_shape_fn(_image))

(register_op("EncodePng").input("image: T").output("contents: string")
    .attr("compression: int = -1").attr("T: {uint8, uint16} = DT_UINT8")
    .set_shape_fn(_encode))

(register_op("DecodeBmp").input("contents: string").output("image: uint8")
    .attr("channels: int = 0").set_shape_fn(_image))

(register_op("DecodeGif").input("contents: string").output("image: uint8")
    .set_shape_fn(_gif))

(register_op("DecodeImage").input("contents: string").output("image: dtype")
    .attr("channels: int = 0").attr("dtype: {uint8, uint16, float} = DT_UINT8")
    .attr("expand_animations: bool = true").set_shape_fn(_decode_image))
