"""The array kernels: constants, shapes, reshaping, slicing, gathers and scatters, rearrangements.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
