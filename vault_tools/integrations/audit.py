"""`vt ledger audit` (docs/ledger.md#the-ledger-through-git-history): every commit that
touched the ledger, merges included, held to the rule of ledger/history.py against its
parents, so that a fresh clone or a CI job can tell that the ledger was only ever
appended to.

Three git processes read the whole history, never one per commit: `git log` lists the
commits, each with its parents rewritten to the nearest commits that touched the ledger;
`git cat-file --batch-check` names each one's ledger blob; `git cat-file --batch` streams
each distinct blob once, parents before children. A version of the ledger is verified
once, and from its parent's head when it only appends; its bytes are dropped as soon as
no commit left to check needs them.
"""

from __future__ import annotations

import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from vault_tools.errors import UsageError
from vault_tools.integrations.gitrepo import GitError, GitRepo
from vault_tools.ledger.history import Version, extension_problems, read_version


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
    outside = [p for c in commits for p in c.parents if p not in shas]
    ends = [result.tip, *([result.since] if result.since else [])]
    blobs = _blob_ids(repo, ledger, [*dict.fromkeys([*outside, *(c.sha for c in commits), *ends])])
    # every use of a blob, in the order the walk below meets them: each blob is read
    # once, at its first use, and dropped after its last
    met = [blobs[sha] for sha in outside]
    met += [blobs[sha] for commit in commits for sha in (*commit.parents, commit.sha)]
    met += [blobs[sha] for sha in ends]
    uses = Counter(blob for blob in met[len(outside) :] if blob)
    versions: dict[str, Version] = {}
    with _BlobReader(repo, [*dict.fromkeys(blob for blob in met if blob)]) as reader:
        for sha in dict.fromkeys(outside):  # the baseline: trusted, not reported
            blob = blobs[sha]
            if blob and blob not in versions:
                versions[blob] = read_version(reader.read(blob))
        for commit in commits:
            _check_commit(commit, blobs, versions, reader, result)
            for sha in (*commit.parents, commit.sha):
                _release(blobs[sha], uses, versions)
        tip_version = _version(blobs[result.tip], versions, reader)
        result.events = tip_version.count if tip_version else 0
        if result.since and not _is_ancestor(repo, result.since, result.tip):
            base = _version(blobs[result.since], versions, reader)
            _rewritten_since(repo, result, base, tip_version)
    result.commits = len(commits)
    return result


def _check_commit(
    commit: _Commit,
    blobs: dict[str, str | None],
    versions: dict[str, Version],
    reader: _BlobReader,
    result: AuditResult,
) -> None:
    parents = [_version(blobs[p], versions, reader) for p in commit.parents]
    blob = blobs[commit.sha]
    if blob is None:
        if any(p and p.data for p in parents):
            message = "the ledger is deleted in this commit; it is append-only"
            result.problems.append(Breach(commit.sha, commit.author, None, message))
        return
    if blob in versions:
        child = versions[blob]  # the same bytes as a version judged before: said once
        problems = []
    else:
        child = versions[blob] = read_version(reader.read(blob), parents)
        inherited = {problem for p in parents if p for problem in p.problems}
        problems = [p for p in child.problems if p not in inherited]
        if child.resolvable and not child.ok:
            result.unresolved.append(commit.sha)
            problems = []  # re-chaining them is `vt ledger resolve`'s work, not a rewrite
    names = [f"the ledger of parent {p[:12]}" for p in commit.parents]
    problems += extension_problems(child, parents, names)
    result.problems += [Breach(commit.sha, commit.author, line, msg) for line, msg in problems]


def _version(blob: str | None, versions: dict[str, Version], reader: _BlobReader) -> Version | None:
    if blob is None:
        return None
    if blob not in versions:  # a parent outside the walk (a shallow clone's edge)
        versions[blob] = read_version(reader.read(blob))
    return versions[blob]


def _release(blob: str | None, uses: Counter[str], versions: dict[str, Version]) -> None:
    """One use of `blob` done: its version is dropped with its last use."""
    if blob:
        uses[blob] -= 1
        if uses[blob] <= 0:
            versions.pop(blob, None)


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
    message = (f"drops {len(lost)} event(s) of the ledger of {since} (first: {first}, its "
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


def _blob_ids(repo: GitRepo, ledger: str, shas: list[str]) -> dict[str, str | None]:
    """Each commit's ledger blob (None: the commit has no ledger), in one process."""
    if not shas:
        return {}
    request = "".join(f"{sha}:{ledger}\n" for sha in shas).encode("utf-8", "surrogateescape")
    out = repo.git("cat-file", "--batch-check=%(objectname) %(objecttype)", stdin=request).stdout
    blobs: dict[str, str | None] = {}
    for sha, line in zip(shas, out.decode("utf-8", "replace").splitlines(), strict=True):
        name, _, kind = line.rpartition(" ")
        blobs[sha] = name if kind == "blob" else None
    return blobs


class _BlobReader:
    """One `git cat-file --batch` streaming the given blobs in order; `read` takes them
    in that same order."""

    def __init__(self, repo: GitRepo, blobs: list[str]) -> None:
        self.repo, self.blobs = repo, blobs
        self.process: subprocess.Popen[bytes] | None = None
        self.stream: Iterator[tuple[str, bytes]] = iter(())

    def __enter__(self) -> _BlobReader:
        if not self.blobs:
            return self
        try:
            self.process = subprocess.Popen(
                ["git", "cat-file", "--batch"], cwd=self.repo.root, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        except FileNotFoundError:
            raise GitError("git is not installed (or not on PATH)") from None
        request = "".join(f"{blob}\n" for blob in self.blobs).encode()
        # written by a thread: git answers while it reads, and both pipes would fill
        threading.Thread(target=self._feed, args=(request,), daemon=True).start()
        self.stream = self._answers()
        return self

    def _feed(self, request: bytes) -> None:
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write(request)
            self.process.stdin.close()
        except OSError:
            pass  # git stopped early; `read` says so

    def _answers(self) -> Iterator[tuple[str, bytes]]:
        assert self.process is not None and self.process.stdout is not None
        out = self.process.stdout
        for _ in self.blobs:
            header = out.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise GitError(f"git cat-file: no blob {header[:1]!r}", str(self.repo.root))
            data = out.read(int(header[2]))
            out.read(1)  # the newline after each object
            yield header[0].decode(), data

    def read(self, blob: str) -> bytes:
        for name, data in self.stream:
            if name == blob:
                return data
        raise GitError(f"git cat-file: blob {blob} not read", str(self.repo.root))

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()
