"""The optimizer kernels: TF's Apply* update ops in their ref, resource and sparse forms.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
