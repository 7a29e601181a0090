"""CPU kernels of TF's candidate samplers (tensorflow/core/kernels/candidate_sampler_ops.cc
and range_sampler.cc), giving TF's samples and expected counts for the same seeds.

Each run reserves 2048 * num_sampled words of the op's Philox stream (TF's
ReserveSamples32) and reads them one by one as TF's SimplePhilox: a double from two words
(Uint64ToDouble), a 64-bit integer from two (low word first). With `unique`, samples are
drawn until `num_sampled` distinct ones are found and the expected counts become
1 - (1 - p)^tries (in float, as TF's ExpectedCountHelper); otherwise p * num_sampled.
"""

from __future__ import annotations

import math

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.random import philox
from aioflow.kernels.random.random_kernels import _Stateful


class _Words:
    """TF's SimplePhilox over a reserved generator: its words in order, made in chunks."""

    def __init__(self, gen: philox.Philox, hint: int):
        self._gen = gen
        self._words = np.empty(0, dtype=np.uint32)
        self._made = 0  # blocks made so far
        self._pos = 0
        self._chunk = max(4, (hint + 3) // 4)

    def _more(self) -> None:
        blocks = self._gen.blocks(np.arange(self._made, self._made + self._chunk,
                                            dtype=np.uint64)).reshape(-1)
        self._made += self._chunk
        self._words = np.concatenate([self._words[self._pos:], blocks])
        self._pos = 0

    def take(self, n: int) -> np.ndarray:
        while self._words.size - self._pos < n:
            self._more()
        out = self._words[self._pos:self._pos + n]
        self._pos += n
        return out

    def rand_double(self) -> float:
        x0, x1 = self.take(2)
        return float(philox.uint64_to_double(x0, x1))

    def rand64(self) -> int:
        lo, hi = self.take(2)
        return int(lo) | int(hi) << 32


def _expected(p: np.ndarray, batch_size: int, num_tries: int) -> np.ndarray:
    p = np.asarray(p, dtype=np.float32)
    if num_tries == batch_size:
        return p * np.float32(batch_size)
    return -np.expm1(np.float32(num_tries) * np.log1p(-p))


class _CandidateSampler(_Stateful):
    """BaseCandidateSamplerOp: checks, reservation, SampleBatchGetExpectedCount."""

    expensive = False

    def __init__(self, ctx):
        super().__init__(ctx)
        self._num_true = ctx.get_attr("num_true")
        self._num_sampled = ctx.get_attr("num_sampled")
        self._unique = ctx.get_attr("unique")
        self._range = self.range_of(ctx)

    def range_of(self, ctx) -> int:
        range_max = ctx.get_attr("range_max")
        if range_max <= 0:
            raise errors.InvalidArgumentError(None, None, "range_max must be positive")
        return range_max

    def sample(self, words: _Words) -> int:
        raise NotImplementedError

    def probability(self, values: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def compute(self, ctx, inputs):
        true_classes = np.asarray(inputs[0])
        if true_classes.ndim != 2:
            raise errors.InvalidArgumentError(None, None, "true_classes must be a matrix")
        if true_classes.shape[1] != self._num_true:
            raise errors.InvalidArgumentError(
                None, None, "true_classes must have num_true columns, expected: "
                f"{true_classes.shape[1]} was: {self._num_true}")
        k = self._num_sampled
        if self._unique and k > self._range:
            raise errors.InvalidArgumentError(None, None, "Sampler's range is too small.")
        flat = true_classes.reshape(-1)
        bad = flat[(flat < 0) | (flat >= self._range)]
        if bad.size:
            raise errors.InvalidArgumentError(
                None, None, f"`true_candidate` out of range [0, {self._range}), received "
                f"{int(bad[0])}")
        gen = self.reserve((2048 * k + 3) // 4)
        sampled, tries = self.draw(gen, k)
        sampled = np.asarray(sampled, dtype=np.int64)
        sampled_count = self.expected(sampled, k, tries)
        true_count = self.expected(flat, k, tries).reshape(true_classes.shape)
        return sampled, true_count.astype(np.float32), sampled_count.astype(np.float32)

    def expected(self, values: np.ndarray, k: int, tries: int) -> np.ndarray:
        return _expected(self.probability(values), k, tries)

    def draw(self, gen: philox.Philox, k: int) -> tuple[list[int], int]:
        words = _Words(gen, 4 * k)
        if not self._unique:
            return [self.sample(words) for _ in range(k)], k
        used: set[int] = set()
        out: list[int] = []
        tries = 0
        while len(out) < k:
            tries += 1
            value = self.sample(words)
            if value not in used:
                used.add(value)
                out.append(value)
        return out, tries


@register_kernel("UniformCandidateSampler", "CPU")
class UniformCandidateSamplerOp(_CandidateSampler):
    """Uniform on [0, range_max): Rand64() % range_max, probability 1 / range_max."""

    def sample(self, words: _Words) -> int:
        return words.rand64() % self._range

    def probability(self, values: np.ndarray) -> np.ndarray:
        return np.full(np.shape(values), np.float32(1.0 / self._range), dtype=np.float32)


@register_kernel("LogUniformCandidateSampler", "CPU")
class LogUniformCandidateSamplerOp(_CandidateSampler):
    """Zipfian: int(exp(u * log1p(range_max))) - 1, probability
    log((v + 2) / (v + 1)) / log1p(range_max)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._log_range = math.log1p(self._range)

    def sample(self, words: _Words) -> int:
        value = int(math.exp(words.rand_double() * self._log_range)) - 1
        return value % self._range

    def probability(self, values: np.ndarray) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        return (np.log((v + 2.0) / (v + 1.0)) / self._log_range).astype(np.float32)


@register_kernel("AllCandidateSampler", "CPU")
class AllCandidateSamplerOp(_CandidateSampler):
    """Every class 0 .. num_sampled - 1, each expected once."""

    def range_of(self, ctx) -> int:
        return ctx.get_attr("num_sampled")

    def draw(self, gen, k):
        return list(range(k)), k

    def expected(self, values, k, tries):
        return np.ones(np.shape(values), dtype=np.float32)


@register_kernel("ComputeAccidentalHits", "CPU")
class ComputeAccidentalHitsOp(OpKernel):
    """The (row, sample position) pairs where a sampled class is one of the row's true
    classes, each with weight -FLT_MAX (a sample's last position when sampled twice)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._num_true = ctx.get_attr("num_true")

    def compute(self, ctx, inputs):
        true_classes, sampled = np.asarray(inputs[0]), np.asarray(inputs[1])
        if true_classes.ndim != 2 or true_classes.shape[1] != self._num_true:
            raise errors.InvalidArgumentError(
                None, None, "true_candidates must be a batch_size * num_true matrix")
        if sampled.ndim != 1:
            raise errors.InvalidArgumentError(
                None, None, "sampled_candidates must be a vector, which is typically an "
                "output from CandidateSampler")
        position = {int(c): i for i, c in enumerate(sampled.tolist())}
        rows, ids = [], []
        for i, row in enumerate(true_classes.tolist()):
            for c in row:
                pos = position.get(int(c))
                if pos is not None:
                    rows.append(i)
                    ids.append(pos)
        weights = np.full(len(rows), -np.finfo(np.float32).max, dtype=np.float32)
        return (np.asarray(rows, dtype=np.int32), np.asarray(ids, dtype=np.int64), weights)
