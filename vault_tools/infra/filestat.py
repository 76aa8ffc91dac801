"""Whether a file changed, without reading it: its stat signature, and when that is proof.

The one rule for every cache of vt (`vt validate`'s, `vt preview`'s, the knowledge
base's aliases, the watcher's), every check before a write (apply's marks, the writer's
refusal) and the ledger gate's trusted prefix.

The signature is git's index's, with the device: mtime, ctime (which no user can set
back), size, inode and device (an inode number is unique within one file system only).
A signature proves the bytes unchanged only for a file last written before the signature
was saved, and not within RACY_NS of that: a later edit in the same clock tick could
leave its stat as it was (the "racily clean" file, always re-read).
"""

from __future__ import annotations

import os

# 2 s: FAT's mtime granularity, the coarsest of the file systems a vault may sit on
RACY_NS = 2_000_000_000

Signature = tuple[int, int, int, int, int]  # (st_mtime_ns, st_ctime_ns, st_size, st_ino, st_dev)


def stat_signature(info: os.stat_result) -> Signature:
    """What says a file is unchanged without reading it (see the module's docstring)."""
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino, info.st_dev)


def signature_text(signature: Signature) -> str:
    """The signature as one string, for a store that keeps text."""
    mtime, ctime, size, inode, device = signature
    return f"{device}:{inode}:{size}:{mtime}:{ctime}"


def settled(info: os.stat_result, saved_ns: int) -> bool:
    """Whether a file with this stat was surely last written before `saved_ns` (when the
    signature was saved), so that the signature is conclusive."""
    return max(info.st_mtime_ns, info.st_ctime_ns) < saved_ns - RACY_NS


def unchanged(info: os.stat_result, signature: object, saved_ns: int) -> bool:
    """Whether the file now has `signature`, saved at `saved_ns`, and that proves its
    bytes unchanged (else: read it and compare its digest)."""
    return stat_signature(info) == signature and settled(info, saved_ns)


def renamed_unchanged(info: os.stat_result, signature: Signature) -> bool:
    """`stat_signature(info) == signature` for a file vt itself has just renamed (the
    note the writer's swap displaced): a rename moves ctime on and nothing else, so
    ctime is left out of the comparison."""
    mtime, _ctime, size, inode, device = signature
    return (info.st_mtime_ns, info.st_size, info.st_ino, info.st_dev) == (
        mtime,
        size,
        inode,
        device,
    )
