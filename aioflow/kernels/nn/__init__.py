"""The neural-network kernels: activations, convolutions, pooling, normalisation, fused ops.

kernels/__init__.py imports each module (importing registers its kernels)."""
