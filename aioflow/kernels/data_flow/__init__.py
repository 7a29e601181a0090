"""The data-flow kernels: queues, TensorArrays, TensorLists.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
