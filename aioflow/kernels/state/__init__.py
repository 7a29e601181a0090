"""The state kernels: ref and resource variables, lookup tables.

kernels/__init__.py imports each module (importing registers its kernels)."""
