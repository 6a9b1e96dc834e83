"""Writing the commands' output files safely: never through a symbolic link, never into the repository's own folders.

`classroom copies` and `site build` write into a folder the user names: `output_folder` checks it first (not the
forbidden folder or inside it, under any name; empty unless --force), and `replace_file` writes each file as a new
file renamed into place, so that a link found where a file goes is replaced, never written through.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path


class OutputError(Exception):
    """A folder or file a command will not write, said in one line (exit code 2)."""


def output_folder(folder: Path, force: bool, forbidden: Path, forbidden_what: str, what: str) -> None:
    """Make `folder` ready for `what`: never `forbidden` or inside it, an empty folder unless `force`."""
    if _inside(_resolved(folder), forbidden):
        raise OutputError(f"{folder} is {forbidden_what}: write {what} somewhere else")
    if folder.is_symlink() and not folder.exists():
        raise OutputError(f"{folder} is a symbolic link to {os.readlink(folder)}, which is not a folder: create "
                          "that folder first, or give another one")
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{folder} is a file, not a folder")
    if folder.exists() and any(folder.iterdir()) and not force:
        raise OutputError(f"{folder} is not empty: add --force to write {what} into it anyway")
    folder.mkdir(parents=True, exist_ok=True)


def _resolved(folder: Path) -> Path:
    """`folder` with every symbolic link followed; an OutputError when they lead round in a loop."""
    try:
        with contextlib.suppress(FileNotFoundError):  # a folder to create
            os.stat(folder)  # ELOOP on every Python (3.13's resolve() no longer raises for a loop)
        return folder.resolve()
    except (RuntimeError, OSError) as exc:  # ELOOP; RuntimeError: Python 3.11 and 3.12's "Symlink loop"
        loop = isinstance(exc, RuntimeError) or exc.errno == errno.ELOOP
        why = "a loop of symbolic links" if loop else exc.strerror or str(exc)
        raise OutputError(f"{folder} cannot be followed to a folder ({why}): give a folder, or a path where "
                          "one can be created") from None


def _inside(where: Path, forbidden: Path) -> bool:
    """Whether the resolved path `where` is the folder `forbidden` or inside it, under any name."""
    top = forbidden.resolve()
    for place in (where, *where.parents):
        with contextlib.suppress(OSError):  # a place that does not exist yet is no other folder's name
            if place == top or os.path.samefile(place, top):
                return True
    return False


def replace_file(path: Path, data: bytes) -> None:
    """Write `data` as a new file renamed to `path`: a link there is replaced, never written through."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temp)
        raise


__all__ = ["OutputError", "output_folder", "replace_file"]
