"""The call kernels: call frames (_Arg, _Retval), functional ops, py_func.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
