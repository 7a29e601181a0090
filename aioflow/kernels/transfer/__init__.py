"""The transfer kernels: _Send and _Recv through the step's rendezvous.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
