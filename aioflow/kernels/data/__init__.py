"""tf.data's kernels: datasets (variant tensors holding dataset objects) and iterators
(resources), run by the event loop."""

from . import (  # noqa: F401  (importing a module registers its kernels)
    batch_kernels,
    iterator_kernels,
    map_kernels,
    prefetch_kernels,
    reduce_kernels,
    shuffle_kernels,
    source_kernels,
    transform_kernels,
)
