"""`vt ledger audit` (docs/ledger.md#the-ledger-through-git-history): every commit that
touched the ledger, merges included, held to the rule of ledger/succession.py against its
parents, so that a fresh clone or a CI job can tell that the ledger was only ever
appended to.

Three git processes read the whole history, never one per commit: `git log` lists the
commits, each with its parents rewritten to the nearest commits that touched the ledger;
`git cat-file --batch-check` names each one's ledger blob and its size; one `git cat-file
--batch` reads the blobs that must be read (see `_Walk`). A version of the ledger is
verified once, and from its parent's head when it only appends; it is dropped as soon as
no commit left to check needs it.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from vault_tools.errors import UsageError
from vault_tools.findings import counted
from vault_tools.integrations.git.repo import GitError, GitRepo
from vault_tools.ledger.succession import (
    Version,
    extension_problems,
    prefix_version,
    read_version,
)


@dataclass(frozen=True, slots=True)
class Breach:
    """A commit whose ledger breaks the rule, or does not verify."""

    commit: str
    author: str
    line: int | None  # of the commit's ledger (or of the parent's a message names)
    message: str

    def to_json(self) -> dict:
        return {"commit": self.commit, "author": self.author, "line": self.line,
                "message": self.message}  # fmt: skip


@dataclass(slots=True)
class AuditResult:
    tip: str  # the commit audited, in full
    since: str | None  # the commit the audit started after, in full
    commits: int = 0  # commits checked
    events: int = 0  # events in the tip's ledger
    problems: list[Breach] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)  # commits whose ledger held
    # conflict markers or a broken chain of sound events, which a later commit re-chains

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "tip": self.tip,
            "since": self.since,
            "commits": self.commits,
            "events": self.events,
            "problems": [p.to_json() for p in self.problems],
            "unresolved": self.unresolved,
        }


@dataclass(frozen=True, slots=True)
class _Commit:
    sha: str
    parents: tuple[str, ...]
    author: str


def audit(repo: GitRepo, ledger: str, tip: str = "HEAD", since: str | None = None) -> AuditResult:
    """Check the history of `tip` (every commit not reachable from `since`, when given)
    for the ledger at `ledger`, a path from the top of the working tree.

    When `since` is not an ancestor of `tip` (the branch was force-pushed or rebased since
    `since` was audited), the tip's ledger must also hold every event of `since`'s."""
    result = AuditResult(_commit_of(repo, tip), None)
    if since is not None:
        result.since = _commit_of(repo, since)
    commits = _commits(repo, ledger, result.tip, result.since)
    shas = {c.sha for c in commits}
    ends = [result.tip, *([result.since] if result.since else [])]
    parents = [p for c in commits for p in c.parents]
    blobs = _blob_ids(repo, ledger, [*dict.fromkeys([*ends, *(c.sha for c in commits), *parents])])
    # every use of a blob by the walk below: its version is dropped after the last
    uses = Counter(blob[0] for c in commits for sha in (*c.parents, c.sha) if (blob := blobs[sha]))
    with _BlobReader(repo) as reader:
        walk = _Walk(reader, blobs, uses)
        walk.reference = walk.version(result.tip)
        for commit in commits:
            walk.check(commit, result, outside=[p for p in commit.parents if p not in shas])
        result.events = walk.reference.count if walk.reference else 0
        if result.since and not _is_ancestor(repo, result.since, result.tip):
            _rewritten_since(repo, result, walk.version(result.since), walk.reference)
    result.commits = len(commits)
    return result


class _Walk:
    """The versions of the ledger met in the walk. The tip's ledger is read first, whole:
    when it verifies, a version whose blob id is that of one of its prefixes (git names
    a blob by the hash of its bytes) is known without reading it, so a history that only
    appended reads one blob; any other version is read and verified, from its parent's
    head when it extends one."""

    def __init__(self, reader: _BlobReader, blobs: dict[str, tuple[str, int] | None],
                 uses: Counter[str]) -> None:  # fmt: skip
        self.reader, self.blobs, self.uses = reader, blobs, uses
        self.versions: dict[str, Version] = {}
        self.reference: Version | None = None
        self.prefixes: dict[str, Version | None] = {}
        self.said: set[str] = set()  # blobs whose own problems were reported

    def version(self, sha: str, parents: Sequence[Version | None] = ()) -> Version | None:
        """The ledger of commit `sha` (None: it has none), judged against `parents`
        when it must be read."""
        blob = self.blobs[sha]
        if blob is None:
            return None
        name, size = blob
        found = self.versions.get(name) or self._prefix(name, size)
        if found is None:
            found = read_version(self.reader.read(name), parents)
        if self.uses[name] > 0:
            self.versions[name] = found
        return found

    def _prefix(self, name: str, size: int) -> Version | None:
        """The version of blob `name` as a prefix of the reference, if it is one."""
        if name in self.prefixes:
            return self.prefixes[name]
        found = None
        reference = self.reference
        if reference is not None and size <= len(reference.data):
            candidate = prefix_version(reference, size)
            if candidate is not None and _blob_name(reference.data, size, name) == name:
                found = candidate
        self.prefixes[name] = found
        return found

    def check(self, commit: _Commit, result: AuditResult, outside: list[str]) -> None:
        for sha in outside:  # before the walk (--since, a shallow clone): its baseline
            self.version(sha)
        parents = [self.version(p) for p in commit.parents]
        blob = self.blobs[commit.sha]
        problems: list[tuple[int | None, str]] = []
        if blob is None:
            if any(p and p.has_lines() for p in parents):
                problems.append((None, "the ledger is deleted in this commit; it is append-only"))
        else:
            child = self.version(commit.sha, parents)
            assert child is not None
            if blob[0] not in self.said:  # what is wrong in it is said for its first commit
                self.said.add(blob[0])
                inherited = {problem for p in parents if p for problem in p.problems}
                problems = [p for p in child.problems if p not in inherited]
                if child.resolvable and not child.ok:
                    result.unresolved.append(commit.sha)
                    problems = []  # re-chaining is `vt ledger resolve`'s work, no rewrite
            names = [f"the ledger of parent {p[:12]}" for p in commit.parents]
            problems += extension_problems(child, parents, names)
        result.problems += [Breach(commit.sha, commit.author, line, msg) for line, msg in problems]
        for sha in (*commit.parents, commit.sha):
            self._release(sha)

    def _release(self, sha: str) -> None:
        """One use of the commit's blob done: its version is dropped with its last use."""
        blob = self.blobs[sha]
        if blob is not None:
            self.uses[blob[0]] -= 1
            if self.uses[blob[0]] <= 0:
                self.versions.pop(blob[0], None)


def _blob_name(data: bytes, size: int, like: str) -> str:
    """git's name of a blob of the first `size` bytes of `data`, hashed as `like` is
    (sha1, or sha256 in a repository of that object format)."""
    digest = hashlib.sha1() if len(like) == 40 else hashlib.sha256()  # noqa: S324 - git's
    digest.update(b"blob %d\0" % size)
    digest.update(memoryview(data)[:size])
    return digest.hexdigest()


def _rewritten_since(
    repo: GitRepo, result: AuditResult, base: Version | None, tip: Version | None
) -> None:
    """`since` is not an ancestor of the tip: the tip's ledger must still hold its events."""
    ids = base.ids() if base else []
    lost = [(k, i) for k, i in enumerate(ids) if tip is None or tip.index(i) is None]
    if not lost:
        return
    k, first = lost[0]
    since = (result.since or "")[:12]
    message = (f"drops {counted(len(lost), 'event')} of the ledger of {since} (first: {first}, its "
               f"line {k + 1}), which is not an ancestor of this commit: the history was "
               f"rewritten since {since} (a force-push?)")  # fmt: skip
    result.problems.append(Breach(result.tip, _author(repo, result.tip), None, message))


# ---------------------------------------------------------------- git


def _commit_of(repo: GitRepo, rev: str) -> str:
    done = repo.git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
                    check=False)  # fmt: skip
    if done.returncode != 0:
        raise UsageError(f"{rev!r} is not a commit of this repository", str(repo.root))
    return done.stdout.decode().strip()


def _is_ancestor(repo: GitRepo, ancestor: str, commit: str) -> bool:
    return repo.git("merge-base", "--is-ancestor", ancestor, commit, check=False).returncode == 0


def _author(repo: GitRepo, sha: str) -> str:
    out = repo.git("log", "-1", "--format=%an <%ae>", sha).stdout
    return out.decode("utf-8", "replace").strip()


def _commits(repo: GitRepo, ledger: str, tip: str, since: str | None) -> list[_Commit]:
    """The commits that touched the ledger (and every merge), parents first. Without
    `--full-history`, git would skip a merge whose ledger is one parent's unchanged, the
    very merge that drops the other parent's events."""
    args = ["log", "--full-history", "--parents", "--topo-order", "--reverse",
            "--format=%x1e%H %P%x1f%an <%ae>", tip]  # fmt: skip
    if since:
        args.append(f"^{since}")
    out = repo.git(*args, "--", f":(top,literal){ledger}").stdout.decode("utf-8", "replace")
    commits = []
    for record in out.split("\x1e")[1:]:
        shas, _, author = record.rstrip("\n").partition("\x1f")
        sha, *parents = shas.split()
        commits.append(_Commit(sha, tuple(dict.fromkeys(parents)), author))
    return commits


def _blob_ids(repo: GitRepo, ledger: str, shas: list[str]) -> dict[str, tuple[str, int] | None]:
    """Each commit's ledger blob and its size (None: the commit has no ledger), in one
    process: git reads an object's size from its header, without inflating it."""
    request = "".join(f"{sha}:{ledger}\n" for sha in shas).encode("utf-8", "surrogateescape")
    check = "--batch-check=%(objecttype) %(objectname) %(objectsize)"
    out = repo.git("cat-file", check, stdin=request).stdout if shas else b""
    blobs: dict[str, tuple[str, int] | None] = {}
    for sha, line in zip(shas, out.decode("utf-8", "replace").splitlines(), strict=True):
        kind, name, size = (line.split(" ") + ["", "", ""])[:3]
        blobs[sha] = (name, int(size)) if kind == "blob" else None
    return blobs


class _BlobReader:
    """One `git cat-file --batch` for the whole walk, asked for one blob at a time."""

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> _BlobReader:
        return self

    def read(self, blob: str) -> bytes:
        if self.process is None:
            try:
                self.process = subprocess.Popen(
                    ["git", "cat-file", "--batch"], cwd=self.repo.root, stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                )  # fmt: skip
            except FileNotFoundError:
                raise GitError("git is not installed (or not on PATH)") from None
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{blob}\n".encode())
        self.process.stdin.flush()
        header = self.process.stdout.readline().split()
        if len(header) != 3 or header[1] != b"blob":
            raise GitError(f"git cat-file: no blob {blob}", str(self.repo.root))
        data = self.process.stdout.read(int(header[2]))
        self.process.stdout.read(1)  # the newline after each object
        return data

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe is not None:
                    pipe.close()
            self.process.wait()
