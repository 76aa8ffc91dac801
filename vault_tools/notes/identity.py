"""Whether a note changed: one digest of its bytes, for every cache (`vt validate`'s,
`vt preview`'s, the knowledge base's aliases, the watcher's) and every check before a
write (apply's marks, the writer's refusal). Its file's stat signature, which spares
reading it, is `infra/filestat.py`'s.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from vault_tools.config import MAX_NOTE_BYTES
from vault_tools.infra.filestat import Signature, stat_signature
from vault_tools.notes.vault import read_file

DIGEST_BYTES = 16


def new_digest() -> hashlib.blake2b:
    """The digest `content_digest` makes, fed piece by piece (`update`, `hexdigest`)."""
    return hashlib.blake2b(digest_size=DIGEST_BYTES)


def content_digest(raw: bytes) -> str:
    """The digest of a note's bytes, as every cache and check compares them."""
    return hashlib.blake2b(raw, digest_size=DIGEST_BYTES).hexdigest()


def read_with_stat(path: str | Path, limit: int | None = MAX_NOTE_BYTES) -> tuple[bytes, Signature]:
    """The file's bytes and the stat signature they were read under (see `read_file`:
    only a regular file of at most `limit` bytes is read)."""
    raw, info = read_file(path, limit)
    return raw, stat_signature(info)
