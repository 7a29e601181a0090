"""The sparse-tensor kernels.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
