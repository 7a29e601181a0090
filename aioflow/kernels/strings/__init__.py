"""The string kernels (and RE2 semantics on Python's re).

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
