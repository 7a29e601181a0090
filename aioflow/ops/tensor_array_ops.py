"""`TensorArray`: TF v1's graph TensorArray over the TensorArray V3 ops.

A TensorArray is a (handle, flow) pair. Every write returns a new TensorArray with the
write's flow output, so reads that follow it depend on it; while_loop and cond carry
TensorArrays through their flows. The element shape is inferred from writes and shared
by every TensorArray built from the same handle, as in TF.
"""

from __future__ import annotations

import contextlib
import logging

from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.constant_value import constant_value
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, math_ops

__all__ = ["TensorArray", "build_ta_with_new_flow"]

_logger = logging.getLogger(__name__)


def _check_dtypes(value, dtype) -> None:
    if value.dtype != dtype:
        _logger.error("Error: Input value %s has dtype %s, but expected dtype %s.  This leads "
                      "to undefined behavior and will be an error in future versions of "
                      "TensorFlow.", value, value.dtype.name, dtypes.as_dtype(dtype).name)


class TensorArray:
    """A dynamically sized array of tensors of one dtype, as TF v1's graph TensorArray."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape: bool = True,
                 element_shape=None, colocate_with_first_write_call: bool = True,
                 name=None):
        if handle is not None and tensor_array_name:
            raise ValueError("Cannot provide both `handle` and `tensor_array_name` arguments "
                             "at the same time.")
        if handle is not None and not isinstance(handle, ops.Tensor):
            raise TypeError(f"Expected `handle` to be a Tensor, but got `{handle}` of type "
                            f"`{type(handle)}` instead.")
        if handle is None and size is None:
            raise ValueError("Argument `size` must be provided if handle is not provided.")
        if handle is not None and size is not None:
            raise ValueError("Cannot provide both a `handle` and `size` arguments at the same "
                             "time.")
        if handle is not None and element_shape is not None:
            raise ValueError("Cannot provide both `handle` and `element_shape` arguments at "
                             "the same time.")
        if handle is not None and dynamic_size is not None:
            raise ValueError("Cannot provide both `handle` and `dynamic_size` arguments at "
                             "the same time.")
        if handle is not None and clear_after_read is not None:
            raise ValueError("Cannot provide both `handle` and `clear_after_read` arguments "
                             "at the same time.")
        if clear_after_read is None:
            clear_after_read = True
        self._dynamic_size = dynamic_size or False
        self._dtype = dtypes.as_dtype(dtype).base_dtype
        # The first tensor written decides where the TensorArray's ops are colocated.
        self._colocate_with_first_write_call = colocate_with_first_write_call
        self._colocate_with: list | None = [] if colocate_with_first_write_call else None
        # Shared (a one-element list) by every TensorArray built from this handle.
        self._element_shape = [tensor_shape.as_shape(element_shape)]
        self._infer_shape = infer_shape
        self._size = size
        with ops.name_scope(name, "TensorArray", [handle, size, flow]) as scope:
            if handle is not None:
                self._handle = handle
                if flow is None:
                    raise ValueError("flow must not be None if handle is not None.")
                self._flow = flow
            else:
                def create():
                    return apply_op(
                        "TensorArrayV3", name=scope, size=size, dtype=dtype,
                        element_shape=element_shape, identical_element_shapes=infer_shape,
                        dynamic_size=self._dynamic_size, clear_after_read=clear_after_read,
                        tensor_array_name=tensor_array_name or "")

                if colocate_with_first_write_call:
                    with ops.device(None), ops.colocate_with(None, ignore_existing=True):
                        self._handle, self._flow = create()
                else:
                    self._handle, self._flow = create()

    # -- properties -------------------------------------------------------------------------
    @property
    def flow(self) -> ops.Tensor:
        """The flow tensor: it orders the TensorArray's reads after its writes."""
        return self._flow

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def handle(self) -> ops.Tensor:
        """The resource handle tensor."""
        return self._handle

    @property
    def element_shape(self) -> tensor_shape.TensorShape:
        return self._element_shape[0]

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    def __repr__(self) -> str:
        return f"<af.TensorArray '{self._handle.name}' flow={self._flow.name}>"

    # -- helpers ----------------------------------------------------------------------------
    def _check_element_shape(self, shape) -> None:
        """Check `shape` against the element shape, and refine it (if infer_shape)."""
        shape = tensor_shape.as_shape(shape)
        if not shape.is_compatible_with(self.element_shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected "
                             f"{self.element_shape} ")
        if self._infer_shape:
            self._element_shape[0] = self.element_shape.merge_with(shape)

    @contextlib.contextmanager
    def _maybe_colocate_with(self, value):
        """Colocate with the first value written (if colocate_with_first_write_call)."""
        if not self._colocate_with_first_write_call:
            yield
            return
        if not self._colocate_with:
            self._colocate_with.append(value)
        with ops.colocate_with(self._colocate_with[0]):
            yield

    def identity(self) -> TensorArray:
        """A TensorArray whose flow is an Identity of this one's."""
        return build_ta_with_new_flow(self, array_ops.identity(self._flow))

    def mark_used(self) -> None:
        """TF's "should use the result" marker; nothing to do here."""

    # -- operations -------------------------------------------------------------------------
    def grad(self, source, flow=None, name=None) -> TensorArray:
        """The gradient TensorArray of this one for the gradients() call `source` (one per
        source; writes to one index are summed); TensorArrayGradV3 waits for `flow`."""
        if flow is None:
            flow = self._flow
        with ops.name_scope(name, "TensorArrayGrad", [self._handle]):
            with ops.colocate_with(self._handle):
                g_handle, _ = apply_op("TensorArrayGradV3", name=name, handle=self._handle,
                                       source=source, flow_in=flow)
                with ops.control_dependencies([g_handle]):
                    flow = array_ops.identity(flow, name="gradient_flow")
                g = TensorArray(dtype=self._dtype, handle=g_handle, flow=flow,
                                infer_shape=self._infer_shape,
                                colocate_with_first_write_call=False)
                g._element_shape = self._element_shape
                return g

    def read(self, index, name=None) -> ops.Tensor:
        """The element at `index`."""
        value = apply_op("TensorArrayReadV3", name=name, handle=self._handle, index=index,
                         flow_in=self._flow, dtype=self._dtype)
        if self._element_shape:
            value.set_shape(self._element_shape[0])
        return value

    def write(self, index, value, name=None) -> TensorArray:
        """A new TensorArray with `value` written at `index`."""
        with ops.name_scope(name, "TensorArrayWrite", [self._handle, index, value]):
            value = ops.convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            _check_dtypes(value, self._dtype)
            self._check_element_shape(value.shape)
            with self._maybe_colocate_with(value):
                flow_out = apply_op("TensorArrayWriteV3", name=name, handle=self._handle,
                                    index=index, value=value, flow_in=self._flow)
            return build_ta_with_new_flow(self, flow_out)

    def stack(self, name=None) -> ops.Tensor:
        """All elements stacked along a new first dimension."""
        with ops.colocate_with(self._handle):
            with ops.name_scope(name, "TensorArrayStack", [self._handle]):
                value = self.gather(math_ops.range(0, self.size()), name=name)
                if (self.element_shape and not self._dynamic_size
                        and self._size is not None):
                    size = (constant_value(self._size)
                            if isinstance(self._size, ops.Tensor) else self._size)
                    dim0 = None if size is None else int(size)
                    value.set_shape(tensor_shape.TensorShape([dim0]).concatenate(
                        self.element_shape))
                return value

    def gather(self, indices, name=None) -> ops.Tensor:
        """The elements at `indices`, stacked along a new first dimension."""
        if self._element_shape:
            element_shape = self._element_shape[0]
        else:
            element_shape = tensor_shape.unknown_shape()
        value = apply_op("TensorArrayGatherV3", name=name, handle=self._handle,
                         indices=indices, flow_in=self._flow, dtype=self._dtype,
                         element_shape=element_shape)
        if self.element_shape:
            value.set_shape(tensor_shape.TensorShape([None]).concatenate(self.element_shape))
        return value

    def concat(self, name=None) -> ops.Tensor:
        """All elements concatenated along their first dimension."""
        except0 = self.element_shape[1:]
        value, _ = apply_op("TensorArrayConcatV3", name=name, handle=self._handle,
                            flow_in=self._flow, dtype=self._dtype,
                            element_shape_except0=except0)
        if self.element_shape:
            dim0 = None
            if self._infer_shape:
                size = constant_value(self.size())
                first = self.element_shape.as_list()[0]
                if size is not None and first is not None:
                    dim0 = int(size) * first
            value.set_shape(tensor_shape.TensorShape([dim0]).concatenate(except0))
        return value

    def unstack(self, value, name=None) -> TensorArray:
        """A new TensorArray holding value[i] at index i."""
        with ops.name_scope(name, "TensorArrayUnstack", [self._handle, value]):
            num_elements = array_ops.shape(value)[0]
            return self.scatter(indices=math_ops.range(0, num_elements), value=value,
                                name=name)

    def scatter(self, indices, value, name=None) -> TensorArray:
        """A new TensorArray holding value[i] at indices[i]."""
        with ops.name_scope(name, "TensorArrayScatter", [self._handle, value, indices]):
            value = ops.convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            _check_dtypes(value, self._dtype)
            self._check_element_shape(value.shape[1:])
            with self._maybe_colocate_with(value):
                flow_out = apply_op("TensorArrayScatterV3", name=name, handle=self._handle,
                                    indices=indices, value=value, flow_in=self._flow)
            return build_ta_with_new_flow(self, flow_out)

    def split(self, value, lengths, name=None) -> TensorArray:
        """A new TensorArray holding consecutive pieces of `value` of `lengths` rows."""
        with ops.name_scope(name, "TensorArraySplit", [self._handle, value, lengths]):
            value = ops.convert_to_tensor(value, dtype=self._dtype, name="value")
            with self._maybe_colocate_with(value):
                lengths_64 = math_ops.cast(lengths, dtypes.int64)
                clengths = constant_value(lengths_64)
                if value.shape.rank is not None and clengths is not None:
                    if clengths.shape and clengths.max() == clengths.min():
                        self._check_element_shape(
                            tensor_shape.TensorShape([int(clengths[0])]).concatenate(
                                value.shape[1:]))
                flow_out = apply_op("TensorArraySplitV3", name=name, handle=self._handle,
                                    value=value, lengths=lengths_64, flow_in=self._flow)
            return build_ta_with_new_flow(self, flow_out)

    def size(self, name=None) -> ops.Tensor:
        """The number of elements (the static size when it is fixed)."""
        if not self._dynamic_size and self._size is not None:
            return ops.convert_to_tensor(self._size, dtype=dtypes.int32)
        return apply_op("TensorArraySizeV3", name=name, handle=self._handle,
                        flow_in=self.flow)

    def close(self, name=None) -> ops.Operation:
        """An op that releases the TensorArray's values."""
        return apply_op("TensorArrayCloseV3", name=name, handle=self._handle)


def build_ta_with_new_flow(old_ta: TensorArray, flow) -> TensorArray:
    """A TensorArray on `old_ta`'s handle with the flow `flow` (sharing its size, element
    shape and colocation)."""
    new_ta = TensorArray(dtype=old_ta.dtype, handle=old_ta.handle, flow=flow,
                         infer_shape=old_ta._infer_shape,
                         colocate_with_first_write_call=old_ta._colocate_with_first_write_call)
    new_ta._dynamic_size = old_ta._dynamic_size
    new_ta._size = old_ta._size
    new_ta._colocate_with = old_ta._colocate_with
    new_ta._element_shape = old_ta._element_shape
    return new_ta
