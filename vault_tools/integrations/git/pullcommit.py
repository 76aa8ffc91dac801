"""After a pull, vt's refreshed bytes committed, so `git status` is clean and the next
pull is never refused because of them (docs/workflow.md, "Working in a team over git").

The post-merge and post-commit hooks run `vt hook refresh --after HOOK`: the refresh of
`hook.refresh_after_pull` (the Claim Store, the knowledge-base blocks, the notes' marks,
a ledger that came with conflict markers), then the files it rewrote are committed:

- into the merge commit this merge just made (amended, both parents kept), when HEAD is
  one: after `git pull` / `git merge` that merged (post-merge: HEAD's first parent is
  ORIG_HEAD), or after the commit that concludes a merge stopped on a conflict
  (post-commit: HEAD has a second parent);
- as a commit of their own, `vt: refresh derived blocks after pull`, after a
  fast-forward that brought stale derived bytes (pushed by a clone without vt's hooks;
  a commit made with them is consistent already and nothing is rewritten);
- never during a merge still in progress, a squash or a checkout (the working tree
  keeps them, as a plain `vt hook refresh` leaves them).

Only files vt rewrote that were clean before the refresh are committed (from HEAD's
tree, so nothing else staged goes with them): a user's uncommitted edit is never staged,
and a file holding one is left rewritten in the working tree with the edit. The commit
is made with git's plumbing (`commit-tree`, `update-ref`), which runs no hook: no
pre-commit check of vt's own bytes, and no post-commit hook to refresh it again.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vault_tools.config import Settings
from vault_tools.errors import VtError
from vault_tools.integrations.git.repo import GitRepo

if TYPE_CHECKING:
    from vault_tools.integrations.git.hook import ResolveResult
    from vault_tools.review.marking import Remarked
    from vault_tools.store.refresh import RefreshResult

SUBJECT = "vt: refresh derived blocks after pull"
AMEND = "amend"
OWN_COMMIT = "commit"


@dataclass(slots=True)
class PullCommit:
    """What was done with the refreshed files after a pull."""

    how: str | None = None  # AMEND, OWN_COMMIT, or None: left in the working tree
    committed: list[str] = field(default_factory=list)  # repository paths
    left: list[str] = field(default_factory=list)  # rewritten, but holding a user's edit
    problem: str | None = None  # git refused the commit (the files stay rewritten)


def how_to_commit(repo: GitRepo, after: str) -> str | None:
    """AMEND, OWN_COMMIT or None for the refresh run by the hook `after`."""
    if after == "post-rewrite":
        return OWN_COMMIT  # after a rebase: the replayed commits stay as they are
    if after not in ("post-merge", "post-commit"):
        return None  # a checkout: nothing was committed to commit into
    done = repo.git("log", "-1", "--format=%H %P", "HEAD", check=False)
    commits = done.stdout.decode("ascii", "replace").split()
    if done.returncode != 0 or not commits:
        return None
    if not set(repo.merge_heads()) <= set(commits[2:]):
        return None  # a merge not concluded (git's post-merge still sees MERGE_HEAD)
    if after == "post-commit":
        return AMEND if len(commits) > 2 else None
    orig = repo.git("rev-parse", "-q", "--verify", "ORIG_HEAD", check=False)
    orig_head = orig.stdout.decode("ascii", "replace").strip()
    if not orig_head or orig_head == commits[0]:
        return None  # a squash, or nothing came: HEAD did not move
    if len(commits) > 2 and commits[1] == orig_head:
        return AMEND  # the merge commit this merge made on top of ours
    return OWN_COMMIT  # a fast-forward (to a commit, or to someone else's merge)


def changed_paths(repo: GitRepo) -> set[str]:
    """Every path `git status` names: modified, staged, untracked (repository paths)."""
    out = repo.git("status", "--porcelain=v1", "-z", "--untracked-files=all").stdout
    paths: set[str] = set()
    fields = iter(out.split(b"\0"))
    for entry in fields:
        if len(entry) < 4:
            continue
        paths.add(entry[3:].decode("utf-8", "surrogateescape"))
        if entry[:1] in (b"R", b"C"):
            next(fields, None)  # a rename's second path: its origin
    return paths


def commit_refreshed(
    repo: GitRepo, how: str | None, rewritten: list[str], dirty_before: set[str]
) -> PullCommit:
    """Commit the rewritten files (repository paths) that were clean before, as `how`."""
    result = PullCommit(how)
    clean = sorted({p for p in rewritten if p not in dirty_before})
    result.left = sorted({p for p in rewritten if p in dirty_before})
    if clean and how is not None:
        tracked = repo.git("ls-files", "--cached", "-z", "--", *_literal(clean)).stdout
        clean = sorted(p.decode("utf-8", "surrogateescape") for p in tracked.split(b"\0") if p)
    if how is None or not clean:
        result.how = None
        return result
    try:
        _commit_paths(repo, how, clean)
    except VtError as exc:
        result.how = None
        result.problem = exc.message
        return result
    result.committed = clean
    return result


def _commit_paths(repo: GitRepo, how: str, paths: list[str]) -> None:
    """HEAD's tree with `paths` as the working tree has them, committed with plumbing:
    git's post-merge hook runs while MERGE_HEAD still exists, when `git commit --amend`
    refuses, and plumbing runs no hook, so the commit cannot trigger a refresh again."""
    head = repo.git("rev-parse", "--verify", "HEAD^{commit}").stdout.decode().strip()
    with tempfile.TemporaryDirectory(prefix="vt-refresh-") as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        repo.git("read-tree", "HEAD", env=env)
        repo.git("update-index", "--add", "--", *paths, env=env)
        tree = repo.git("write-tree", env=env).stdout.decode().strip()
    if how == AMEND:
        raw = repo.git("cat-file", "commit", head).stdout
        headers, _, message = raw.partition(b"\n\n")
        parents = [line.split()[1].decode() for line in headers.split(b"\n")
                   if line.startswith(b"parent ")]  # fmt: skip
        who = repo.git("log", "-1", "--format=%an%x00%ae%x00%ad", "--date=raw", head).stdout
        name, email, date = who.decode("utf-8", "surrogateescape").rstrip("\n").split("\0")
        env = {**os.environ, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
               "GIT_AUTHOR_DATE": date}  # fmt: skip
        reflog = "vt: refreshed blocks and marks amended into the merge"
    else:
        parents, message, env = [head], f"{SUBJECT}\n".encode(), dict(os.environ)
        reflog = SUBJECT
    args = [arg for parent in parents for arg in ("-p", parent)]
    made = repo.git("commit-tree", tree, *args, stdin=message, env=env)
    commit = made.stdout.decode().strip()
    repo.git("update-ref", "-m", reflog, "HEAD", commit, head)
    # the index now says what HEAD says for them, so `git status` is clean
    repo.git("update-index", "--", *paths)


def _literal(paths: list[str]) -> list[str]:
    return [f":(top,literal){p}" for p in paths]


def refresh_and_commit(
    settings: Settings, after: str
) -> tuple[ResolveResult | None, RefreshResult, Remarked, PullCommit]:
    """The refresh the hook `after` runs, then its rewrites committed as described
    above: (repaired ledger, refresh result, remarked notes, PullCommit)."""
    from vault_tools.integrations.git.hook import refresh_after_pull

    repo = GitRepo.find(settings.vault)
    if repo is None:
        return (*refresh_after_pull(settings), PullCommit())
    try:
        how = how_to_commit(repo, after)
        dirty = changed_paths(repo) if how is not None else set()
    except VtError:
        how, dirty = None, set()
    repaired, refreshed, remarked = refresh_after_pull(settings)
    prefix = repo.relative(settings.vault)
    vault_paths = [*refreshed.kb_notes_written, *remarked.marked]
    if repaired is not None and repaired.changed:
        vault_paths.append(repaired.path)
    rewritten = [f"{prefix}/{p}" if prefix else p for p in vault_paths]
    try:
        committed = commit_refreshed(repo, how, rewritten, dirty)
    except VtError as exc:
        committed = PullCommit(problem=exc.message)
    return repaired, refreshed, remarked, committed
