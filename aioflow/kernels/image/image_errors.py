"""The InvalidArgumentError the image codecs raise for bad files (the kernel adds the
node)."""

from __future__ import annotations

from aioflow.framework import errors


def invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)
