"""The claim-id-duplicate check of a run: which notes share a claim_id.

What the hashes, the spilled records and the bit filter buy: memory on large vaults (a
cold `vt validate` of 50k notes peaks at 1.21x the RSS with a plain dict of the ids, no
faster; at 10k the two are alike), measured with bench/bench_validate.py's vaults.
"""

from __future__ import annotations

import struct
import tempfile
from array import array
from collections.abc import Callable, Generator, Iterator
from typing import BinaryIO

from vault_tools.checks.note_results import CLAIM_ID, CLAIM_ID_LINE, PATH
from vault_tools.findings import Finding, error
from vault_tools.infra.osfiles import read_at


class ClaimIds:
    """The claim_id of every review note seen, for the duplicate check at the end.

    A whole-vault run adds every note, so only an 8-byte hash of each claim_id stays in
    memory; the rest (path, line, the claim_id's bytes) is a record appended to a buffer
    that goes to an anonymous temporary file (no name on disk) once it grows past
    SPILL_BYTES. Hashes seen twice are found with a bounded bit filter, then counted
    exactly; only when some hash is repeated are the records read back, and the notes
    of those hashes grouped by the claim_ids themselves, so that a hash collision never
    makes (nor hides) a duplicate. Use it as a context manager (the file is closed).
    """

    def __init__(self) -> None:
        self._hashes = array("q")
        self._buffer = bytearray()  # records not yet spilled
        self._file: BinaryIO | None = None
        self._spilled = 0  # bytes in the file

    def __enter__(self) -> ClaimIds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def add(self, entry: tuple) -> bool:
        """Note the claim_id of a note's entry; whether it is a review note (has one)."""
        claim_id = entry[CLAIM_ID]
        if claim_id is None:
            return False
        line = entry[CLAIM_ID_LINE]
        path = entry[PATH].encode("utf-8", "surrogatepass")
        raw = claim_id.encode("utf-8", "surrogatepass")
        self._hashes.append(_claim_hash(claim_id))
        self._buffer += _RECORD.pack(NO_LINE if line is None else line, len(path), len(raw))
        self._buffer += path
        self._buffer += raw
        if len(self._buffer) >= SPILL_BYTES:
            self._spill()
        return True

    def duplicates(self, checked: set[str] | None) -> list[tuple[str, list[Finding]]]:
        """(path, its claim-id-duplicate findings) of each note (among `checked`, when
        given) sharing its claim_id, by path."""
        by_path: dict[str, list[Finding]] = {}
        for claim_id, owners in self._shared():
            for path, line in owners:
                if checked is not None and path not in checked:
                    continue
                names = ", ".join(p for p, _ in owners if p != path)
                by_path.setdefault(path, []).append(
                    error(
                        path,
                        line,
                        DUPLICATE,
                        f"claim_id {claim_id!r} is also used by {names}",
                    )
                )
        return sorted(by_path.items())

    def _shared(self) -> Iterator[tuple[str, list[tuple[str, int | None]]]]:
        """Each claim_id of two notes or more, with its (path, line) owners as added."""
        repeated = _repeated(self._hashes)
        if not repeated:  # the usual case: no two notes share a hash, let alone a claim_id
            return
        groups: dict[int, list[tuple[int, bytes, bytes]]] = {}
        for value, record in zip(self._hashes, self._records(), strict=True):
            if value in repeated:
                groups.setdefault(value, []).append(record)
        for notes in groups.values():
            by_claim: dict[bytes, list[tuple[int, bytes, bytes]]] = {}
            for note in notes:
                by_claim.setdefault(note[2], []).append(note)
            for raw, owners in by_claim.items():
                if len(owners) > 1:
                    yield (
                        _decoded(raw),
                        [
                            (_decoded(path), None if line == NO_LINE else line)
                            for line, path, _ in owners
                        ],
                    )

    def _spill(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self._file.write(self._buffer)
        self._spilled += len(self._buffer)
        self._buffer.clear()

    def _records(self) -> Iterator[tuple[int, bytes, bytes]]:
        """Per note in order, its (line, path, claim_id) as stored (UTF-8 bytes)."""
        if self._file is not None:
            self._file.flush()
            fd, position, tail = self._file.fileno(), 0, b""
            while position < self._spilled:
                block = read_at(fd, min(SPILL_BYTES, self._spilled - position), position)
                position += len(block)
                tail = yield from _parsed(tail + block)
            yield from _parsed(tail + self._buffer)
        else:
            yield from _parsed(bytes(self._buffer))


DUPLICATE = "claim-id-duplicate"  # the finding's code
NO_LINE = -1
SPILL_BYTES = 1 << 16  # the claim records a run keeps in memory before spilling them
FILTER_BITS = 1 << 21  # the bit filter of `_repeated` (256 KiB)
_RECORD = struct.Struct("<iII")  # line, then the lengths of the path and the claim_id
_claim_hash: Callable[[str], int] = hash  # 64 bits; collisions are resolved exactly


def _parsed(data: bytes) -> Generator[tuple[int, bytes, bytes], None, bytes]:
    """The whole records at the start of `data` (see `ClaimIds._records`); returns the
    bytes of a record cut short."""
    offset, size, unpack = 0, len(data), _RECORD.unpack_from
    while offset + _RECORD.size <= size:
        line, path_size, claim_size = unpack(data, offset)
        start = offset + _RECORD.size
        end = start + path_size + claim_size
        if end > size:
            break
        yield line, data[start : start + path_size], data[start + path_size : end]
        offset = end
    return data[offset:]


def _decoded(stored: bytes) -> str:
    return stored.decode("utf-8", "surrogatepass")


def _repeated(values: array) -> set[int]:
    """The values occurring more than once: those that meet a value already seen in a
    bit filter (of a bounded size), counted exactly."""
    bits = bytearray(FILTER_BITS >> 3)
    mask = FILTER_BITS - 1
    maybe: set[int] = set()
    for value in values:
        slot = value & mask
        bit = 1 << (slot & 7)
        if bits[slot >> 3] & bit:
            maybe.add(value)
        else:
            bits[slot >> 3] |= bit
    if not maybe:
        return maybe
    counts = dict.fromkeys(maybe, 0)
    for value in values:
        if value in counts:
            counts[value] += 1
    return {value for value, count in counts.items() if count > 1}
