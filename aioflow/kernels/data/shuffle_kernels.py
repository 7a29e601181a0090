"""Shuffling datasets and their seeds: ShuffleDataset (V1, V2, V3),
ShuffleAndRepeatDataset (V1, V2), and the seed-generator resources TF 2's graphs pass
(DummySeedGenerator, AnonymousSeedGenerator, DeleteSeedGenerator), as
tensorflow/core/kernels/data/shuffle_dataset_op.cc and random_seed_ops.cc.

Orders equal TF's: an iterator draws 32-bit words from Philox(seed, seed2) one at a
time (TF's SingleSampleAdapter), fills a ring buffer of `buffer_size` elements, and
produces the element at `start + word % size` of the buffer's oldest epoch, swapping
the start element into its place. With reshuffle_each_iteration, each iterator made
from the dataset takes its (seed, seed2) as two words of a generator seeded with the
dataset's seeds (so the epochs of a repeat differ, and re-running the dataset op starts
the sequence again); without, every iterator uses the dataset's seeds. Seeds (0, 0)
mean fresh random seeds."""

from __future__ import annotations

import random
import threading
from collections import deque

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.framework.var import ResourceHandle, handle_value

from ..random.philox import Philox
from .dataset import INFINITE, UNKNOWN, dataset_of, scalar_int, variant
from .transform_kernels import UnaryDataset, UnaryIterator

SEED_GENERATOR_TYPE = "SeedGenerator"
_MAX_EPOCHS_IN_BUFFER = 2


class Words:
    """32-bit words of Philox(seed, seed2), one at a time (TF's SingleSampleAdapter: the
    four words of each block in order); made 256 blocks at a time. `skip` starts that
    many words on (restoring a checkpoint)."""

    CHUNK = 256

    def __init__(self, seed: int, seed2: int, skip: int = 0):
        self.philox = Philox.from_seeds(seed, seed2)
        self.count = skip
        self.block = skip // 4
        self.words: list = []
        self.pos = 0
        if skip % 4:
            self._refill()
            self.pos = skip % 4

    def _refill(self) -> None:
        offsets = np.arange(self.block, self.block + self.CHUNK, dtype=np.uint64)
        self.words = self.philox.blocks(offsets).reshape(-1).tolist()
        self.block += self.CHUNK
        self.pos = 0

    def __call__(self) -> int:
        if self.pos >= len(self.words):
            self._refill()
        word = self.words[self.pos]
        self.pos += 1
        self.count += 1
        return word


def random_seeds(seed: int, seed2: int) -> tuple[int, int]:
    """TF's RandomSeeds: (0, 0) asks for nondeterministic seeds."""
    if seed == 0 and seed2 == 0:
        return random.getrandbits(63), random.getrandbits(63)
    return seed, seed2


class SeedGenerator:
    """Seeds for the iterators of a shuffle: fixed (the same seeds each time) or random
    (two words of a generator per iterator: TF's RandomSeedGenerator)."""

    def __init__(self, seed: int, seed2: int, reshuffle: bool):
        self.seed, self.seed2 = seed, seed2
        self.reshuffle = reshuffle
        self.words = Words(seed, seed2)
        self.lock = threading.Lock()

    def generate(self) -> tuple[int, int]:
        if not self.reshuffle:
            return self.seed, self.seed2
        with self.lock:
            return self.words(), self.words()

    def num_random_samples(self) -> int:
        return self.words.count

    def set_num_random_samples(self, n: int) -> None:
        """Restore the generator's position (TF's RandomSeedGenerator::Reset)."""
        with self.lock:
            self.words = Words(self.seed, self.seed2, n)


class ShuffleDataset(UnaryDataset):
    type_string = "Shuffle"

    def __init__(self, input_, buffer_size: int, generator: SeedGenerator, count: int = 1):
        super().__init__(input_)
        self.buffer_size = buffer_size
        self.generator = generator
        self.count = count
        if count != 1:
            self.type_string = "ShuffleAndRepeat"

    def cardinality(self):
        n = self.input.cardinality()
        if self.count == -1:
            return 0 if n == 0 else (UNKNOWN if n == UNKNOWN else INFINITE)
        if n < 0:
            return n
        return n * self.count

    def make_iterator(self, ictx, prefix):
        return _ShuffleIterator(self, ictx, prefix)


class _ShuffleIterator(UnaryIterator):
    """TF 2.21's ShuffleDatasetBase iterator: the buffer is filled epoch by epoch (a
    slice of it per epoch, at most two epochs ahead), elements are drawn from the
    oldest slice, and when a slice is used up the next seeds are drawn from the
    generator (shuffle-and-repeat: each epoch in a new order)."""

    def __init__(self, dataset, ictx, prefix):
        super().__init__(dataset, ictx, prefix)
        self.input = None  # made by the first fill (TF's PrepareNextEpoch)
        self.seed, self.seed2 = dataset.generator.generate()
        self.words = Words(self.seed, self.seed2)
        self.buffer: dict[int, list] = {}
        self.slices: deque = deque()
        self.epoch = 0
        self.num_elements = 0
        self.exhausted = False  # a forever-repeated input that gave nothing

    def _should_fill(self) -> bool:
        d = self.dataset
        if self.exhausted:
            return False
        if self.input is None and d.count != -1 and self.epoch >= d.count:
            return False
        if len(self.slices) > _MAX_EPOCHS_IN_BUFFER and self.num_elements > 0:
            return False
        return self.num_elements < d.buffer_size

    async def _fill(self) -> None:
        d = self.dataset
        while self._should_fill():
            if self.input is None:
                end = self.slices[-1][1] if self.slices else 0
                self.slices.append([end, end])
                self.input = d.input.make_iterator(self.ictx, self.prefix)
                self.epoch += 1
            element = await self.input.get_next()
            await self.ictx.pause()
            if element is None:
                self.input = None
                if d.count == -1 and self.slices[-1][0] == self.slices[-1][1] \
                        and self.num_elements == 0:
                    self.exhausted = True  # (or it would loop forever)
                continue
            self.buffer[self.slices[-1][1] % d.buffer_size] = element
            self.num_elements += 1
            self.slices[-1][1] += 1

    async def get_next(self):
        await self._fill()
        if self.num_elements == 0:
            return None
        size = self.dataset.buffer_size
        while self.slices[0][0] == self.slices[0][1]:
            self.slices.popleft()
            self.seed, self.seed2 = self.dataset.generator.generate()
            self.words = Words(self.seed, self.seed2)
        front = self.slices[0]
        offset = self.words() % (front[1] - front[0])
        index = (front[0] + offset) % size
        start = front[0] % size
        out = self.buffer[index]
        self.buffer[index] = self.buffer[start]
        del self.buffer[start]
        front[0] += 1
        self.num_elements -= 1
        return out

    def save(self, state):
        key = self.key
        state[key("ds_num_random_samples")] = np.array(
            self.dataset.generator.num_random_samples(), np.int64)
        if self.exhausted:
            state[key("exhausted")] = np.array(b"", dtype=object)
        state[key("num_random_samples")] = np.array(self.words.count, np.int64)
        state[key("seed")] = np.array(self.seed, np.int64)
        state[key("seed2")] = np.array(self.seed2, np.int64)
        if self.input is None:
            state[key("end_of_input_sequence")] = np.array(b"", dtype=object)
        else:
            self.input.save(state)
        state[key("epoch")] = np.array(self.epoch, np.int64)
        state[key("num_elements")] = np.array(self.num_elements, np.int64)
        state[key("slices_size")] = np.array(len(self.slices), np.int64)
        size = self.dataset.buffer_size
        for i, (start, end) in enumerate(self.slices):
            state[key(f"slices_start_{i}")] = np.array(start, np.int64)
            state[key(f"slices_end_{i}")] = np.array(end, np.int64)
            for j in range(start, end):
                element = self.buffer[j % size]
                state[key(f"buffer_{j % size}_size")] = np.array(len(element), np.int64)
                for k, value in enumerate(element):
                    state[key(f"buffer_{j % size}_{k}")] = np.asarray(value)

    async def restore(self, state):
        key = self.key
        self.dataset.generator.set_num_random_samples(int(state[key("ds_num_random_samples")]))
        self.exhausted = key("exhausted") in state
        self.seed = int(state[key("seed")])
        self.seed2 = int(state[key("seed2")])
        self.words = Words(self.seed, self.seed2, int(state[key("num_random_samples")]))
        if key("end_of_input_sequence") in state:
            self.input = None
        else:
            self.input = self.dataset.input.make_iterator(self.ictx, self.prefix)
            await self.input.restore(state)
        self.epoch = int(state[key("epoch")])
        self.num_elements = int(state[key("num_elements")])
        size = self.dataset.buffer_size
        self.slices = deque()
        self.buffer = {}
        for i in range(int(state[key("slices_size")])):
            start, end = int(state[key(f"slices_start_{i}")]), int(state[key(f"slices_end_{i}")])
            self.slices.append([start, end])
            for j in range(start, end):
                n = int(state[key(f"buffer_{j % size}_size")])
                self.buffer[j % size] = [state[key(f"buffer_{j % size}_{k}")] for k in range(n)]


def _buffer_size(value) -> int:
    n = scalar_int(value, "buffer_size")
    if n <= 0 and n != -1:
        raise errors.InvalidArgumentError(
            None, None, "buffer_size must be greater than zero.")
    return n


def _generator_of(ctx, value) -> SeedGenerator | None:
    """The generator a seed_generator handle names; None for TF's dummy."""
    handle = value[()] if isinstance(value, np.ndarray) else value
    if not isinstance(handle, ResourceHandle):
        raise errors.InvalidArgumentError(None, None, "Expected a seed generator handle")
    if handle.name == _DUMMY:
        return None
    return ctx.resource_mgr.lookup(handle.container, SEED_GENERATOR_TYPE, handle.name)


class _ShuffleOpBase(OpKernel):
    """Inputs: input_dataset, buffer_size, then (seed, seed2) and/or seed_generator,
    then count for the *AndRepeat* ops."""

    has_seeds = True
    has_generator = False
    has_count = False

    def __init__(self, ctx):
        super().__init__(ctx)
        self.reshuffle = bool(ctx.get_attr("reshuffle_each_iteration", True))

    def compute(self, ctx, inputs):
        i = 2
        generator = None
        if self.has_seeds:
            seed, seed2 = random_seeds(scalar_int(inputs[2], "seed"),
                                       scalar_int(inputs[3], "seed2"))
            i = 4
        if self.has_generator:
            generator = _generator_of(ctx, inputs[i])
            i += 1
        if generator is None:
            generator = SeedGenerator(seed, seed2, self.reshuffle)
        buffer_size = _buffer_size(inputs[1])
        if buffer_size == -1:
            buffer_size = 1 << 62
        count = scalar_int(inputs[i], "count") if self.has_count else 1
        return (variant(ShuffleDataset(dataset_of(inputs[0]), buffer_size, generator,
                                       count)),)


@register_kernel("ShuffleDataset", "CPU")
class ShuffleDatasetOp(_ShuffleOpBase):
    """TF 1 graphs' shuffle: seeds from inputs, reshuffle_each_iteration an attr."""


@register_kernel("ShuffleDatasetV2", "CPU")
class ShuffleDatasetV2Op(_ShuffleOpBase):
    has_seeds = False
    has_generator = True

    def compute(self, ctx, inputs):
        generator = _generator_of(ctx, inputs[2])
        if generator is None:
            generator = SeedGenerator(*random_seeds(0, 0), True)
        return (variant(ShuffleDataset(dataset_of(inputs[0]), _buffer_size(inputs[1]),
                                       generator)),)


@register_kernel("ShuffleDatasetV3", "CPU")
class ShuffleDatasetV3Op(_ShuffleOpBase):
    has_generator = True


@register_kernel("ShuffleAndRepeatDataset", "CPU")
class ShuffleAndRepeatDatasetOp(_ShuffleOpBase):
    """TF 1's fused shuffle + repeat (epochs follow in one buffer, each in its own
    order)."""

    has_count = True


@register_kernel("ShuffleAndRepeatDatasetV2", "CPU")
class ShuffleAndRepeatDatasetV2Op(_ShuffleOpBase):
    has_generator = True
    has_count = True


# -- seed generators ------------------------------------------------------------------------

_DUMMY = "_dummy_seed_generator"
_unique = iter(range(1, 1 << 62))


def _deleter() -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = b"deleter"
    return out


@register_kernel("DummySeedGenerator", "CPU")
class DummySeedGeneratorOp(OpKernel):
    """A handle that asks the shuffle for its own generator."""

    def compute(self, ctx, inputs):
        return (handle_value(ResourceHandle("", "", _DUMMY, SEED_GENERATOR_TYPE)),)


@register_kernel("AnonymousSeedGenerator", "CPU")
class AnonymousSeedGeneratorOp(OpKernel):
    """A generator resource (seed, seed2, reshuffle) and its deleter."""

    def compute(self, ctx, inputs):
        # TF's ParseScalarArgument: "<name> must be a scalar"
        if np.ndim(inputs[2]) != 0:
            raise errors.InvalidArgumentError(None, None, "reshuffle must be a scalar")
        seed, seed2 = random_seeds(scalar_int(inputs[0], "seed"), scalar_int(inputs[1], "seed2"))
        name = f"_anonymous_seed_generator_{next(_unique)}"
        ctx.resource_mgr.create("", SEED_GENERATOR_TYPE, name,
                                SeedGenerator(seed, seed2, bool(inputs[2])))
        return (handle_value(ResourceHandle("", ctx.resource_mgr.default_container, name,
                                            SEED_GENERATOR_TYPE)), _deleter())


@register_kernel("DeleteSeedGenerator", "CPU")
class DeleteSeedGeneratorOp(OpKernel):
    def compute(self, ctx, inputs):
        handle = inputs[0][()]
        if handle.name != _DUMMY:
            ctx.resource_mgr.delete(handle.container, SEED_GENERATOR_TYPE, handle.name)
        return ()
