"""The neural-network kernels: activations, convolutions, pooling, normalisation, fused ops.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
