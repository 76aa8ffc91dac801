"""vt inside git: the pre-commit hook (install, uninstall, run) and the ledger merge driver.

`run` checks what is being committed — the index, never the working tree — and writes
nothing anywhere: no note, no ledger line, no `.vt/` cache, nothing staged. Given file
names (the pre-commit framework passes them: a commit's staged files, or every file with
`--all-files`, which is how CI runs it), it checks those files as they are on disk
instead, so a committed invalid note fails a CI run. It runs on every commit, so this
module imports only the standard library and light vt modules at the top; the note
checks and the ledger code are imported when there is something to check. The CLI's
`vt hook run` renders the `HookReport` it returns.
"""

from __future__ import annotations

import os
import posixpath
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vault_tools.config import Settings
from vault_tools.errors import RefusedError, UsageError
from vault_tools.findings import ERROR, Finding
from vault_tools.infra.boundary import writable_path
from vault_tools.infra.textfiles import append_lines, read_text, write_atomic
from vault_tools.integrations.git.clonesetup import HOOK_MARK, LEDGER_DRIVER
from vault_tools.integrations.git.repo import GitRepo
from vault_tools.integrations.git.team import install_team, uninstall_team
from vault_tools.integrations.git.unrecorded import unrecorded_decisions
from vault_tools.notes.vault import (
    given_notes,
    is_note_path,
    may_be_review_note,
    read_file,
    read_finding,
)
from vault_tools.vocabulary import conflict_marker

if TYPE_CHECKING:  # the hook's every commit must not import the store
    from vault_tools.review.marking import Remarked
    from vault_tools.store.refresh import RefreshResult

HOOK_NAME = "pre-commit"
CHAINED_NAME = "pre-commit.vt-chained"
SIGNATURE = f"{HOOK_MARK}; `vt hook uninstall` removes it"
DRIVER = LEDGER_DRIVER
DRIVER_NAME = "vt decision ledger"
GITATTRIBUTES = ".gitattributes"


# ---------------------------------------------------------------- install / uninstall


def _require_repo(settings: Settings) -> GitRepo:
    repo = GitRepo.find(settings.vault)
    if repo is None:
        raise UsageError("not inside a git repository (run `git init` first)", str(settings.vault))
    return repo


def hook_script(repo: GitRepo, settings: Settings, python: str | None = None) -> str:
    # git runs hooks from the top of the working tree, so a vault path relative to it keeps
    # the hook right in every linked worktree (hooks are shared) and after a move
    vault = repo.relative(settings.vault) or "."
    python = python or sys.executable
    return (
        "#!/bin/sh\n"
        f"{SIGNATURE}\n"
        "# Checks the staged review notes and decision ledger before each commit.\n"
        f'chained="$(dirname "$0")/{CHAINED_NAME}"\n'
        'if [ -x "$chained" ]; then\n'
        '    "$chained" "$@" || exit $?\n'
        "fi\n"
        f"exec {shlex.quote(python)} -m vault_tools hook run --vault {shlex.quote(vault)}\n"
    )


def driver_command(python: str | None = None) -> str:
    return f"{shlex.quote(python or sys.executable)} -m vault_tools ledger merge %O %A %B"


def _is_ours(path: Path) -> bool:
    try:
        return SIGNATURE in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def attributes_line(repo: GitRepo, settings: Settings) -> str:
    # the ledger's path as git sees it in the working tree (not where a symlink leads)
    pattern = "/".join(part for part in (repo.relative(settings.vault), settings.ledger) if part)
    if "/" not in pattern:
        pattern = "/" + pattern  # anchor a top-level ledger to the root
    if any(c in pattern for c in ' \t"\\'):
        pattern = '"' + pattern.replace("\\", "\\\\").replace('"', '\\"') + '"'
    # -text: git never converts the ledger's line endings (with core.autocrlf, a CRLF
    # checkout would fail every line's hash)
    return f"{pattern} merge={DRIVER} -text"


def _vt_lines(line: str) -> tuple[str, str]:
    """The attributes line, and the one earlier versions wrote (without -text)."""
    return line, line.removesuffix(" -text")


def install(settings: Settings, dry_run: bool = False) -> list[str]:
    """Install the pre-commit hook, the ledger and note merge drivers and the post-merge /
    post-checkout hooks (team.py); the changes made, in words.

    Idempotent (a second run changes nothing and returns []). A pre-commit hook vt did
    not write is moved to `pre-commit.vt-chained` and run first by vt's hook.
    """
    repo = _require_repo(settings)
    changes = _install_hook(repo, settings, dry_run)
    changes += _install_driver(repo, dry_run)
    changes += _install_attributes(repo, settings, dry_run)
    changes += install_team(repo, settings, dry_run)
    return changes


def _install_hook(repo: GitRepo, settings: Settings, dry_run: bool) -> list[str]:
    hooks = repo.hooks_dir()
    hook, chained = hooks / HOOK_NAME, hooks / CHAINED_NAME
    script = hook_script(repo, settings).encode()
    changes: list[str] = []
    if hook.exists() or hook.is_symlink():
        if _is_ours(hook):
            # rewritten in place: a link of ours leading out of the hooks folder is refused
            writable_path(hooks, hook, "git's hooks folder")
            if hook.read_bytes() == script and os.access(hook, os.X_OK):
                return []
            changes.append(f"updated the pre-commit hook {hook}")
        elif chained.exists() or chained.is_symlink():
            raise RefusedError(
                f"a pre-commit hook vt did not write is in place and "
                f"{CHAINED_NAME} is taken; move one of them away, then "
                "run `vt hook install` again",
                str(hook),
            )
        else:
            changes.append(
                f"moved the existing pre-commit hook to {chained}; vt's hook runs it first"
            )
            if not dry_run:
                os.replace(hook, chained)
    if not changes:
        changes.append(f"installed the pre-commit hook {hook}")
    if not dry_run:
        write_atomic(hook, script, 0o755, root=hooks)
    return changes


def _install_driver(repo: GitRepo, dry_run: bool) -> list[str]:
    wanted = {f"merge.{DRIVER}.name": DRIVER_NAME, f"merge.{DRIVER}.driver": driver_command()}
    changes = []
    for key, value in wanted.items():
        if repo.config_get(key) != value:
            changes.append(f"git config {key} {shlex.quote(value)}")
            if not dry_run:
                repo.config_set(key, value)
    return changes


def _install_attributes(repo: GitRepo, settings: Settings, dry_run: bool) -> list[str]:
    path = repo.root / GITATTRIBUTES
    line = attributes_line(repo, settings)
    text = read_text(path)
    if line in (existing.strip() for existing in text.splitlines()):
        return []
    writable_path(repo.root, path, "the working tree")  # a dry run (init's plan) says so too
    older = [x for x in text.splitlines(keepends=True) if x.strip() not in _vt_lines(line)]
    if not dry_run:
        write_atomic(path, append_lines("".join(older), [line]).encode(), root=repo.root)
    return [f"added `{line}` to {path}"]


def uninstall(settings: Settings, dry_run: bool = False) -> list[str]:
    """Remove vt's hook (restoring a chained one), the merge driver and its attribute."""
    repo = _require_repo(settings)
    hooks = repo.hooks_dir()
    hook, chained = hooks / HOOK_NAME, hooks / CHAINED_NAME
    changes: list[str] = []
    ours = _is_ours(hook)
    if ours:
        changes.append(f"removed the pre-commit hook {hook}")
        if not dry_run:
            hook.unlink()
    elif hook.exists():
        changes.append(f"left {hook} alone: vt did not write it")
    if (chained.exists() or chained.is_symlink()) and (ours or not hook.exists()):
        changes.append(f"restored the original pre-commit hook from {chained}")
        if not dry_run:
            os.replace(chained, hook)
    if (
        repo.config_get(f"merge.{DRIVER}.driver") is not None
        or repo.config_get(f"merge.{DRIVER}.name") is not None
    ):
        changes.append(f"removed git config section merge.{DRIVER}")
        if not dry_run:
            repo.config_remove_section(f"merge.{DRIVER}")
    changes += _uninstall_attributes(repo, settings, dry_run)
    changes += uninstall_team(repo, settings, dry_run)
    return changes


def _uninstall_attributes(repo: GitRepo, settings: Settings, dry_run: bool) -> list[str]:
    path = repo.root / GITATTRIBUTES
    line = attributes_line(repo, settings)
    text = read_text(path)
    lines = text.splitlines(keepends=True)
    kept = [existing for existing in lines if existing.strip() not in _vt_lines(line)]
    if len(kept) == len(lines):
        return []
    if not dry_run:
        if any(existing.strip() for existing in kept):
            write_atomic(path, "".join(kept).encode(), root=repo.root)
        else:
            path.unlink()  # it held only vt's line
    return [f"removed `{line}` from {path}"]


# ---------------------------------------------------------------- run


@dataclass(slots=True)
class HookReport:
    """What `vt hook run` found in the index (errors only: the hook refuses on errors)."""

    notes: int = 0  # staged review notes checked
    ledger: bool = False  # whether a staged ledger change was checked
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == ERROR)

    def to_json(self) -> dict:
        return {
            "ok": self.errors == 0,
            "notes": self.notes,
            "ledger": self.ledger,
            "errors": self.errors,
            "findings": [f.to_json() for f in self.findings],
        }


def run(settings: Settings, repo: GitRepo | None = None, files: Sequence[Path] = ()) -> HookReport:
    """Check the staged review notes and the staged ledger, or, given `files`, those
    files as they are on disk. Check-only: writes nothing."""
    if files:
        return run_files(settings, files, repo or GitRepo.find(settings.vault))
    repo = repo or _require_repo(settings)
    vault_rel = repo.relative(settings.vault)
    prefix = f"{vault_rel}/" if vault_rel else ""
    staged = repo.staged(vault_rel)
    notes = [p for p in staged.paths if is_note_path(p[len(prefix) :])]
    ledger = prefix + settings.ledger
    specs = [f":{p}" for p in notes]
    # a merge commit's ledger is checked even when it is HEAD's unchanged: taking our
    # side whole is exactly how the other side's events would be lost
    merge_heads = repo.merge_heads()
    check_ledger = ledger in staged.paths or bool(merge_heads)
    if check_ledger:
        specs += [f":{ledger}", f"HEAD:{ledger}", *(f"{m}:{ledger}" for m in merge_heads)]
    links = _link_targets(repo, prefix, [p for p in notes if p in staged.symlinks])
    specs += [f":{target}" for target in links.values() if target is not None]
    blobs = repo.read_blobs(specs)
    report = HookReport()
    staged_notes = {p[len(prefix) :]: _staged_text(blobs, p, links) for p in notes}
    _check_notes(settings, report, staged_notes)
    report.findings += unrecorded_decisions(settings, staged_notes)
    if check_ledger:
        report.ledger = True
        parents = [blobs[f"HEAD:{ledger}"], *(blobs[f"{m}:{ledger}"] for m in merge_heads)]
        from vault_tools.ledger.signatures import SignaturePolicy
        from vault_tools.ledger.succession import check_staged_ledger

        # the allowed signers as the working tree has them (a commit that edits the file
        # is checked against the edit: see docs/signing.md on what that means)
        policy = SignaturePolicy.of(settings)
        staged_ledger = blobs[f":{ledger}"]
        report.findings += check_staged_ledger(settings.ledger, staged_ledger, parents, policy)
    return report


def run_files(settings: Settings, files: Sequence[Path], repo: GitRepo | None) -> HookReport:
    """The review notes among `files` and, when it is among them, the ledger: read from
    the working tree, which is what pre-commit hands over (the staged content during a
    commit, with unstaged changes stashed; the checkout in CI).

    Files outside the vault and files that are no notes are passed over: pre-commit gives
    every file of the repository. The ledger is held to HEAD's as for a commit (only
    appended; in a merge, every parent's events kept) and verified; in CI the checkout
    is HEAD, so what counts there is that it verifies. Without git, only that.
    """
    report = HookReport()
    notes: dict[str, bytes | None] = {}
    ledger_given = ledger_unread = False
    for relative, finding in given_notes(settings.vault, files):
        outside = finding is not None and finding.code == "path-outside-vault"
        is_ledger = relative == settings.ledger
        if outside or not (is_ledger or is_note_path(relative)):
            continue  # another file of the repository
        if finding is not None:
            report.findings.append(finding)  # a symlink leading out, not a file, …
            ledger_unread |= is_ledger
        elif is_ledger:
            ledger_given = True
        else:
            notes[relative] = _note_bytes(settings, relative, report)
    _check_notes(settings, report, notes)
    report.findings += unrecorded_decisions(settings, notes)
    if not ledger_unread and (ledger_given or _ledger_staged(settings, repo)):
        report.ledger = True
        report.findings += _check_working_ledger(settings, repo)
    return report


def _note_bytes(settings: Settings, relative: str, report: HookReport) -> bytes | None:
    try:
        return read_file(settings.vault / relative, settings.max_note_bytes)[0]
    except OSError as exc:
        report.findings.append(read_finding(relative, exc))
        return None


def _ledger_in_repo(settings: Settings, repo: GitRepo) -> str:
    return "/".join(part for part in (repo.relative(settings.vault), settings.ledger) if part)


def _ledger_staged(settings: Settings, repo: GitRepo | None) -> bool:
    """Whether the commit being made changes the ledger: pre-commit never names a deleted
    file, and deleting the ledger is refused like any rewrite."""
    if repo is None:
        return False
    ledger = _ledger_in_repo(settings, repo)
    return ledger in repo.staged_paths(ledger)


def _check_working_ledger(settings: Settings, repo: GitRepo | None) -> list[Finding]:
    try:
        data: bytes | None = read_file(settings.ledger_path, None)[0]
    except FileNotFoundError:
        data = None
    except OSError as exc:
        return [read_finding(settings.ledger, exc)]
    parents: list[bytes | None] = [None]
    merge_heads: list[str] = []
    if repo is not None:
        ledger = _ledger_in_repo(settings, repo)
        merge_heads = repo.merge_heads()
        specs = [f"HEAD:{ledger}", *(f"{m}:{ledger}" for m in merge_heads)]
        parents = list(repo.read_blobs(specs).values())
    from vault_tools.ledger.signatures import SignaturePolicy
    from vault_tools.ledger.succession import check_staged_ledger

    policy = SignaturePolicy.of(settings)
    return check_staged_ledger(settings.ledger, data, parents, policy)


def _link_targets(repo: GitRepo, prefix: str, links: list[str]) -> dict[str, str | None]:
    """Each staged note that is a symlink (`links`) -> the repository path of the note it
    leads to, None when that lies outside the vault: like `vt validate`, the hook checks
    the note a link shows, and never one read from outside the vault."""
    if not links:
        return {}
    blobs = repo.read_blobs([f":{p}" for p in links])
    targets: dict[str, str | None] = {}
    for path in links:
        target = (blobs[f":{path}"] or b"").decode("utf-8", "surrogateescape")
        relative = posixpath.normpath(
            posixpath.join(posixpath.dirname(path[len(prefix) :]), target)
        )
        inside = (
            target
            and not target.startswith("/")
            and relative != ".."
            and not relative.startswith("../")
        )
        targets[path] = prefix + relative if inside else None
    return targets


def _staged_text(
    blobs: dict[str, bytes | None], path: str, links: dict[str, str | None]
) -> bytes | None:
    if path not in links:
        return blobs[f":{path}"]
    target = links[path]
    return None if target is None else blobs.get(f":{target}")


def _check_notes(settings: Settings, report: HookReport, staged: dict[str, bytes | None]) -> None:
    candidates = {
        rel: raw
        for rel, raw in staged.items()
        if raw is not None and may_be_review_note(rel, raw, settings.claims_dir)
    }
    if not candidates:
        return
    # imported here: only a commit that stages notes pays for the checks
    from vault_tools.checks.context import CheckContext
    from vault_tools.checks.rules import check_note
    from vault_tools.checks.schemas import Schemas
    from vault_tools.notes.kb import KnowledgeBase
    from vault_tools.notes.note import parse_note
    from vault_tools.notes.vault import list_vault

    # the working tree's file list, for link resolution. No vault root: the knowledge
    # base's aliases feed only the review-assist warnings, and reading every entity note
    # for them costs more than the rest of the hook; the hook refuses on errors only
    kb = KnowledgeBase(list_vault(settings.vault), settings.kb_dir, None)
    ctx = CheckContext(Schemas(settings.schemas_dir), kb, settings.disabled_findings, assist=False)
    for relative, raw in sorted(candidates.items()):
        note = parse_note(raw, relative)  # what vt validate reports, errors only
        report.notes += note.is_review_note
        report.findings += [f for f in check_note(note, ctx) if f.severity == ERROR]


# ---------------------------------------------------------------- the merge driver


def merge_driver(base: Path, ours: Path, theirs: Path) -> int:
    """git's `%O %A %B`: write the merged ledger to `ours`; the number of events in it.

    Raises IntegrityError (nothing written) when a side holds a tampered line or dropped
    an event of the merge base.
    """
    from vault_tools.ledger.merge import merge_ledgers

    merged = merge_ledgers(_read_bytes(base), _read_bytes(ours), _read_bytes(theirs))
    write_atomic(ours, merged, root=None)  # `ours` is git's own temporary file
    return merged.count(b"\n")


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""  # git passes an empty file for a side without the ledger, but be lenient
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror or exc}", str(path)) from None


@dataclass(frozen=True, slots=True)
class ResolveResult:
    path: str
    events_in: int  # event lines found (markers and a diff3 base section left out)
    kept: int  # events in the resolved ledger
    changed: bool  # whether the file was (or, on a dry run, would be) rewritten

    @property
    def duplicates(self) -> int:
        return self.events_in - self.kept

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "events_in": self.events_in,
            "kept": self.kept,
            "duplicates": self.duplicates,
            "changed": self.changed,
        }


def resolve_file(settings: Settings, dry_run: bool = False) -> ResolveResult:
    """The working-tree ledger, left with conflict markers or merged by `merge=union`,
    rewritten (atomically) as the merged ledger.

    During a merge git may hold sides the working file lacks (the driver refused one,
    or `checkout --ours` took one side): every version git has of the ledger in that
    merge, the index's conflict stages and each parent, is read too, markers and all,
    and every event of any of them is kept."""
    from vault_tools.ledger.merge import event_lines, union_ledgers
    from vault_tools.ledger.reader import open_ledger_binary

    path = settings.ledger_path
    try:
        with open_ledger_binary(path) as handle:
            text = handle.read()
    except FileNotFoundError:
        text = None
    sides = [("ledger", text)] if text is not None else []
    sides += _merge_sides(settings)
    if not sides:
        raise UsageError("no decision ledger to resolve", settings.ledger)
    resolved = union_ledgers(sides)
    changed = resolved != text
    if changed and not dry_run:
        write_atomic(path, resolved, root=settings.vault)
    found = sum(len(event_lines(data)) for _, data in sides)
    return ResolveResult(settings.ledger, found, resolved.count(b"\n"), changed)


def _merge_sides(settings: Settings) -> list[tuple[str, bytes]]:
    """The versions of the ledger git holds for a merge in progress: the conflict stages
    of the index (ours, theirs) and the merge's parents (HEAD, each MERGE_HEAD). Empty
    outside git or outside a merge."""
    repo = GitRepo.find(settings.vault)
    if repo is None:
        return []
    heads = repo.merge_heads()
    rel = repo.relative(settings.vault)
    ledger = "/".join(part for part in (rel, settings.ledger) if part)
    specs = [f":2:{ledger}", f":3:{ledger}"]
    if heads:
        specs += [f"HEAD:{ledger}", *(f"{head}:{ledger}" for head in heads)]
    blobs = repo.read_blobs(specs)
    return [(spec.rpartition(":")[0] or "index", data) for spec, data in blobs.items() if data]


def refresh_after_pull(
    settings: Settings,
) -> tuple[ResolveResult | None, RefreshResult, Remarked]:
    """What the post-merge and post-checkout hooks run: a ledger that came with conflict
    markers (committed by a clone without vt's driver) repaired first, in the working
    tree, to be committed with the next commit; then the Claim Store and the
    knowledge-base blocks brought up to date with the ledger, and every review note
    marked as the ledger says (`remark_notes`: vt's bytes only, no event appended)."""
    from vault_tools.ledger.reader import open_ledger_binary
    from vault_tools.review.marking import remark_notes
    from vault_tools.store.refresh import refresh

    repaired: ResolveResult | None = None
    try:
        with open_ledger_binary(settings.ledger_path) as ledger:
            marked = any(conflict_marker(raw.rstrip(b"\n")) for raw in ledger)
    except FileNotFoundError:
        marked = False
    if marked:
        repaired = resolve_file(settings)
    refreshed = refresh(settings)
    return repaired, refreshed, remark_notes(settings)
