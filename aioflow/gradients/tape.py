"""A GradientTape's backprop over graph ops, as TF's C++ tape (tensorflow/c/eager/tape.h)
runs it when a tape is used in graph mode, so the gradient nodes are TF's in TF's order.
TF's nn_fused_batch_norm_grad.py takes batch norm's second-order gradient this way.

`record(fn, sources)` runs `fn` and records the ops it built that a tape would: those with
a gradient function and an input that is a source or the output of a recorded op (each
remembers which inputs are neither: its `skip_input_indices`). `gradient` then replays
ComputeGradient: usage counts and missing-output counts from the targets (PrepareBackprop),
the first ops taken in the order a libstdc++ unordered_map of op ids iterates
(InitialStack), the last one popped first, each op's output gradients summed with AddN,
and an op whose output gradients are all in queued at the front of the stack.
"""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.gradients.registry import get_gradient_function
from aioflow.ops import array_ops, math_ops

# libstdc++'s small bucket counts (_Prime_rehash_policy's __fast_bkt) and the start of its
# prime list, for simulating an unordered_map's iteration order.
_FAST_BKT = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)


def _primes(limit: int) -> list[int]:
    sieve = [True] * (limit + 1)
    out = []
    for n in range(2, limit + 1):
        if sieve[n]:
            out.append(n)
            for m in range(n * n, limit + 1, n):
                sieve[m] = False
    return out


_PRIMES = _primes(20000)


def _next_bucket_count(n: int) -> int:
    if n < len(_FAST_BKT):
        return _FAST_BKT[n]
    return next(p for p in _PRIMES if p >= n)


class _UnorderedMapOrder:
    """The iteration order of a std::unordered_map<int64, ...> (libstdc++: identity hash,
    max load factor 1, a new key first in its bucket's run or first in the list)."""

    def __init__(self):
        self.order: list[int] = []
        self.buckets = 1
        self.next_resize = 0

    def _place(self, order: list[int], key: int, buckets: int) -> None:
        bucket = key % buckets
        for i, other in enumerate(order):
            if other % buckets == bucket:
                order.insert(i, key)
                return
        order.insert(0, key)

    def insert(self, key: int) -> None:
        n = len(self.order) + 1
        if n > self.next_resize:  # _M_need_rehash: 11 buckets at least on the first insert
            min_buckets = max(n, 0 if self.next_resize else 11)
            if min_buckets >= self.buckets:
                self.buckets = _next_bucket_count(max(min_buckets + 1, self.buckets * 2))
                self.next_resize = self.buckets
                rehashed: list[int] = []
                for old in self.order:
                    self._place(rehashed, old, self.buckets)
                self.order = rehashed
            else:
                self.next_resize = self.buckets
        self._place(self.order, key, self.buckets)


class _MockOp:
    """What the tape hands a gradient function: the op, plus skip_input_indices."""

    def __init__(self, op, skip_input_indices):
        self._op = op
        self.skip_input_indices = skip_input_indices

    def __getattr__(self, name):
        return getattr(self._op, name)


class Tape:
    """The ops recorded while building from `sources` (Tensors), watched as leaves."""

    def __init__(self, sources):
        self.sources = list(sources)
        self.tensor_tape: dict = {id(t): -1 for t in self.sources}
        self.ops: dict[int, tuple] = {}  # op id -> (op, skip indices, grad fn)

    def record(self, graph, fn):
        """Run `fn()`, recording the ops it adds to `graph`; its result."""
        before = len(graph.get_operations())
        result = fn()
        for op in graph.get_operations()[before:]:
            try:
                grad_fn = get_gradient_function(op)
            except LookupError:
                grad_fn = None
            tracked = [id(t) in self.tensor_tape for t in op.inputs]
            if grad_fn is None or not any(tracked):
                continue
            op_id = len(self.ops)
            skip = tuple(i for i, t in enumerate(tracked) if not t) or None
            self.ops[op_id] = (op, skip, grad_fn)
            for t in op.outputs:
                self.tensor_tape[id(t)] = op_id
        return result

    def gradient(self, targets, sources, output_gradients):
        """The gradients of `targets` (seeded with `output_gradients`) for `sources`."""
        usage, missing, op_tape = self._prepare(targets)
        stack = [op_id for op_id in op_tape.order if op_id not in missing]
        grads: dict[int, list] = {}
        for t, g in zip(targets, output_gradients, strict=True):
            if g is None:
                g = array_ops.ones(t.shape, t.dtype)
            grads.setdefault(id(t), []).append(g)
        source_ids = {id(s) for s in sources}
        pending = set(op_tape.order)
        while stack:
            op_id = stack.pop()
            if op_id not in pending:
                continue
            pending.discard(op_id)
            op, skip, grad_fn = self.ops[op_id]
            out_grads, any_grad = [], False
            for t in op.outputs:
                got = grads.get(id(t))
                if got is None:
                    out_grads.append(array_ops.zeros(t.shape, t.dtype))
                else:
                    any_grad = True
                    out_grads.append(_aggregate(got))
                    if id(t) not in source_ids:
                        del grads[id(t)]
            in_grads = [None] * len(op.inputs)
            if any_grad:
                in_grads = grad_fn(_MockOp(op, skip), *out_grads)
                in_grads = list(in_grads) if isinstance(in_grads, (list, tuple)) \
                    else [in_grads]
            for t, g in zip(op.inputs, in_grads, strict=False):
                if g is not None:
                    grads.setdefault(id(t), []).append(g)
                count = usage.get(id(t))
                if count is None:
                    continue
                usage[id(t)] = count - 1
                if count - 1 > 0:
                    continue
                producer = self.tensor_tape.get(id(t))
                if producer is None:
                    grads.pop(id(t), None)
                    continue
                if producer == -1 or producer not in missing:
                    continue
                missing[producer] -= 1
                if missing[producer] == 0:
                    stack.insert(0, producer)
        return [_aggregate(grads[id(s)]) if id(s) in grads else None for s in sources]

    def _prepare(self, targets):
        """PrepareBackprop: usage counts of tensors and missing output counts of ops
        reachable from the targets, and the reachable ops in insertion order."""
        usage: dict[int, int] = {}
        op_tape = _UnorderedMapOrder()
        seen: set[int] = set()
        stack = [id(t) for t in targets]
        while stack:
            tensor_id = stack.pop()
            op_id = self.tensor_tape.get(tensor_id)
            if op_id is None or op_id == -1 or op_id in seen:
                continue
            seen.add(op_id)
            op_tape.insert(op_id)
            for t in self.ops[op_id][0].inputs:
                if id(t) in usage:
                    usage[id(t)] += 1
                else:
                    usage[id(t)] = 1
                    if id(t) in self.tensor_tape:
                        stack.append(id(t))
        missing: dict[int, int] = {}
        for tensor_id in usage:
            op_id = self.tensor_tape.get(tensor_id)
            if op_id is not None and op_id != -1:
                missing[op_id] = missing.get(op_id, 0) + 1
        return usage, missing, op_tape


def _aggregate(grads: list):
    if len(grads) == 1:
        return grads[0]
    if all(isinstance(g, ops.Tensor) for g in grads):
        return math_ops.add_n(grads)
    return math_ops.add_n([ops.convert_to_tensor(g) for g in grads])
