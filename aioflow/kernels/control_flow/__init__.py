"""The v1 control-flow kernels: Switch, Merge, Enter, Exit, NextIteration, asserts.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
