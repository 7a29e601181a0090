"""tf.data's kernels: datasets (variant tensors holding dataset objects) and iterators
(resources), run by the event loop.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
