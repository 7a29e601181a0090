"""Where Relu, Relu6 and their gradients (ReluGrad, Relu6Grad) run: a large tensor's
pass on the thread that calls the kernel, in one piece, up to WHOLE_PASS elements.

These are one compiled loop over memory (activation_jit.py, activation_grad_jit.py): a
million float32 elements take ~70 µs warm, ~150-200 µs just after a convolution wrote
them. Two things cost more than that on the two-core development VM:

* a pool round trip: the executor's static rule (an input over cwise_kernels.BIG
  elements) or its learned cost (over kernel_stats.POOL_COST_S, 100 µs) sent such a
  call to a pool thread, and the event loop waited for it to come back; each hand-off
  wakes a sleeping thread, 50-300 µs on an idle vCPU (docs/performance.md, session
  11's quiet window), where TF's executor runs the kernel on the thread it is on;
* a split over the intra-op threads (element_threads.for_ranges above its SPLIT_ABOVE):
  the pass is memory-bound, so two threads gain nothing on this machine; one million
  elements took 72 µs whole against 82 split with both processes real-time, 72
  against 167 split at normal priority beside other processes (median of 200 calls).

So a call stays on the calling thread (the event loop, or a pool thread already
running the producer: executor_state's chains), with `learns_cost` off so the learned
cost does not send it away again; past BIG elements it is still `worth_a_thread`, so
that with other runs waiting for the loop, or a ready branch of the same run beside
it, the executor hands it to a free pool thread as it hands a convolution. Above
WHOLE_PASS elements (16 MiB of float32) a call goes to the pool and splits as before.
"""

from __future__ import annotations

import numpy as np

from aioflow.kernels.math.cwise_kernels import BIG

#: Elements up to which a pass runs whole on the calling thread (~0.3-0.7 ms).
WHOLE_PASS = 1 << 22


class CallingThreadPass:
    """Mixed into a kernel (before its base class): each call inline up to WHOLE_PASS
    elements (`expensive` None: the executor asks per call), worth a pool thread of its
    own past cwise_kernels.BIG when the loop has other such work."""

    expensive = None
    learns_cost = False  # the learned cost would send a 1 M-element pass to the pool

    def is_expensive(self, inputs: list) -> bool:
        return np.size(inputs[0]) > WHOLE_PASS

    def worth_a_thread(self, inputs: list) -> bool:
        return np.size(inputs[0]) > BIG


def whole_pass(n: int) -> bool:
    """Whether a pass of n elements runs in one piece on the calling thread."""
    return n <= WHOLE_PASS
