"""The random kernels: TF's Philox streams, bit for bit.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
