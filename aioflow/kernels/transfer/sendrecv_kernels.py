"""Kernels of the transfer ops: `_Send` hands its input (or its deadness) to the step's
rendezvous, `_Recv` awaits it there. The executor runs both even on dead inputs, so a
value that is dead on one device is dead on the other.

Inside a while loop one transfer happens per iteration: the key then ends in the
frame's id and the iteration ("frame_id:iter", as TF's frame_iter); the executor (mode
FRAMED) sends and receives under `(frame_prefix, frame_id, iter)` itself, handing the value
straight to the receiving partition (runtime/frame_state.py). `_HostSend`/`_HostRecv`
are the same kernels: on a CPU, host memory is the device's memory."""

import sys

from aioflow.framework.op_kernel import AsyncOpKernel, OpKernel, register_kernel
from aioflow.framework.rendezvous_key import create_key


def _key(ctx) -> str:
    return create_key(ctx.get_attr("send_device"), ctx.get_attr("send_device_incarnation"),
                      ctx.get_attr("recv_device"), ctx.get_attr("tensor_name"))


def _frame_prefix(key: str) -> str:
    """The key without its "frame:iter" (the root frame's "0:0"); interned: the Send's
    and the Recv's are then one object, compared by identity in the rendezvous."""
    return sys.intern(key[:key.rindex(";") + 1])


@register_kernel("_HostSend", "CPU")
@register_kernel("_Send", "CPU")
class SendOp(OpKernel):
    """Send the input under this edge's key; never waits. `inputs[0]` is None when the
    input is dead."""

    is_transfer = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.key = _key(ctx)
        self.frame_prefix = _frame_prefix(self.key)  # inside a loop: + "frame_id:iter"

    def compute(self, ctx, inputs):
        value = inputs[0]
        ctx.rendezvous.send(self.key, value, value is None)
        return ()


@register_kernel("_HostRecv", "CPU")
@register_kernel("_Recv", "CPU")
class RecvOp(AsyncOpKernel):
    """Await the value sent under this edge's key; outputs None (dead) for a dead send."""

    is_transfer = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.key = _key(ctx)
        self.frame_prefix = _frame_prefix(self.key)  # inside a loop: + "frame_id:iter"

    def start_async(self, ctx, inputs, done):
        """The outputs when the value is there already; else None, and `done(outputs,
        error)` later (the executor's task-free path)."""
        def delivered(value, is_dead, error):
            done(None if error is not None else (None if is_dead else value,), error)

        got = ctx.rendezvous.recv_callback(self.key, delivered)
        if got is None:
            return None
        value, is_dead = got
        return (None if is_dead else value,)

    async def compute_async(self, ctx, inputs):
        value, is_dead = await ctx.rendezvous.recv(self.key)
        return (None if is_dead else value,)
