"""A variable's storage (TF's Var and LegacyVar), the ref that ref outputs carry, and the
handle that resource outputs carry.

A ref output (VariableV2's, Assign's, RefSwitch's, ...) is the `Var` itself: kernels whose
input is a ref (Assign, ScatterAdd, IsVariableInitialized, ...) take it as it is; a
non-ref input fed by a ref output reads it through `Var.read_ref` (the executor derefs
there, as TF's PrepareInputs does), which aliases the buffer, read-only. Ref variables
update their buffer in place; resource variables copy it first when a reader still holds
it (TF's copy-on-write), so a value already read never changes.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass

import numpy as np

from aioflow.framework import errors

# TF's ResourceHandle::ANONYMOUS_NAME: a VarHandleOp with this shared_name makes a fresh
# variable per kernel.
ANONYMOUS_NAME = "cd2c89b7-88b7-44c8-ad83-06c2a9158347"
# The type names TF's ResourceMgr gives the two kinds of variable (its errors show them).
VAR_TYPE = "N10tensorflow3VarE"
LEGACY_VAR_TYPE = "N10tensorflow9LegacyVarE"


class Var:
    """One variable: its value (None until initialized), dtype, and the lock its updates
    take (updates are read-modify-write and may run on pool threads)."""

    __slots__ = ("name", "dtype", "shape", "value", "lock", "__weakref__")

    def __init__(self, name: str, dtype, shape: tuple | None = None):
        self.name = name
        self.dtype = dtype  # the DType of its values (base type)
        self.shape = shape  # a ref variable's declared shape (None: unknown)
        self.value: np.ndarray | None = None
        self.lock = threading.Lock()

    @property
    def is_initialized(self) -> bool:
        return self.value is not None

    def read_ref(self, input_name: str) -> np.ndarray:
        """The value for a non-ref input (named as the consumer names it): the buffer,
        read-only; FailedPreconditionError when uninitialized, in TF's words."""
        value = self.value
        if value is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {input_name}")
        view = value.view()
        view.flags.writeable = False
        return view

    def writable(self) -> np.ndarray:
        """The buffer to update in place (call under `lock`), copied first when anything
        but this Var still holds it (a reader's view: copy-on-write, as TF's resource
        variables)."""
        value = self.value
        # References: self.value, `value` here, getrefcount's argument. A buffer that is
        # a view of another array is copied too: a reader's view of it has that array as
        # its base, so the count here would not see the reader.
        if sys.getrefcount(value) > 3 or not value.flags.writeable or value.base is not None:
            value = self.value = np.array(value, copy=True)
        return value

    def __repr__(self) -> str:
        state = "uninitialized" if self.value is None else f"shape {self.value.shape}"
        return f"<Var {self.name} {state}>"


@dataclass(frozen=True)
class ResourceHandle:
    """What a resource output carries (TF's ResourceHandle): where the resource lives."""

    device: str
    container: str
    name: str
    maybe_type_name: str = VAR_TYPE
    dtypes_and_shapes: tuple = ()

    def __repr__(self) -> str:
        return f"<ResourceHandle {self.container}/{self.name} on {self.device}>"


def handle_value(handle: ResourceHandle) -> np.ndarray:
    """A resource tensor: a 0-d object array holding the handle."""
    out = np.empty((), dtype=object)
    out[()] = handle
    return out
