"""The client: the awaitable Session, its sync facade and callables."""
