"""`vt draft` and `vt preview` through the Typer app (plain, --json, --dry-run, exit codes)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import DEFAULT_FRAME, render_drafts, render_note, run_vt
from vault_tools.cli import app

runner = CliRunner()


def vt(*args: str):
    return runner.invoke(app, list(args))


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_help_of_both_commands_has_an_example() -> None:
    for command in ("draft", "preview"):
        result = vt(command, "--help")
        assert result.exit_code == 0
        assert "Example:" in result.stdout and f"vt {command} " in result.stdout


def test_preview_plain_output_and_exit_code(example_vault: Path) -> None:
    result = vt("preview", "--vault", str(example_vault))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "03_claims/DV1-0003.md (DV1-0003): PREVIEW_READY, written" in out
    assert '  frame /operator: "UNSPECIFIED_COMPARISON" → "LESS_THAN"' in out
    assert "  frame + /entities/2: " in out
    assert "{+或 Likelihood +}" in out
    assert "03_claims/SA260324R-0125.md (SA260324R-0125): PREVIEW_READY, written" in out
    assert "  claim: 為了驗證 draft token{+，在 k 遠小於 context 的 N 個 token 時+}，" in out
    assert "2 previewed: 2 ready, 0 failed; 2 written" in result.stderr
    # a run that writes nothing says so in one line; -v lists the notes
    again = vt("preview", "--vault", str(example_vault))
    assert again.exit_code == 0 and again.stdout == ""
    assert again.stderr == (
        "2 previewed: 2 ready, 0 failed; 0 written; 2 up to date, not listed "
        "(vt preview -v lists them)\n"
    )
    listed = vt("preview", "--vault", str(example_vault), "-v")
    assert listed.exit_code == 0 and listed.stdout.count("up to date: nothing written") == 2
    assert "not listed" not in listed.stderr


def test_a_preview_with_nothing_to_do_is_one_line(example_vault: Path) -> None:
    """As a reviewer runs it, piped: the second run writes nothing and says so in one
    line on stderr; the notes it leaves out are those whose preview is up to date."""
    first = run_vt("preview", vault=example_vault, check=0)
    assert first.stdout.count(", written\n") == 2
    edit = example_vault / "03_claims/DV1-0003.md"
    text = edit.read_text(encoding="utf-8")
    at = text.index("### V2 Atomic Claim Draft")
    edit.write_text(text[:at] + text[at:].replace("並非最佳", "不是最佳", 1), encoding="utf-8")
    second = run_vt("preview", vault=example_vault, check=0)  # one note edited since
    assert second.stdout.startswith("03_claims/DV1-0003.md (DV1-0003): PREVIEW_READY, written")
    assert "SA260324R-0125" not in second.stdout
    assert second.stderr == (
        "2 previewed: 2 ready, 0 failed; 1 written; 1 up to date, not listed "
        "(vt preview -v lists them)\n"
    )
    quiet = run_vt("preview", vault=example_vault, check=0)
    assert quiet.stdout == "" and len(quiet.stderr.splitlines()) == 1
    assert quiet.stderr.startswith("2 previewed: 2 ready, 0 failed; 0 written; 2 up to date")


def test_preview_json(example_vault: Path) -> None:
    result = vt("preview", "--vault", str(example_vault), "--json")
    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    previews = {p["path"]: p for p in payload["previews"]}
    assert set(previews) == {"03_claims/DV1-0003.md", "03_claims/SA260324R-0125.md"}
    dv = previews["03_claims/DV1-0003.md"]
    assert {"path", "claim_id", "state", "findings", "changes"} <= set(dv)
    assert dv["state"] == "PREVIEW_READY" and dv["findings"] == []
    assert {
        "field": "frame",
        "op": "replace",
        "pointer": "/operator",
        "old": "UNSPECIFIED_COMPARISON",
        "new": "LESS_THAN",
    } in dv["changes"]
    assert previews["03_claims/SA260324R-0125.md"]["changes"][0]["field"] == "claim"
    # the JSON of a run that writes nothing lists every note, as before
    again = json.loads(vt("preview", "--vault", str(example_vault), "--json").stdout)
    assert [p["path"] for p in again["previews"]] == [p["path"] for p in payload["previews"]]
    assert [{**p, "written": True} for p in again["previews"]] == payload["previews"]


def test_preview_dry_run_writes_nothing(example_vault: Path) -> None:
    before = files(example_vault)
    result = vt("preview", "--vault", str(example_vault), "--dry-run")
    assert result.exit_code == 0, result.output
    # it says what it would write, and writes nothing
    assert "dry run: would write the preview into the note" in result.stdout
    assert re.search(r"; dry run: would write [1-9]\d* notes?, nothing written", result.output)
    assert files(example_vault) == before
    written = vt("preview", "--vault", str(example_vault))
    assert written.exit_code == 0 and files(example_vault) != before
    again = vt("preview", "--vault", str(example_vault), "--dry-run")
    assert "dry run: would write 0 notes, nothing written" in again.output
    assert "would write the preview" not in again.stdout


def test_preview_failure_exits_1_with_path_and_line(make_vault) -> None:
    broken = json.dumps(DEFAULT_FRAME, indent=2).replace('"COMPARISON",', '"COMPARISON"', 1)
    vault = make_vault(
        {"R.md": render_note(review_action="REQUEST_REPAIR", drafts=render_drafts(frame=broken))}
    )
    result = vt("preview", "--vault", str(vault), "--json")
    assert result.exit_code == 1
    [entry] = json.loads(result.stdout)["previews"]
    assert entry["state"] == "PREVIEW_FAILED"
    assert [(f["code"], f["severity"]) for f in entry["findings"]] == [("json-syntax", "error")]
    # written by the run above: up to date now, the failure is counted, -v shows it
    quiet = vt("preview", "--vault", str(vault))
    assert quiet.exit_code == 1 and quiet.stdout == ""
    assert "1 previewed: 0 ready, 1 failed; 0 written; 1 up to date" in quiet.stderr
    plain = vt("preview", "--vault", str(vault), "--verbose")
    assert plain.exit_code == 1
    line = entry["findings"][0]["line"]
    assert f"03_claims/R.md:{line}: json-syntax: " in plain.stdout


def test_nothing_to_preview(make_vault) -> None:
    vault = make_vault({"A.md": render_note(review_action="PENDING")})
    result = vt("preview", "--vault", str(vault))
    assert result.exit_code == 0
    assert result.stdout.strip() == (
        "nothing to preview: no note is marked review_action: REQUEST_REPAIR"
    )
    as_json = vt("preview", "--vault", str(vault), "--json")
    assert as_json.exit_code == 0 and json.loads(as_json.stdout) == {"previews": []}


def test_preview_errors_for_bad_paths(example_vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "x.md"
    outside.write_text("# x\n", encoding="utf-8")
    result = vt(
        "preview",
        "--vault",
        str(example_vault),
        "--json",
        str(outside),
        str(example_vault / "03_claims/DV1-0001.md"),
    )
    assert result.exit_code == 1
    codes = {
        p["path"]: [f["code"] for f in p["findings"]] for p in json.loads(result.stdout)["previews"]
    }
    assert codes == {
        str(outside): ["path-outside-vault"],
        "03_claims/DV1-0001.md": ["drafts-missing"],
    }


def test_unmarked_note_given_explicitly_is_printed_not_written(example_vault: Path) -> None:
    path = example_vault / "03_claims/DV1-0003.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            "review_action: REQUEST_REPAIR", "review_action: APPROVE_REPAIR"
        ),
        encoding="utf-8",
    )
    before = files(example_vault)
    result = vt("preview", "--vault", str(example_vault), str(path))
    assert result.exit_code == 0
    assert "never re-previewed: shown, not written" in result.stdout
    assert '/operator: "UNSPECIFIED_COMPARISON" → "LESS_THAN"' in result.stdout
    assert files(example_vault) == before


def test_draft_then_preview(example_vault: Path) -> None:
    path = example_vault / "03_claims/IX2-0328.md"
    dry = vt("draft", "--vault", str(example_vault), "--dry-run", str(path))
    assert dry.exit_code == 0 and "### V2 Semantic Frame Draft" in dry.stdout
    assert "V2 Draft" not in path.read_text(encoding="utf-8")
    done = vt("draft", "--vault", str(example_vault), "--json", str(path))
    assert done.exit_code == 0
    assert json.loads(done.stdout) == {
        "notes": [
            {
                "path": "03_claims/IX2-0328.md",
                "claim_id": "IX2-0328",
                "drafted": True,
                "written": True,
                "findings": [],
            }
        ],
        "drafted": 1,
        "errors": 0,
    }
    again = vt("draft", "--vault", str(example_vault), str(path))
    assert again.exit_code == 1 and "drafts-exist" in again.stdout
    # fresh drafts repair nothing yet: the preview fails and says so
    shown = vt("preview", "--vault", str(example_vault), str(path))
    assert shown.exit_code == 1 and "no changes: the drafts equal V1" in shown.stdout
    assert "repair-unchanged: the V2 drafts equal V1: there is nothing to repair" in shown.stdout
    assert "not REQUEST_REPAIR: shown, not written" in shown.stdout


def test_draft_requires_a_note_and_refuses_outside_paths(
    example_vault: Path, tmp_path: Path
) -> None:
    assert vt("draft", "--vault", str(example_vault)).exit_code == 2
    result = vt("draft", "--vault", str(example_vault), str(tmp_path / "x.md"))
    assert result.exit_code == 1 and "path-outside-vault" in result.stdout


def test_rich_output_highlights_removed_and_added_characters(example_vault: Path) -> None:
    from rich.console import Console

    from tests.conftest import settings_for
    from vault_tools.cli.output import Reporter
    from vault_tools.cli.preview import _show
    from vault_tools.review.preview import preview_vault

    report = preview_vault(settings_for(example_vault), dry_run=True)
    result = next(p for p in report.previews if p.claim_id == "DV1-0003")
    buffer = io.StringIO()
    reporter = Reporter(out=buffer)
    reporter.mode = "rich"
    reporter._console = Console(
        file=buffer, force_terminal=True, color_system="standard", width=200
    )
    _show(reporter, result)
    out = buffer.getvalue()
    assert "\x1b[1;32m或 Likelihood \x1b[0m" in out  # added: bold green
    assert "/operator" in out and "LESS_THAN" in out


def test_rich_output_strikes_removed_characters_in_red() -> None:
    from rich.console import Console

    from vault_tools.cli.output import Reporter
    from vault_tools.cli.preview import _show
    from vault_tools.review.diff import Change
    from vault_tools.review.preview import PREVIEW_READY, PreviewResult

    result = PreviewResult(
        "03_claims/R.md",
        "R",
        state=PREVIEW_READY,
        changes=[Change("claim", "replace", "", "約等於", "低於")],
        claim_segments=[("delete", "約等"), ("insert", "低"), ("equal", "於")],
    )
    buffer = io.StringIO()
    reporter = Reporter(out=buffer)
    reporter.mode = "rich"
    reporter._console = Console(file=buffer, force_terminal=True, color_system="standard")
    _show(reporter, result)
    assert "\x1b[9;31m約等\x1b[0m\x1b[1;32m低\x1b[0m於" in buffer.getvalue()


def test_draft_takes_a_vault_relative_path_from_any_folder(
    example_vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the README shows it: `vt draft 03_claims/X.md --vault V`, run from elsewhere."""
    note = sorted((example_vault / "03_claims").glob("*.md"))[0]
    relative = note.relative_to(example_vault).as_posix()
    monkeypatch.chdir(tmp_path)
    result = vt("draft", relative, "--vault", str(example_vault), "--dry-run")
    assert "path-outside-vault" not in result.stdout, result.stdout
    assert relative in result.stdout
