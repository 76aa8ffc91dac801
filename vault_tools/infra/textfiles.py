"""The small text files vt keeps beside the notes: `.gitignore`, `.gitattributes`,
`.obsidian/types.json`, `vt.toml`, the git hook, exports.

They are read whole, extended by whole lines, and replaced atomically. (Notes have
their own writer, `writer.py`, which also refuses to overwrite a concurrent save.)
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from vault_tools.errors import UsageError, io_failure
from vault_tools.infra.boundary import writable_path
from vault_tools.infra.durable import fsync_folder, write_temp


def read_text(path: Path) -> str:
    """The file's text, "" when it does not exist; UsageError when it is not UTF-8."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError as exc:
        raise UsageError(f"not UTF-8 ({exc}); nothing written", str(path)) from None


def write_atomic(path: Path, data: bytes, mode: int | None = None, *, root: Path | None) -> None:
    """Write `data` to `path` atomically: temp file in the same folder, fsync, os.replace.

    `mode` None keeps the mode of the file being replaced (0o644 for a new one). `root`:
    the folder `path` must stay inside (see boundary.py), else BoundaryError and nothing
    written; None only for a path the user or git chose (an export, git's merge file).
    An OSError is an IOFailure naming `path`.
    """
    if root is not None:
        writable_path(root, path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if mode is None:
            try:
                mode = path.stat().st_mode & 0o7777
            except FileNotFoundError:
                mode = 0o644
        tmp = write_temp(path, data, mode)
        try:
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        fsync_folder(path.parent)
    except OSError as exc:
        raise io_failure(exc, path) from exc


def append_lines(text: str, lines: list[str]) -> str:
    """`text` with `lines` appended, each on its own line; nothing else changes."""
    if not lines:
        return text
    eol = "\r\n" if "\r\n" in text else "\n"
    if text and not text.endswith("\n"):
        text += eol
    return text + "".join(line + eol for line in lines)
