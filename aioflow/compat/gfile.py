"""tf.gfile / tf.io.gfile for local files: TF 1.x programs read frozen graphs and write
checkpoints' neighbours through it. Paths are local; a missing file is TF's NotFoundError."""

from __future__ import annotations

import glob as _glob
import os
import shutil

from aioflow.framework import errors


def GFile(name, mode: str = "r"):  # noqa: N802 - TF's name
    """A file object as TF's GFile: str in text mode, bytes in binary mode."""
    try:
        return open(os.fspath(name), mode)  # noqa: SIM115 - returned to the caller
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{name}; No such file or directory") from None


FastGFile = Open = GFile


def Exists(filename) -> bool:  # noqa: N802
    return os.path.exists(os.fspath(filename))


def IsDirectory(dirname) -> bool:  # noqa: N802
    return os.path.isdir(os.fspath(dirname))


def ListDirectory(dirname) -> list[str]:  # noqa: N802
    if not os.path.isdir(os.fspath(dirname)):
        raise errors.NotFoundError(None, None, "Could not find directory")
    return os.listdir(os.fspath(dirname))


def MakeDirs(dirname) -> None:  # noqa: N802
    os.makedirs(os.fspath(dirname), exist_ok=True)


def MkDir(dirname) -> None:  # noqa: N802
    try:
        os.mkdir(os.fspath(dirname))
    except FileExistsError:
        raise errors.AlreadyExistsError(None, None, f"{dirname}; File exists") from None


def Glob(filename) -> list[str]:  # noqa: N802
    return sorted(_glob.glob(os.fspath(filename)))


def Remove(filename) -> None:  # noqa: N802
    try:
        os.remove(os.fspath(filename))
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{filename}; No such file or directory") \
            from None


def Rename(oldname, newname, overwrite: bool = False) -> None:  # noqa: N802
    if not overwrite and os.path.exists(os.fspath(newname)):
        raise errors.AlreadyExistsError(None, None, f"file already exists: {newname}")
    os.replace(os.fspath(oldname), os.fspath(newname))


def Copy(oldpath, newpath, overwrite: bool = False) -> None:  # noqa: N802
    if not overwrite and os.path.exists(os.fspath(newpath)):
        raise errors.AlreadyExistsError(None, None, f"file already exists: {newpath}")
    shutil.copyfile(os.fspath(oldpath), os.fspath(newpath))


def DeleteRecursively(dirname) -> None:  # noqa: N802
    shutil.rmtree(os.fspath(dirname))


def Walk(top, in_order: bool = True):  # noqa: N802
    return os.walk(os.fspath(top), topdown=in_order)


__all__ = ["Copy", "DeleteRecursively", "Exists", "FastGFile", "GFile", "Glob", "IsDirectory",
           "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Walk"]
