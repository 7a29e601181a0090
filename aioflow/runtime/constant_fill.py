"""Constants delivered once, when the partition is built, not run every step.

A frozen model's weights are Const nodes: InceptionV3's partition holds 192 of them
(its convolutions' filters and biases), MobileNetV2's 108. Each is a root of the step,
so every run used to pop each one from the ready queue, call its kernel (which returns
the same read-only array every time) and propagate it: ~0.27 ms of InceptionV3's b1
run, all of it before the first convolution could start. A Const's output is the same
array on every run (TF's ConstantOp only hands out its tensor), so here it is
propagated once: the simple propagator's per-run lists start from templates in which
every constant root's consumers already hold its value in their input slots and count
one pending input fewer, and the roots are the nodes left to start (the consumers that
wait for nothing else among them).

Only constants the simple propagator would run as plain inline roots qualify: a Const
kernel (`is_constant`; its value is made once and read-only, so no kernel can write
into it or take it over), no input (a Const gated by a control edge still runs when
the gate opens), not a member of a compiled segment (those read theirs as globals). A
traced run (RunOptions FULL_TRACE) runs them as before, so that step stats list every
node as TF's do.
"""

from __future__ import annotations

from dataclasses import dataclass

from aioflow.runtime.node_item import INLINE


@dataclass(frozen=True)
class ConstantFill:
    """The simple propagator's starting point with the constant roots delivered."""

    inputs: list    # the input slot template (None where no constant feeds the slot)
    pending: list   # the pending-count template, less one per delivered edge
    roots: tuple    # the nodes ready at the start of a run
    delivered: int  # constant roots delivered (not run per step)


def is_constant_root(item) -> bool:
    """Whether root `item` is a Const whose outputs can be delivered once."""
    kernel = item.kernel
    return (kernel is not None and getattr(kernel, "is_constant", False)
            and item.mode == INLINE and item.num_inputs == 0 and item.member_of is None)


def fill_constants(items: list, roots: tuple, pending_template: list,
                   total_inputs: int) -> ConstantFill:
    """Deliver the outputs of `roots`' constant roots as the propagator would (each
    output to its slots, each out-edge one pending count less); the roots of a run are
    the other roots, then the nodes this left waiting for nothing, in that order."""
    inputs = [None] * total_inputs
    pending = pending_template[:]
    start = []
    delivered = 0
    for item in roots:
        if not is_constant_root(item):
            start.append(item)
            continue
        delivered += 1
        outs = item.kernel.compute(None, [])
        for dst, slot, idx in item.out_data:
            inputs[idx] = outs[slot]
            pending[dst] -= 1
            if not pending[dst]:
                start.append(items[dst])
        for dst in item.out_control:
            pending[dst] -= 1
            if not pending[dst]:
                start.append(items[dst])
    return ConstantFill(inputs, pending, tuple(start), delivered)
