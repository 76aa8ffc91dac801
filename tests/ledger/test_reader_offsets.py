"""The ledger readers that seek to a byte offset or read the tail backwards give what the
plain rule gives: read the whole file, split it into lines, keep the complete ones.

Random ledgers of arbitrary lines (JSON-looking, CRLF, git conflict markers, empty lines,
a torn tail), read with reader.py's block size made small so that lines cross blocks."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_tools.ledger import reader
from vault_tools.ledger.reader import complete_size, count_lines, crlf_converted, iter_lines

PIECES = [b'{"seq":1}', b"\r", b"<<<<<<< HEAD", b"=======", b">>>>>>> theirs", b"x", b"", b"\xff"]
line = st.lists(st.sampled_from(PIECES), max_size=6).map(b"".join)
ledgers = st.tuples(st.lists(line, max_size=12), line).map(
    lambda parts: b"".join(text + b"\n" for text in parts[0]) + parts[1]  # then a torn tail
)


def lines_of(data: bytes) -> list[tuple[int, bytes]]:
    """The plain rule: (end offset, raw line) of every complete line, oldest first."""
    out, end = [], 0
    for raw in data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]:
        end += len(raw) + 1
        out.append((end, raw + b"\n"))
    return out


@contextmanager
def small_blocks(size: int) -> Iterator[None]:
    saved = reader._BLOCK
    reader._BLOCK = size
    try:
        yield
    finally:
        reader._BLOCK = saved


@contextmanager
def ledger_file(tmp_path: Path, data: bytes) -> Iterator[tuple[Path, int]]:
    path = tmp_path / "decision_ledger.jsonl"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        yield path, fd
    finally:
        os.close(fd)


@settings(max_examples=200, deadline=None)
@given(data=ledgers, block=st.integers(1, 9), cut=st.integers(0, 10_000))
def test_offset_readers_agree_with_the_plain_rule(
    tmp_path_factory: object, data: bytes, block: int, cut: int
) -> None:
    tmp_path = tmp_path_factory.mktemp("ledger")  # type: ignore[attr-defined]
    plain = lines_of(data)
    size = plain[-1][0] if plain else 0
    with small_blocks(block), ledger_file(tmp_path, data) as (path, fd):
        assert complete_size(fd) == size
        start, stop = sorted((cut % (len(data) + 1), (cut * 7) % (len(data) + 1)))
        assert count_lines(fd, start, stop) == data[start:stop].count(b"\n")
        assert list(iter_lines(path)) == plain
        # from a line boundary, as the gate's trusted prefix starts
        boundary = plain[cut % len(plain)][0] if plain else 0
        assert list(iter_lines(path, boundary)) == [p for p in plain if p[0] > boundary]
        numbered = [(n, raw) for n, (_, raw) in enumerate(plain, 1)]
        assert list(reader._iter_lines_reversed(path)) == numbered[::-1]
        first = plain[0][1] if plain else b""
        crlf = size >= 2 and data[size - 2 : size] == b"\r\n" and first.endswith(b"\r\n")
        assert crlf_converted(fd, size) == crlf


@settings(max_examples=100, deadline=None)
@given(data=ledgers, more=ledgers, block=st.integers(1, 9))
def test_appended_and_truncated_mid_line(
    tmp_path_factory: object, data: bytes, more: bytes, block: int
) -> None:
    """The same file read again after an append, and after a cut in the middle of it."""
    tmp_path = tmp_path_factory.mktemp("ledger")  # type: ignore[attr-defined]
    for version in (data + more, (data + more)[: len(data) + len(more) // 2]):
        with small_blocks(block), ledger_file(tmp_path, version) as (path, fd):
            plain = lines_of(version)
            assert complete_size(fd) == (plain[-1][0] if plain else 0)
            assert list(iter_lines(path)) == plain
            assert [raw for _, raw in reader._iter_lines_reversed(path)] == [
                raw for _, raw in plain
            ][::-1]
