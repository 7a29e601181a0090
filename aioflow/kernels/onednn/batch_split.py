"""A oneDNN convolution gradient's batch cut into chunks run side by side: the calling
thread and a helper thread each run single-threaded primitives on chunks of the batch
(conv_grad_onednn.py, from SPLIT_WORK multiply-adds).

TF runs its backward primitives on an OpenMP team of its intra-op threads. A team meets
at barriers: each thread runs a fixed share, so the call lasts as long as its slowest
thread, and on two cores shared with other processes, or beside the layer's other
gradient on the executor's pool, a team thread that waits for a core holds the whole
call up (a 0.25 ms filter gradient took 1-8 ms on a team of two at load 6). Here the
chunks are taken one at a time by the caller and by helper jobs
(aioflow/kernels/element_threads.py `share_ranges`: the warm helper's,
aioflow/kernels/warm_helper.py, which polls for work a while after its last job), and
the caller waits only for chunks a helper has started: a helper that gets no core
leaves its share to the caller.

Every chunk is the same geometry with a smaller batch (its own primitive, cached by
shape as every other); the backward-data gradient's chunks write disjoint slices of its
output, the backward-weights gradient sums the chunks' partial filters. Memory-bound
gradients (pooling, batch norm) are not split: on the two-core development machine two
threads gained nothing on them (docs/performance.md, cnn_step's section).
"""

from __future__ import annotations

from collections.abc import Callable

from aioflow.kernels.element_threads import share_ranges
from aioflow.kernels.onednn import backend

#: Multiply-adds from which a call is split (about 0.6 ms on one AVX-512 core). A hand-off
#: to a helper costs 10-30 µs of the caller's time and a wake-up, and a training step's
#: mid-size gradients already run side by side on the executor's pool (a layer's input
#: and filter gradients): benchmarks/training.py's cnn_bn step, whose two 29 M
#: multiply-add gradients were split from 2**23 or 2**24, took 5% more CPU a step for no
#: shorter step (ABAB in one process, load 4-6: 4.94 against 4.70 ms CPU, wall median
#: 4.50 against 4.20 ms); the 302 M ones of benchmarks/gradients_peer.py's conv step,
#: split instead of an OpenMP team, gave the faster steps (the fastest round's median
#: 10.95 against 11.53 ms, 14.47 against 15.93 in another run) at CPU within noise.
SPLIT_WORK = 1 << 26
#: The fewest multiply-adds in a chunk: chunks are cut about two per thread, fewer when
#: they would be smaller than this.
CHUNK_WORK = 1 << 22


def splits(batch: int, work: int, splittable: bool = True) -> bool:
    """Whether a call of `work` multiply-adds over `batch` items is cut into chunks
    (when more than one thread may run them: `split_team`)."""
    return splittable and batch >= 2 and work >= SPLIT_WORK


def chunks(batch: int, work: int, threads: int) -> list[tuple[int, int]]:
    """[lo, hi) batch ranges of a call of `work` multiply-adds over `threads` threads:
    one range below SPLIT_WORK or with one thread, else about two per thread of equal
    size (a smaller last one when the batch does not divide), each of at least
    CHUNK_WORK where the work allows."""
    if threads <= 1 or batch < 2 or work < SPLIT_WORK:
        return [(0, batch)]
    count = max(2, min(batch, 2 * threads, work // CHUNK_WORK))
    size = -(-batch // count)
    return [(lo, min(lo + size, batch)) for lo in range(0, batch, size)]


def run_chunks(ranges: list[tuple[int, int]], fn: Callable[[int, int], None],
               threads: int) -> None:
    """fn(lo, hi) for every range, shared by this thread and threads - 1 helpers (one
    range: inline). fn runs single-threaded primitives (primitives.set_threads(1))."""
    if len(ranges) == 1:
        fn(*ranges[0])
        return
    share_ranges(ranges, fn, threads)


class split_team:  # noqa: N801 - used as a context manager, like a function
    """`with split_team(batch, work, team_from) as split`: the threads of a backward call
    of `work` multiply-adds over `batch` items (`splittable` False: never split).
    `split.ranges`: the chunks (`chunks`),
    shared among `split.threads` threads; `split.primitive_threads`: each primitive's
    OpenMP team.

    A split call (from SPLIT_WORK, a batch of two or more) shares its chunks among the
    intra-op threads (backend.team_size: one while a job runs beside the event loop's
    work) whatever else runs: each primitive is single-threaded and the caller is one of
    backend.team's budget, and a helper busy with another call's chunks (two gradients
    of a layer run side by side on the executor's pool) takes this call's once that one
    is done, so the two finish together instead of one waiting for the other. A call not
    split takes backend.team's threads from `team_from` multiply-adds (a batch of one),
    one below."""

    __slots__ = ("_team", "_batch", "_work", "_split", "ranges", "threads",
                 "primitive_threads")

    def __init__(self, batch: int, work: int, team_from: int, splittable: bool = True):
        self._split = splits(batch, work, splittable)
        self._team = backend.team(0 if self._split or work < team_from else work)
        self._batch, self._work = batch, work

    def __enter__(self) -> split_team:
        threads = self._team.__enter__()
        if self._split:
            self.threads = backend.team_size(self._work)
            self.ranges = chunks(self._batch, self._work, self.threads)
        else:
            self.threads = threads
            self.ranges = [(0, self._batch)]
        self.primitive_threads = 1 if len(self.ranges) > 1 else threads
        return self

    def __exit__(self, *exc) -> None:
        self._team.__exit__(*exc)
