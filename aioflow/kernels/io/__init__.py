"""The I/O kernels: checkpoints (SaveV2/RestoreV2), files, tf.Example parsing, summaries, printing.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
