"""The specification in docs/ against the code it describes.

- docs/examples/verify_ledger.py, the standalone verifier, run as a real process on
  ledgers written by real `vt apply` / `vt revert` runs: a valid ledger passes, every kind
  of tampering fails with `LEDGER:LINE: reason`, and `vt ledger verify` agrees; a claim
  decided in two copies of a vault, merged by `vt ledger merge` and settled by `vt apply`
  gives the `supersedes` list;
- the worked example of docs/ledger.md recomputed with the code's own functions, so the
  document cannot drift from what vt writes;
- every `vt.toml` key that config.py reads is documented in docs/configuration.md.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, copy_example_vault, run_vt
from vault_tools.ledger.events import GENESIS, NOT_IN_ID, canonical, decision_id, line_hash

DOCS = REPO / "docs"
VERIFIER = DOCS / "examples" / "verify_ledger.py"
LEDGER = "05_ledger/decision_ledger.jsonl"


def verify_script(ledger: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(VERIFIER), str(ledger)], capture_output=True, text=True, timeout=60
    )


def set_property(note: Path, key: str, value: str) -> None:
    """Change one property line, as a reviewer does in Obsidian."""
    text = note.read_text(encoding="utf-8")
    changed = re.sub(rf"^{key}: .*$", f"{key}: {value}", text, count=1, flags=re.M)
    assert changed != text
    note.write_text(changed, encoding="utf-8")


@pytest.fixture(scope="module")
def decided_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the example vault after a review cycle: ACCEPT and REJECT, a change of
    mind (a REJECT superseding the ACCEPT), and a REVERT."""
    vault = copy_example_vault(tmp_path_factory.mktemp("docs") / "vault")
    (vault / "vt.toml").write_text('[review]\nactor = "bob"\n', encoding="utf-8")
    first = run_vt("apply", vault=vault)
    assert first.returncode == 0, first.stderr
    set_property(vault / "03_claims" / "DV1-0001.md", "review_action", "REJECT")
    second = run_vt("apply", vault=vault)
    assert second.returncode == 0, second.stderr
    events = [json.loads(line) for line in (vault / LEDGER).read_text("utf-8").splitlines()]
    rejected = next(e for e in events if e["claim_id"] == "DV1-0002")
    third = run_vt("revert", rejected["id"], "--comment", "rejected by mistake", vault=vault)
    assert third.returncode == 0, third.stderr
    return vault


def ledger_lines(vault: Path) -> list[str]:
    return (vault / LEDGER).read_text(encoding="utf-8").splitlines()


def test_the_cycle_wrote_every_kind_of_link(decided_vault: Path) -> None:
    events = [json.loads(line) for line in ledger_lines(decided_vault)]
    assert [e["action"] for e in events] == ["ACCEPT", "REJECT", "REJECT", "REVERT"]
    assert events[2]["supersedes"] == events[0]["id"]
    assert events[3]["reverts"] == events[1]["id"] == events[3]["supersedes"]


def test_a_valid_ledger_verifies(decided_vault: Path) -> None:
    done = verify_script(decided_vault / LEDGER)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("4 events verify")
    assert done.stderr == ""


def test_an_empty_ledger_verifies(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert verify_script(tmp_path / "empty.jsonl").returncode == 0


def test_a_missing_ledger_exits_2(tmp_path: Path) -> None:
    done = verify_script(tmp_path / "none.jsonl")
    assert done.returncode == 2 and "cannot read" in done.stderr


def test_a_torn_last_line_is_reported_not_failed(decided_vault: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "torn.jsonl"
    ledger.write_bytes((decided_vault / LEDGER).read_bytes() + b'{"action":"ACC')
    done = verify_script(ledger)
    assert done.returncode == 0
    assert f"{ledger}:5: torn last line" in done.stderr


def _edit(lines: list[str], n: int, change: Callable[[dict], None], rehash: bool) -> None:
    """Change line `n` (1-based) as a forger would: optionally recomputing its hash, so that
    only the check the forgery is aimed at can catch it."""
    ev = json.loads(lines[n - 1])
    change(ev)
    if rehash:
        ev["hash"] = line_hash(ev)
    lines[n - 1] = canonical(ev)


def _bad_json(lines: list[str]) -> None:
    lines[1] = lines[1][:40]


def _not_canonical(lines: list[str]) -> None:
    lines[1] = json.dumps(json.loads(lines[1]), ensure_ascii=False, sort_keys=True)


def _wrong_hash(lines: list[str]) -> None:
    _edit(lines, 2, lambda ev: ev.update(ts="2020-01-01T00:00:00Z"), rehash=False)


def _wrong_id(lines: list[str]) -> None:
    _edit(lines, 2, lambda ev: ev.update(comment="a comment nobody wrote"), rehash=True)


def _wrong_seq(lines: list[str]) -> None:
    _edit(lines, 3, lambda ev: ev.update(seq=7), rehash=True)


def _wrong_prev(lines: list[str]) -> None:
    _edit(lines, 2, lambda ev: ev.update(prev=GENESIS), rehash=True)


def _deleted_line(lines: list[str]) -> None:
    del lines[1]


def _swapped_lines(lines: list[str]) -> None:
    lines[1], lines[2] = lines[2], lines[1]


def _duplicated_line(lines: list[str]) -> None:
    ev = json.loads(lines[1])
    tail = json.loads(lines[-1])
    ev.update(seq=tail["seq"] + 1, prev=tail["hash"])
    ev["hash"] = line_hash(ev)
    lines.append(canonical(ev))


def _dangling_supersedes(lines: list[str]) -> None:
    def point_away(ev: dict) -> None:
        ev["supersedes"] = "sha256:" + "1" * 64
        ev["id"] = decision_id(ev)

    _edit(lines, 3, point_away, rehash=True)


TAMPERINGS: dict[str, tuple[Callable[[list[str]], None], int, str]] = {
    # name: (the tampering, the line reported first, what the reason says)
    "bad-json": (_bad_json, 2, "not valid JSON"),
    "not-canonical": (_not_canonical, 2, "not canonical JSON"),
    "wrong-hash": (_wrong_hash, 2, "hash mismatch"),
    "wrong-id": (_wrong_id, 2, "id mismatch"),
    "wrong-seq": (_wrong_seq, 3, "seq 3 expected, found 7"),
    "wrong-prev": (_wrong_prev, 2, "prev is not the hash of line 1"),
    "deleted-line": (_deleted_line, 2, "seq 2 expected, found 3"),
    "swapped-lines": (_swapped_lines, 2, "seq 2 expected, found 3"),
    "duplicated-line": (_duplicated_line, 5, "duplicate id"),
    "dangling-supersedes": (_dangling_supersedes, 3, "is not an earlier event of the same"),
}


@pytest.mark.parametrize("kind", sorted(TAMPERINGS))
def test_every_tampering_fails_with_its_line(
    decided_vault: Path, tmp_path: Path, kind: str
) -> None:
    tamper, line, reason = TAMPERINGS[kind]
    lines = ledger_lines(decided_vault)
    tamper(lines)
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text("".join(f"{text}\n" for text in lines), encoding="utf-8")
    done = verify_script(ledger)
    assert done.returncode == 1, done.stdout
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"{ledger}:{line}: ") and reason in first, done.stderr
    # vt itself agrees: the same file in a fresh vault does not verify
    vault = copy_example_vault(tmp_path / "vault")
    (vault / LEDGER).parent.mkdir(parents=True, exist_ok=True)
    (vault / LEDGER).write_bytes(ledger.read_bytes())
    assert run_vt("ledger", "verify", vault=vault).returncode == 3


def test_crlf_line_endings_fail(decided_vault: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "crlf.jsonl"
    ledger.write_bytes((decided_vault / LEDGER).read_bytes().replace(b"\n", b"\r\n"))
    done = verify_script(ledger)
    assert done.returncode == 1
    assert done.stderr.startswith(f"{ledger}:1: CRLF line ending")
    assert "hash mismatch" not in done.stderr  # the lines are otherwise intact


def test_the_verifier_is_small_and_standard_library_only() -> None:
    source = VERIFIER.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 60
    modules = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add((node.module or "").split(".")[0])
    assert modules and modules <= set(sys.stdlib_module_names), modules


def test_the_verifier_states_the_codes_rules() -> None:
    namespace: dict = {}
    exec(
        compile(
            VERIFIER.read_text(encoding="utf-8").split("\nif __name__")[0], str(VERIFIER), "exec"
        ),
        namespace,
    )
    assert namespace["GENESIS"] == GENESIS
    assert namespace["NOT_IN_ID"] == set(NOT_IN_ID)


@pytest.fixture(scope="module")
def settled_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two copies of a vault decide DV1-0001 differently (REJECT here, a REVERT of its
    ACCEPT there), their ledgers are merged by `vt ledger merge` as git's driver would,
    and `vt apply` settles the claim with an event superseding both heads."""
    root = tmp_path_factory.mktemp("heads")
    ours = copy_example_vault(root / "ours")
    (ours / "vt.toml").write_text('[review]\nactor = "bob"\n', encoding="utf-8")
    assert run_vt("apply", vault=ours).returncode == 0
    theirs = root / "theirs"
    shutil.copytree(ours, theirs, ignore=shutil.ignore_patterns(".vt"))
    base = (ours / LEDGER).read_bytes()
    (root / "base.jsonl").write_bytes(base)
    set_property(ours / "03_claims" / "DV1-0001.md", "review_action", "REJECT")
    assert run_vt("apply", vault=ours).returncode == 0
    accept = json.loads(base.splitlines()[0])
    assert run_vt("revert", accept["id"], vault=theirs).returncode == 0
    merged = run_vt(
        "ledger", "merge", str(root / "base.jsonl"), str(ours / LEDGER), str(theirs / LEDGER)
    )
    assert merged.returncode == 0, merged.stderr
    settle = run_vt("apply", vault=ours)
    assert settle.returncode == 0, settle.stderr
    return ours


def test_a_settling_event_lists_the_heads_it_supersedes(
    settled_vault: Path, tmp_path: Path
) -> None:
    from vault_tools.ledger import events as ledger

    if not hasattr(ledger, "supersedes_value"):
        pytest.skip("this version of vt records one superseded head per event")
    lines = ledger_lines(settled_vault)
    events = [json.loads(line) for line in lines]
    heads = sorted(e["id"] for e in events[2:4])
    assert [e["action"] for e in events] == ["ACCEPT", "REJECT", "REJECT", "REVERT", "REJECT"]
    assert events[4]["supersedes"] == heads  # the sorted list of both heads
    done = verify_script(settled_vault / LEDGER)
    assert done.returncode == 0, done.stderr
    # the same list unsorted, with a forged id and hash: vt and the script refuse it
    settle = events[4]
    settle["supersedes"] = heads[::-1]
    settle["id"] = decision_id(settle)
    settle["hash"] = line_hash(settle)
    lines[4] = canonical(settle)
    forged = tmp_path / "forged.jsonl"
    forged.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    done = verify_script(forged)
    assert done.returncode == 1
    assert f"{forged}:5: supersedes is not a sorted list" in done.stderr
    vault = copy_example_vault(tmp_path / "vault")
    (vault / LEDGER).parent.mkdir(parents=True, exist_ok=True)
    (vault / LEDGER).write_bytes(forged.read_bytes())
    assert run_vt("ledger", "verify", vault=vault).returncode == 3


# ---------------------------------------------------------------- docs/ledger.md


def _doc_events() -> list[str]:
    """The ledger lines of docs/ledger.md's worked example (those carrying a hash)."""
    text = (DOCS / "ledger.md").read_text(encoding="utf-8")
    return [
        line
        for line in text.splitlines()
        if line.startswith('{"action":') and '"hash":"sha256:' in line
    ]


def test_the_worked_example_is_what_the_code_computes(tmp_path: Path) -> None:
    text = (DOCS / "ledger.md").read_text(encoding="utf-8")
    lines = _doc_events()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    for line, ev in zip(lines, (first, second), strict=True):
        assert canonical(ev) == line
        assert line_hash(ev) == ev["hash"] and decision_id(ev) == ev["id"]
        # the intermediate texts the document shows are the code's
        id_input = canonical({k: v for k, v in ev.items() if k not in NOT_IN_ID})
        hash_input = canonical({k: v for k, v in ev.items() if k != "hash"})
        assert id_input in text and hash_input in text
        assert "sha256:" + hashlib.sha256(id_input.encode()).hexdigest() == ev["id"]
    assert (first["seq"], first["prev"], first["supersedes"]) == (1, GENESIS, None)
    assert (second["seq"], second["prev"]) == (2, first["hash"])
    assert second["supersedes"] == second["reverts"] == first["id"]
    ledger = tmp_path / "worked.jsonl"
    ledger.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    assert verify_script(ledger).returncode == 0


# ---------------------------------------------------------------- docs/configuration.md


def _config_keys() -> set[tuple[str, str]]:
    """Every (table, key) that vt.toml may hold: config.py's SPEC, which a file is checked
    against (tests/test_config.py checks that each of them changes a setting)."""
    from vault_tools.config import SPEC

    return {(table, key) for table, keys in SPEC.items() for key in keys}


def test_every_config_key_is_documented() -> None:
    from vault_tools.config import Settings

    keys = _config_keys()
    assert len(keys) >= 8  # the search above found the keys, not nothing
    doc = (DOCS / "configuration.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## `\[(\w+)\]`\n(.*?)(?=^## |\Z)", doc, flags=re.M | re.S))
    for table, key in sorted(keys):
        assert f"| `{key}` |" in sections.get(table, ""), f"[{table}] {key} is not documented"
    defaults = Settings(vault=REPO)
    for value in (defaults.claims_dir, defaults.kb_dir, defaults.ledger, *defaults.required_checks):
        assert f'"{value}"' in doc


# ---------------------------------------------------------------- links


def _prose(markdown: str) -> str:
    """`markdown` without its fenced code blocks (of three or four backticks)."""
    return re.sub(r"^(````?).*?^\1", "", markdown, flags=re.M | re.S)


def _anchors(markdown: str) -> set[str]:
    """The anchors a Markdown renderer (GitHub's rule) gives the headings of `markdown`."""
    headings = re.findall(r"^#{1,6} (.+)$", _prose(markdown), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_link_between_the_documents_resolves() -> None:
    pages = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
    checked = 0
    for page in pages:
        text = re.sub(r"`[^`\n]*`", "", _prose(page.read_text(encoding="utf-8")))
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if "://" in target:
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            assert path.exists(), f"{page.name}: broken link {target}"
            if anchor:
                assert anchor in _anchors(path.read_text(encoding="utf-8")), (
                    f"{page.name}: no heading for {target}"
                )
            checked += 1
    assert checked > 20


def test_every_reliability_guarantee_names_a_test_that_exists() -> None:
    """docs/reliability.md names the test proving each guarantee; a test renamed or
    removed must take its line in that page with it."""
    page = (DOCS / "reliability.md").read_text(encoding="utf-8")
    refs = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", page)
    assert len(refs) >= 20
    for path, name in refs:
        source = REPO / path
        assert source.is_file(), path
        if name:
            defined = {
                node.name
                for node in ast.walk(ast.parse(source.read_text("utf-8")))
                if isinstance(node, ast.FunctionDef)
            }
            assert name in defined, f"{path}::{name} is not a test"


@pytest.mark.parametrize("page", ["ledger.md", "signing.md"])
def test_every_threat_names_a_test_that_exists(page: str) -> None:
    """The tables of threats against checks name the test showing each row; a test
    renamed or removed must take its row with it."""
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index("| threat |")
    table = text[start : text.index("\n\n", start)]
    refs = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", table)
    assert len(refs) >= 3
    for path, name in refs:
        source = REPO / path
        defined = {
            node.name
            for node in ast.walk(ast.parse(source.read_text("utf-8")))
            if isinstance(node, ast.FunctionDef)
        }
        assert name in defined, f"{page}: {path}::{name} is not a test"
