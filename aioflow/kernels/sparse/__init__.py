"""The sparse-tensor kernels.

kernels/__init__.py imports each module (importing registers its kernels)."""
