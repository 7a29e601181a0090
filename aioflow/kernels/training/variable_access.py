"""The variables an optimizer kernel updates: its first inputs, refs (the `Var` itself)
or resource handles, found, locked together and checked as TF's training_op_helpers do.

Every update takes the locks of all its variables, in one global order (TF's
MaybeLockVariableInputMutexesInOrder sorts by address; here by id), whatever
`use_locking` says: an update that runs on a pool thread while another step's update of
the same variable runs inline on the loop loses nothing, and two updates of variables in
different orders cannot deadlock. A ref variable's buffer is updated in place (a ref read
earlier sees the update, as in TF); a resource variable's is copied first when a reader
still holds it (copy-on-write, as TF's), so a value once read never changes.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.var import VAR_TYPE, Var

from ..state.resource_variable_kernels import handle_of


def _find(ctx, value, resource: bool) -> Var:
    if not resource:
        return value
    handle = handle_of(value)
    try:
        return ctx.resource_mgr.lookup(handle.container, VAR_TYPE, handle.name)
    except errors.NotFoundError:
        # TF: the mutex of a variable that does not exist yet is an invalid reference.
        raise errors.InternalError(None, None, "Invalid variable reference.") from None


def _in_lock_order(variables: list) -> list:
    """The distinct variables in the one global order their locks are taken in (by id)."""
    if len(variables) == 1:
        return variables
    return sorted(set(variables), key=id)  # (a Var hashes by identity)


class LockedVariables:
    """`with LockedVariables(ctx, inputs, names, resource) as bufs:` the writable buffers
    of the inputs named (as the node names them) in `names`, all their locks held;
    FailedPreconditionError as TF's for one not yet initialized."""

    __slots__ = ("names", "resource", "vars", "_locks")

    def __init__(self, ctx, inputs, names: list[str], resource: bool):
        self.names = names
        self.resource = resource
        self.vars = [_find(ctx, inputs[i], resource) for i in range(len(names))]
        self._locks: list = []

    def __enter__(self) -> list[np.ndarray]:
        held = self._locks
        for var in _in_lock_order(self.vars):
            var.lock.acquire()
            held.append(var.lock)
        try:
            return [self._buffer(i, var) for i, var in enumerate(self.vars)]
        except BaseException:
            self._release()
            raise

    def __exit__(self, *exc) -> None:
        self._release()

    def _release(self) -> None:
        held = self._locks
        while held:
            held.pop().release()

    def _buffer(self, index: int, var: Var) -> np.ndarray:
        if var.value is None:
            name = self.names[index]
            if self.resource:
                raise errors.FailedPreconditionError(
                    None, None, f"Attempting to use uninitialized variables: {name}")
            # TF's executor checks a ref input before the kernel runs, in these words.
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {name}")
        if self.resource:
            return var.writable()
        value = var.value
        if not value.flags.writeable:  # a buffer assigned from a read-only array
            value = var.value = np.array(value, copy=True)
        return value
