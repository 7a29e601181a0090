"""The math kernels: element-wise math, reductions, matrix products, linear algebra, segments.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
