"""Whether a note changed: one digest of its bytes and one stat signature of its file,
for every cache (`vt validate`'s, `vt preview`'s, the knowledge base's aliases, the
watcher's) and every check before a write (apply's marks, the writer's refusal).

The stat signature is git's index's: mtime, ctime (which no user can set back), size
and inode. A signature proves the bytes unchanged only for a file last written before
the cache was saved, and not within RACY_NS of that: a later edit in the same clock tick
could leave its stat as it was (the "racily clean" file, always re-read).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from vault_tools.config import MAX_NOTE_BYTES
from vault_tools.notes.vault import read_file

RACY_NS = 1_000_000_000
DIGEST_BYTES = 16

Signature = tuple[int, int, int, int]  # (st_mtime_ns, st_ctime_ns, st_size, st_ino)


def new_digest() -> hashlib.blake2b:
    """The digest `content_digest` makes, fed piece by piece (`update`, `hexdigest`)."""
    return hashlib.blake2b(digest_size=DIGEST_BYTES)


def content_digest(raw: bytes) -> str:
    """The digest of a note's bytes, as every cache and check compares them."""
    return hashlib.blake2b(raw, digest_size=DIGEST_BYTES).hexdigest()


def stat_signature(info: os.stat_result) -> Signature:
    """What says a file is unchanged without reading it (see the module's docstring)."""
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)


def settled(info: os.stat_result, saved_ns: int) -> bool:
    """Whether a file with this stat was surely last written before `saved_ns` (when a
    cache holding its signature was saved), so that the signature is conclusive."""
    return max(info.st_mtime_ns, info.st_ctime_ns) < saved_ns - RACY_NS


def unchanged(info: os.stat_result, signature: object, saved_ns: int) -> bool:
    """Whether the file now has `signature`, recorded in a cache saved at `saved_ns`,
    and that proves its bytes unchanged (else: read it and compare its digest)."""
    return stat_signature(info) == signature and settled(info, saved_ns)


def renamed_unchanged(info: os.stat_result, signature: Signature) -> bool:
    """`stat_signature(info) == signature` for a file vt itself has just renamed (the
    note the writer's swap displaced): a rename moves ctime on and nothing else, so
    ctime is left out of the comparison."""
    mtime, _ctime, size, inode = signature
    return (info.st_mtime_ns, info.st_size, info.st_ino) == (mtime, size, inode)


def read_with_stat(path: str | Path, limit: int | None = MAX_NOTE_BYTES) -> tuple[bytes, Signature]:
    """The file's bytes and the stat signature they were read under (see `read_file`:
    only a regular file of at most `limit` bytes is read)."""
    raw, info = read_file(path, limit)
    return raw, stat_signature(info)
