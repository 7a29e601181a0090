"""The image kernels: resizing, non-max suppression, codecs (JPEG, PNG, GIF, BMP).

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
