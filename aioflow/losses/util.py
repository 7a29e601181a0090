"""The loss collections (TF's losses/util.py): add_loss, get_losses, the regularization
losses and their sum, and the total loss."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.ops import constant_op, math_ops

LOSSES = "losses"
REGULARIZATION_LOSSES = "regularization_losses"


def add_loss(loss, loss_collection=LOSSES) -> None:
    """Add `loss` to the collection (none: not collected)."""
    if loss_collection:
        ops.add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=LOSSES) -> list:
    return ops.get_collection(loss_collection, scope)


def get_regularization_losses(scope=None) -> list:
    return ops.get_collection(REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of the regularization losses (0.0 when there is none)."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return constant_op.constant(0.0)


def get_total_loss(add_regularization_losses: bool = True, name="total_loss", scope=None):
    """The sum of the collected losses (and the regularization losses)."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    return math_ops.add_n(losses, name=name)
