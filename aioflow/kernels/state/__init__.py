"""The state kernels: ref and resource variables, lookup tables.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
