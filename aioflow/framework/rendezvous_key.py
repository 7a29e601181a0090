"""Rendezvous keys: the name of one tensor transfer between devices (TF's
Rendezvous::CreateKey), shared by the transfer kernels and the runtime."""


def create_key(send_device: str | bytes, incarnation: int, recv_device: str | bytes,
               tensor_name: str | bytes, frame_id: int = 0, iter_id: int = 0) -> str:
    """"send_device;incarnation;recv_device;tensor_name;frame:iter", the incarnation as
    16 hex digits, as TF writes it (names given as bytes, as string attrs hold them, are
    decoded: the client's keys of a partial run are built from text)."""
    return (f"{_text(send_device)};{incarnation & (2**64 - 1):016x};{_text(recv_device)};"
            f"{_text(tensor_name)};{frame_id}:{iter_id}")


def _text(name: str | bytes) -> str:
    return name.decode("utf-8", "backslashreplace") if isinstance(name, bytes) else name
