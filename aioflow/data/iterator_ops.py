"""TF 1.x's tf.compat.v1.data.Iterator (tensorflow/python/data/ops/iterator_ops.py) and
the ways to make one: make_one_shot_iterator (OneShotIterator with a dataset factory
function), make_initializable_iterator (IteratorV2 + MakeIterator), from_structure,
from_string_handle; and `iterate`, aioflow's `async for` over a dataset in a session.

Node names, colocation and the string-handle op each iterator makes are TF's."""

from __future__ import annotations

import base64
import hashlib

from aioflow.framework import dtypes, errors, ops, tensor_shape
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.tensor_spec import TensorSpec
from aioflow.proto import attr_value_pb2, function_pb2

from . import optional_ops, structure
from .func_graph import _out_arg_names

GLOBAL_ITERATORS = "iterators"


class Iterator:
    """An iterator resource in the graph and the ops on it."""

    def __init__(self, iterator_resource, initializer, element_spec):
        self._iterator_resource = iterator_resource
        self._initializer = initializer
        self._element_spec = element_spec
        self._string_handle = apply_op("IteratorToStringHandle",
                                       resource_handle=iterator_resource)
        self._get_next_call_count = 0
        ops.add_to_collection(GLOBAL_ITERATORS, iterator_resource)

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None,
                       output_classes=None) -> Iterator:
        spec = _spec_of(output_types, output_shapes)
        resource = apply_op("IteratorV2", container="", shared_name=shared_name or "",
                            output_types=structure.flat_types(spec),
                            output_shapes=structure.flat_shapes(spec))
        return Iterator(resource, None, spec)

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None,
                           output_classes=None) -> Iterator:
        spec = _spec_of(output_types, output_shapes)
        string_handle = ops.convert_to_tensor(string_handle, dtype=dtypes.string)
        resource = apply_op("IteratorFromStringHandleV2", string_handle=string_handle,
                            output_types=structure.flat_types(spec),
                            output_shapes=structure.flat_shapes(spec))
        return Iterator(resource, None, spec)

    @property
    def initializer(self):
        if self._initializer is not None:
            return self._initializer
        raise ValueError("The iterator does not have an initializer. This means it was "
                         "likely created using `tf.data.Dataset.make_one_shot_iterator()`. "
                         "For an initializable iterator, use "
                         "`tf.data.Dataset.make_initializable_iterator()` instead.")

    @property
    def element_spec(self):
        return self._element_spec

    @property
    def output_types(self):
        return structure.map_structure(lambda s: s.dtype, self._element_spec)

    @property
    def output_shapes(self):
        return structure.map_structure(lambda s: s.shape, self._element_spec)

    @property
    def output_classes(self):
        return structure.map_structure(lambda s: ops.Tensor, self._element_spec)

    def make_initializer(self, dataset, name=None):
        """The op that (re)initializes this iterator with `dataset`."""
        with ops.name_scope(name, "make_initializer") as scope:
            structure.assert_same_structure(self._element_spec, dataset.element_spec)
            for mine, theirs in zip(structure.flatten(self._element_spec),
                                    structure.flatten(dataset.element_spec), strict=True):
                if mine.dtype != theirs.dtype:
                    raise TypeError(f"Expected output types {self.output_types} but got "
                                    f"dataset with output types {dataset.output_types}.")
                if not mine.shape.is_compatible_with(theirs.shape):
                    raise TypeError(f"Expected output shapes compatible with "
                                    f"{self.output_shapes} but got dataset with output "
                                    f"shapes {dataset.output_shapes}.")
            with ops.colocate_with(self._iterator_resource.op):
                return apply_op("MakeIterator", dataset=dataset._variant_tensor,
                                iterator=self._iterator_resource, name=scope)

    def get_next(self, name=None):
        """The next element: a structure of tensors (OutOfRangeError at the end)."""
        self._get_next_call_count += 1
        with ops.colocate_with(self._iterator_resource.op):
            flat = apply_op("IteratorGetNext", iterator=self._iterator_resource,
                            output_types=structure.flat_types(self._element_spec),
                            output_shapes=structure.flat_shapes(self._element_spec),
                            name=name)
        return structure.pack_sequence_as(self._element_spec, list(flat))

    def get_next_as_optional(self):
        return optional_ops.get_next_as_optional(self)

    def string_handle(self, name=None):
        if name is None:
            return self._string_handle
        return apply_op("IteratorToStringHandle", resource_handle=self._iterator_resource,
                        name=name)


def _spec_of(output_types, output_shapes):
    if output_shapes is None:
        output_shapes = structure.map_structure(lambda _: tensor_shape.TensorShape(None),
                                                output_types)
    flat_types = structure.flatten(output_types)
    flat_shapes = _flatten_shapes(output_types, output_shapes)
    return structure.pack_sequence_as(output_types, [
        TensorSpec(s, t) for t, s in zip(flat_types, flat_shapes, strict=True)])


def _flatten_shapes(types, shapes) -> list:
    if isinstance(types, dict):
        return [x for k in sorted(types) for x in _flatten_shapes(types[k], shapes[k])]
    if isinstance(types, tuple):
        return [x for t, s in zip(types, shapes, strict=True) for x in _flatten_shapes(t, s)]
    return [tensor_shape.as_shape(shapes)]


def make_initializable_iterator(dataset, shared_name=None) -> Iterator:
    """IteratorV2 and its MakeIterator initializer, colocated with the dataset."""
    with ops.colocate_with(dataset._variant_tensor.op):
        resource = apply_op("IteratorV2", container="", shared_name=shared_name or "",
                            **dataset._flat_structure())
        initializer = apply_op("MakeIterator", dataset=dataset._variant_tensor,
                               iterator=resource)
        return Iterator(resource, initializer, dataset.element_spec)


def make_one_shot_iterator(dataset) -> Iterator:
    """OneShotIterator whose `dataset_factory` rebuilds the dataset (its ops copied into
    a function, as TF's Defun captures them by value)."""
    factory = _dataset_factory(dataset)
    with ops.colocate_with(dataset._variant_tensor.op):
        resource = apply_op("OneShotIterator", dataset_factory=factory, container="",
                            shared_name="", **dataset._flat_structure())
        return Iterator(resource, None, dataset.element_spec)


def _ancestors(op: ops.Operation) -> list[ops.Operation]:
    seen: set = set()
    stack = [op]
    while stack:
        o = stack.pop()
        if o in seen:
            continue
        seen.add(o)
        stack.extend(t.op for t in o.inputs)
        stack.extend(o.control_inputs)
    return [o for o in op.graph.get_operations() if o in seen]


def _dataset_factory(dataset) -> attr_value_pb2.NameAttrList:
    """The FunctionDef making `dataset` (no arguments, one variant result), added to the
    graph's library; named `_make_dataset_<hash of its definition>`."""
    variant = dataset._variant_tensor
    fdef = function_pb2.FunctionDef()
    for op in _ancestors(variant.op):
        if op.type in ("Placeholder", "PlaceholderV2", "PlaceholderWithDefault"):
            raise ValueError(f"Cannot capture a placeholder (name:{op.name}, "
                             f"type:{op.type}) by value.")
        if op.type in ("VariableV2", "VarHandleOp", "Variable"):
            raise ValueError(f"Cannot capture a stateful node (name:{op.name}, "
                             f"type:{op.type}) by value.")
        node = fdef.node_def.add()
        node.CopyFrom(op.node_def)
        del node.input[:]
        node.input.extend(f"{t.op.name}:{_out_arg_names(t.op)[t.value_index]}"
                          for t in op.inputs)
        node.input.extend(f"^{c.name}" for c in op.control_inputs)
    out_name = variant.op.name.lower()
    fdef.signature.output_arg.add(name=out_name, type=dtypes.variant.as_datatype_enum)
    fdef.signature.description = "Factory function for a dataset."
    fdef.signature.is_stateful = True
    fdef.ret[out_name] = f"{variant.op.name}:{_out_arg_names(variant.op)[0]}"
    fdef.attr["_disable_call_shape_inference"].b = True
    digest = hashlib.sha1(fdef.SerializeToString(deterministic=True)).digest()
    fdef.signature.name = "_make_dataset_" + base64.urlsafe_b64encode(digest[:8]).decode()[:11]
    variant.graph._library.add_function_def(fdef)
    return attr_value_pb2.NameAttrList(name=fdef.signature.name)


class IteratorSaveable:
    """An iterator's state as a Saver saves it (TF's _IteratorSaveable): the tensor is
    SerializeIterator's, restored by DeserializeIterator; its key is the iterator
    resource's op name. Put it in the SAVEABLE_OBJECTS collection (or a var_list)."""

    def __init__(self, iterator_resource, name=None):
        self._resource = iterator_resource
        self.op = iterator_resource.op
        self.name = name or iterator_resource.op.name
        self.dtype = dtypes.variant
        self.device = iterator_resource.device
        self._is_resource = True
        with ops.colocate_with(iterator_resource.op):
            self._serialized = apply_op("SerializeIterator", resource_handle=iterator_resource)

    def _as_graph_element(self):
        return self._serialized

    def restore_from(self, restored):
        with ops.colocate_with(self._resource.op):
            return apply_op("DeserializeIterator", resource_handle=self._resource,
                            serialized=restored)


def make_saveable_from_iterator(iterator, external_state_policy=None) -> IteratorSaveable:
    """tf.data.experimental.make_saveable_from_iterator."""
    return IteratorSaveable(iterator._iterator_resource)


async def iterate(dataset, session):
    """`async for element in af.data.iterate(dataset, session)`: the dataset's elements,
    each fetched by an awaited run of IteratorGetNext (the loop stays free while the
    pipeline works), until the end of the sequence."""
    with dataset._variant_tensor.graph.as_default():
        iterator = make_initializable_iterator(dataset)
        next_element = iterator.get_next()
    await session.run(iterator.initializer)
    while True:
        try:
            yield await session.run(next_element)
        except errors.OutOfRangeError:
            return
