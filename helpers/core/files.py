"""The commands' files, read and written safely: never through a symbolic link, never into the repository's own
folders, never a pipe or a device opened to be read.

`classroom copies` and `site build` write into a folder the user names: `output_folder` checks it first (not a
forbidden folder or inside one, under any name; empty unless --force), and `replace_file` writes each file as a new
file renamed into place, so that a link found where a file goes is replaced, never written through.
`read_small_file` reads an input (a bench --json file, a notebook) only if it is a regular file of a sensible size.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path


class OutputError(Exception):
    """A folder or file a command will not write, said in one line (exit code 2)."""


def output_folder(folder: Path, force: bool, forbidden: dict[Path, str], what: str) -> None:
    """Make `folder` ready for `what`: never one of the `forbidden` folders or inside one (each mapped to what it is,
    for the message), an empty folder unless `force`."""
    where = _resolved(folder)
    for place, forbidden_what in forbidden.items():
        if _inside(where, place):
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


def write_output(path: str | Path, text: str) -> None:
    """Write `text` to `path`, an output a command was asked for: a regular file (or a link) is replaced, never written
    through (nor is another name of the same file changed); a named pipe or a device (/dev/null) is fed."""
    path = Path(path)
    if path.exists() and not path.is_file() and not path.is_symlink():
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        os.set_blocking(fd, True)  # not waiting for a reader to open a pipe (ENXIO if none), waiting for it to read
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        replace_file(path, text.encode("utf-8"))


#: What a file that is not a regular file is, for the message.
KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"),
         (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


def read_small_file(path: Path, limit: int, regular: str, usual: str, follow_links: bool = True) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes; a ValueError otherwise, saying `regular` (why a
    regular file is wanted) or `usual` (what a file of its kind may have). A pipe or a device is never opened, nor
    (unless `follow_links`) a symbolic link followed."""
    try:
        _check_regular((os.stat if follow_links else os.lstat)(path), limit, regular, usual)
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(os.open(path, flags), "rb") as f:
            _check_regular(os.fstat(f.fileno()), limit, regular, usual)  # what was opened, should the path have changed
            data = f.read(limit + 1)
    except OSError as exc:
        raise ValueError(f"cannot read it: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ValueError(f"it grew past {limit:,} bytes while being read")
    return data


def _check_regular(status: os.stat_result, limit: int, regular: str, usual: str) -> None:
    """A ValueError when `status` is not a regular file's of at most `limit` bytes."""
    if not stat.S_ISREG(status.st_mode):
        kind = next((what for test, what in KINDS if test(status.st_mode)), "something else")
        raise ValueError(f"it is {kind}, not a regular file ({regular}); it was not opened")
    if status.st_size > limit:
        raise ValueError(f"it is {status.st_size:,} bytes, more than the {limit:,} {usual}")


__all__ = ["OutputError", "output_folder", "read_small_file", "replace_file", "write_output"]
