"""Optimizer kernels: TF's Apply* update ops in their ref, resource and sparse forms."""

from . import apply_kernels  # noqa: F401  (importing a module registers its kernels)
