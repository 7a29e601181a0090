"""FunctionLibraryDefinition: the functions a graph carries (GraphDef.library), by name
(TF's FunctionLibraryDefinition).

A library travels with its graph: import_graph_def adds a GraphDef's library to the
Python Graph, as_graph_def writes it back, a Session sends it to the runtime with the
nodes, and a partition carries the functions its nodes call (`reachable`). Function
names are unique: adding a function that a library holds already is a no-op when the two
definitions are equal and an InvalidArgumentError when they differ, as TF's AddLibrary.
Gradient entries (GradientDef) are kept and written back; nothing runs them.

The library is append-only; `version` grows with every addition, so a holder can tell
cheaply whether it has changed. Additions take a lock (a session extends from several
threads); reads do not (a dict lookup is atomic).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from aioflow.framework import errors
from aioflow.proto import attr_value_pb2, function_pb2

#: The call ops whose callee is named by a func attr (the runtime's functional ops).
FUNCTION_CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})


class FunctionLibraryDefinition:
    """FunctionDefs and GradientDefs by name; `find`, `add_library`, `reachable`."""

    def __init__(self, library: function_pb2.FunctionDefLibrary | None = None):
        self._functions: dict[str, function_pb2.FunctionDef] = {}
        self._gradients: dict[str, str] = {}  # function name -> its gradient function
        self._registered_gradients: list = []
        self._lock = threading.Lock()
        self.version = 0
        if library is not None:
            self.add_library(library)

    # -- reading ----------------------------------------------------------------------
    def find(self, name: str) -> function_pb2.FunctionDef | None:
        """The FunctionDef called `name`, or None."""
        return self._functions.get(name)

    def contains(self, name: str) -> bool:
        return name in self._functions

    __contains__ = contains

    def find_gradient(self, name: str) -> str | None:
        """The name of the gradient function registered for `name` (GradientDef)."""
        return self._gradients.get(name)

    def names(self) -> list[str]:
        with self._lock:
            return list(self._functions)

    def __len__(self) -> int:
        return len(self._functions)

    def __bool__(self) -> bool:
        return bool(self._functions or self._gradients)

    def to_proto(self) -> function_pb2.FunctionDefLibrary:
        """The library as a FunctionDefLibrary (functions sorted by name, as TF's)."""
        out = function_pb2.FunctionDefLibrary()
        with self._lock:  # (another thread may be adding)
            functions = sorted(self._functions.items())
            gradients = sorted(self._gradients.items())
            registered = list(self._registered_gradients)
        for _, fdef in functions:
            out.function.add().CopyFrom(fdef)
        for name, grad in gradients:
            out.gradient.add(function_name=name, gradient_func=grad)
        out.registered_gradients.extend(registered)
        return out

    def reachable(self, roots: Iterable[str]) -> FunctionLibraryDefinition:
        """A library of the functions named in `roots` and of every function they call,
        transitively (their gradients too), as TF's ReachableDefinitions. Names that are
        not functions of this library are ignored (an op type, a missing function: the
        call reports it when it is instantiated)."""
        out = FunctionLibraryDefinition()
        stack = [name for name in roots if name in self._functions]
        while stack:
            name = stack.pop()
            if name in out._functions:
                continue
            fdef = self._functions[name]
            out._functions[name] = fdef
            grad = self._gradients.get(name)
            if grad is not None:
                out._gradients[name] = grad
                if grad in self._functions:
                    stack.append(grad)
            for node in fdef.node_def:
                stack.extend(n for n in called_functions(node) if n in self._functions)
        out.version = len(out._functions)
        return out

    # -- adding -------------------------------------------------------------------------
    def add_function_def(self, fdef: function_pb2.FunctionDef) -> bool:
        """Add one function; False when an equal one is there already."""
        with self._lock:
            return self._add(fdef)

    def add_library(self, library) -> bool:
        """Add every function and gradient of `library` (a FunctionDefLibrary or a
        FunctionLibraryDefinition); all or nothing: a conflict adds none. True when
        something was new."""
        if isinstance(library, FunctionLibraryDefinition):
            library = library.to_proto()
        with self._lock:
            for fdef in library.function:
                self._check_new(fdef)
            for grad in library.gradient:
                known = self._gradients.get(grad.function_name)
                if known is not None and known != grad.gradient_func:
                    raise errors.InvalidArgumentError(
                        None, None, f"Cannot add gradient function '{grad.gradient_func}' "
                                    f"for '{grad.function_name}' because a different "
                                    f"gradient function '{known}' is already registered.")
            changed = False
            for fdef in library.function:
                changed = self._add(fdef) or changed
            for grad in library.gradient:
                if grad.function_name not in self._gradients:
                    self._gradients[grad.function_name] = grad.gradient_func
                    changed = True
            for reg in library.registered_gradients:
                if reg not in self._registered_gradients:
                    self._registered_gradients.append(reg)
                    changed = True
            if changed:
                self.version += 1
            return changed

    def _check_new(self, fdef) -> None:
        name = fdef.signature.name
        if not name:
            raise errors.InvalidArgumentError(None, None, "A FunctionDef has no name "
                                                          "(signature.name is empty)")
        known = self._functions.get(name)
        if known is not None and known != fdef:
            raise errors.InvalidArgumentError(
                None, None, f"Cannot add function '{name}' because a different function "
                            f"with the same name already exists.")

    def _add(self, fdef) -> bool:
        self._check_new(fdef)
        name = fdef.signature.name
        if name in self._functions:
            return False
        copy = function_pb2.FunctionDef()
        copy.CopyFrom(fdef)
        self._functions[name] = copy
        self.version += 1
        return True

    def copy(self) -> FunctionLibraryDefinition:
        out = FunctionLibraryDefinition()
        with self._lock:
            out._functions = dict(self._functions)
            out._gradients = dict(self._gradients)
            out._registered_gradients = list(self._registered_gradients)
            out.version = self.version
        return out


def called_functions(node_def) -> list[str]:
    """The functions a node may call: the names of its func and list(func) attrs, and
    its op type (a node whose op is a function of the library calls it directly)."""
    names = [node_def.op]
    for value in node_def.attr.values():
        _collect_funcs(value, names)
    return names


def _collect_funcs(value: attr_value_pb2.AttrValue, names: list[str]) -> None:
    kind = value.WhichOneof("value")
    if kind == "func":
        names.append(value.func.name)
        for inner in value.func.attr.values():
            _collect_funcs(inner, names)
    elif kind == "list":
        for func in value.list.func:
            names.append(func.name)
            for inner in func.attr.values():
                _collect_funcs(inner, names)


def graph_functions(node_defs: Iterable) -> list[str]:
    """Every name a node of `node_defs` may call (see `called_functions`)."""
    out: list[str] = []
    for node in node_defs:
        out.extend(called_functions(node))
    return out
