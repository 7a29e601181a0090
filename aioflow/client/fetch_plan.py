"""FetchPlan: flatten a nested fetch structure (tensors, ops, names; lists, tuples,
namedtuples, dicts; a SparseTensor as its three tensors, fetched as a SparseTensorValue)
into unique graph elements, and rebuild the results in its shape."""

from __future__ import annotations

import collections
import functools
from collections.abc import Mapping

from aioflow.framework import errors, ops
from aioflow.framework.sparse_tensor import SparseTensor, SparseTensorValue
from aioflow.framework.value_repr import summarize

_OP = -1  # marks a fetched Operation: its result is None
_MAP = object()  # marks a mapping in a template: (_MAP, constructor, [(key, child)])


class FetchPlan:
    """The unique tensors (fetches) and ops (targets) of one fetch structure."""

    def __init__(self, graph: ops.Graph, fetches):
        self.graph = graph
        self.tensor_names: list[str] = []
        self.tensors: list[ops.Tensor] = []
        self.targets: list[str] = []
        self._index: dict[str, int] = {}
        self.template = self._flatten(fetches)
        self.sorted_fetches = tuple(sorted(self.tensor_names))
        self.sorted_targets = tuple(sorted(set(self.targets)))
        position = {name: i for i, name in enumerate(self.sorted_fetches)}
        # For each unique tensor (in first-seen order), its retval index.
        self.retval_index = [position[name] for name in self.tensor_names]
        self.single = self.template if isinstance(self.template, int) and self.template >= 0 \
            else None

    def _element(self, fetch):
        """The graph element `fetch` names, with TF's client errors for what it cannot be."""
        try:
            element = self.graph.as_graph_element(fetch, allow_tensor=True,
                                                  allow_operation=True)
        except (KeyError, ValueError) as e:  # as TF: str() of a KeyError is its repr
            raise ValueError(f"Argument `fetch` = {fetch} cannot be interpreted as a Tensor. "
                             f"({e})") from None
        except TypeError as e:
            raise TypeError(f"Argument `fetch` = {summarize(fetch)} has invalid type "
                            f"\"{type(fetch).__name__}\" must be a string or Tensor. ({e})"
                            ) from None
        if not self.graph.is_fetchable(element):
            op = element.op if isinstance(element, ops.Tensor) else element
            raise errors.InaccessibleTensorError(
                f"Operation {op.name} has been marked as not fetchable. Typically this "
                "happens when it is defined in another function or code block. Use return "
                "values, explicit Python locals or TensorFlow collections to access it.")
        return element

    def _flatten(self, fetch):
        if fetch is None:
            raise TypeError("Argument `fetch` = None has invalid type \"NoneType\". Cannot be "
                            "None")
        if isinstance(fetch, (ops.Tensor, ops.Operation, str)):
            element = self._element(fetch)
            if isinstance(element, ops.Operation):
                self.targets.append(element.name)
                return _OP
            name = element.name
            index = self._index.get(name)
            if index is None:
                index = self._index[name] = len(self.tensor_names)
                self.tensor_names.append(name)
                self.tensors.append(element)
            return index
        if isinstance(fetch, SparseTensor):  # its three tensors, built back as TF's value
            return (SparseTensorValue, [self._flatten(t) for t in fetch._components()])
        if isinstance(fetch, Mapping):
            ctor = type(fetch)
            if isinstance(fetch, collections.defaultdict):  # keeps its default_factory
                ctor = functools.partial(collections.defaultdict, fetch.default_factory)
            return (_MAP, ctor, [(k, self._flatten(v)) for k, v in fetch.items()])
        if isinstance(fetch, tuple) and hasattr(fetch, "_fields"):
            return (type(fetch), [self._flatten(v) for v in fetch])
        if isinstance(fetch, (list, tuple)):
            return (type(fetch), [self._flatten(v) for v in fetch])
        if hasattr(fetch, "_as_graph_element"):
            return self._flatten(fetch._as_graph_element())
        raise TypeError(f"Argument `fetch` = {summarize(fetch)} has invalid type "
                        f"\"{type(fetch).__name__}\" must be a string or Tensor. (Can not "
                        f"convert a {type(fetch).__name__} into a Tensor or Operation.)")

    def build(self, values: list):
        """The results in the fetch structure; `values` are per unique tensor."""
        return _build(self.template, values)


def _build(template, values):
    if isinstance(template, int):
        return None if template == _OP else values[template]
    if template[0] is _MAP:
        _, ctor, children = template
        out = {k: _build(v, values) for k, v in children}
        return out if ctor is dict else ctor(out)
    kind, children = template
    items = [_build(c, values) for c in children]
    if kind is list:
        return items
    if hasattr(kind, "_fields"):
        return kind(*items)
    return kind(items)
