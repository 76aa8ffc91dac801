"""The JSON Schemas read by every validator, not only vt's own: each passes
`check-jsonschema --check-metaschema`, every pattern is ECMA-262 (the dialect JSON Schema
specifies; no Python inline flags), the example vault's frames, drafts, properties, claims,
records and ledger events validate with the real `check-jsonschema` CLI, and the patterns
rewritten into ECMA-262 accept and reject exactly what their Python-flag versions did."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLE_VAULT, run_vt
from vault_tools.bundled import schema_dir
from vault_tools.checks.schemas import SCHEMA_FILES, Schemas
from vault_tools.integrations.dataset import DATASET_SCHEMA
from vault_tools.integrations.importer import record_of
from vault_tools.notes.note import Note, parse_note

pytest.importorskip(
    "check_jsonschema", reason="check-jsonschema is not installed (pip install '.[test]')"
)
import regress  # noqa: E402  (installed with check-jsonschema: an ECMA-262 regex engine)

SCHEMAS = Schemas()
SCHEMA_PATHS = sorted(schema_dir().glob("*.schema.json"))


def check_jsonschema(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_schema_file_is_one_vt_loads_or_writes() -> None:
    # the dataset's lines are vt's output, never read back: tests/integrations/
    # test_provenance.py holds every line of an export to its schema
    assert {p.name for p in SCHEMA_PATHS} == {*SCHEMA_FILES.values(), DATASET_SCHEMA}


def test_every_schema_passes_check_jsonschema_metaschema() -> None:
    done = check_jsonschema("--check-metaschema", *map(str, SCHEMA_PATHS))
    assert done.returncode == 0, done.stdout + done.stderr


# ---------------------------------------------------------------- the patterns


def _patterns(node: Any, where: str = "") -> list[tuple[str, str]]:
    """(JSON path, regex) of every `pattern` and `patternProperties` key in a schema."""
    found: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                found.append((f"{where}/pattern", value))
            elif key == "patternProperties" and isinstance(value, dict):
                found += [(f"{where}/patternProperties", regex) for regex in value]
            found += _patterns(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _patterns(value, f"{where}/{index}")
    return found


ALL_PATTERNS = [
    (f"{path.name}{where}", regex)
    for path in SCHEMA_PATHS
    for where, regex in _patterns(json.loads(path.read_text(encoding="utf-8")))
]

# escapes Python (or PCRE) knows and ECMA-262 does not, or reads as a plain letter
FOREIGN_ESCAPES = set("AZzGQEKRX")


def python_only_constructs(regex: str) -> list[str]:
    """What in `regex` is not ECMA-262: inline flags and `(?P…)`, comments, atomic and
    conditional groups, possessive quantifiers, `\\A`/`\\Z` and the like."""
    problems = []
    in_class = False
    i = 0
    while i < len(regex):
        char = regex[i]
        if char == "\\":
            if regex[i + 1 : i + 2] in FOREIGN_ESCAPES:
                problems.append(regex[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            i += regex[i + 1 : i + 2] == "]"  # `[]` / `[^]`: a literal ] does not close
        elif char == "(" and regex[i + 1 : i + 2] == "?":
            kind = regex[i + 2 : i + 3]
            lookbehind = regex[i + 2 : i + 4] in ("<=", "<!")
            named = kind == "<" and not lookbehind
            if kind not in (":", "=", "!") and not lookbehind and not named:
                problems.append(regex[i : i + 4])
        elif char in "*+?}" and regex[i + 1 : i + 2] == "+":
            problems.append(regex[i : i + 2])
        i += 1
    return problems


@pytest.mark.parametrize(
    "regex,found",
    [
        ("(?m)^x", ["(?m)"]),
        ("(?mi)^x", ["(?mi"]),
        ("(?P<name>x)", ["(?P<"]),
        ("(?>x)", ["(?>x"]),
        ("(?#note)", ["(?#n"]),
        ("x\\Z", ["\\Z"]),
        ("\\Ax", ["\\A"]),
        ("a*+", ["*+"]),
        ("a{2}+", ["}+"]),
        ("(?:^|\\n)x(?=y)(?!z)(?<=a)(?<!b)(?<n>c)", []),
        ("\\++[(?m)*+]", []),
    ],
)
def test_the_scanner_finds_python_only_syntax(regex: str, found: list[str]) -> None:
    assert python_only_constructs(regex) == found


@pytest.mark.parametrize("where,regex", ALL_PATTERNS, ids=[w for w, _ in ALL_PATTERNS])
def test_every_pattern_is_ecma_262(where: str, regex: str) -> None:
    assert python_only_constructs(regex) == []
    regress.Regex(regex)  # the ECMA-262 engine check-jsonschema uses
    regress.Regex(regex, "u")  # and with the flag ajv compiles patterns with


# The patterns as they were, with Python inline flags: the reference the ECMA-262 rewrites
# must decide alike. vt's validation fails an instance only when both of its engines do
# (jsonschema-rs first, python-jsonschema for the message), so "alike" is checked for that
# conjunction, and for each engine on its own where the engines agree.
OLD_HEADING_OR_FENCE = "(?m)^ {0,3}(?:#{1,6}(?:[ \\t]|$)|```|~~~)|\\r"
OLD_CLAIM_FIELD_LINE = "(?mi)^\\s*[-*]\\s*(epistemic mode|mapping status)\\s*[:：]"
RECORD = json.loads((schema_dir() / SCHEMA_FILES["record"]).read_text(encoding="utf-8"))
NEW_HEADING_OR_FENCE = RECORD["$defs"]["text"]["not"]["pattern"]
NEW_CLAIM_FIELD_LINE = RECORD["properties"]["atomic_claim"]["allOf"][1]["not"]["pattern"]
REWRITES = [
    (OLD_HEADING_OR_FENCE, NEW_HEADING_OR_FENCE),
    (OLD_CLAIM_FIELD_LINE, NEW_CLAIM_FIELD_LINE),
]


def test_optional_text_uses_the_same_rewrite() -> None:
    assert RECORD["$defs"]["optional_text"]["not"]["pattern"] == NEW_HEADING_OR_FENCE


class Engines:
    """`pattern` as vt's two validators apply it (a search anywhere in the string)."""

    def __init__(self, regex: str) -> None:
        import jsonschema_rs

        self.python = re.compile(regex)
        self.rust = jsonschema_rs.validator_for({"type": "string", "pattern": regex})

    def found(self, text: str) -> tuple[bool, bool]:
        return bool(self.python.search(text)), self.rust.is_valid(text)


ENGINES = [(Engines(old), Engines(new)) for old, new in REWRITES]
# characters the engines case-fold differently: Python folds ı and İ to i, Rust does not
PYTHON_ONLY_FOLDS = set("ıİ")
# fmt: off
PIECES = st.sampled_from([
    "epistemic mode", "Epistemic Mode", "MAPPING STATUS", "mapping status", "mapping",
    "ſtatus", "epıstemic mode", "EPİSTEMIC MODE", "maPPing StatuS",
    "#", "##", "####### ", "```", "~~~", "~~", "-", "*", ":", "：", " ", "   ", "    ",
    "\t", "\n", "\r", "\r\n", "\u2028", "\x85", "\x1c", "\ufeff", "\u3000", "x", "中文",
])
# fmt: on


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=10).map("".join))
def test_the_ecma_rewrites_decide_as_the_python_flag_patterns(text: str) -> None:
    for old, new in ENGINES:
        (old_python, old_rust), (new_python, new_rust) = old.found(text), new.found(text)
        assert (old_python and old_rust) == (new_python and new_rust), repr(text)
        assert old_rust == new_rust, repr(text)
        if not PYTHON_ONLY_FOLDS & set(text):
            assert old_python == new_python, repr(text)


def _record(**changes: Any) -> dict:
    note = parse_note((EXAMPLE_VAULT / "03_claims" / "DV1-0001.md").read_bytes(), "x.md")
    record = record_of(note)
    for key, value in changes.items():
        if key in record["source"]:
            record["source"][key] = value
        else:
            record[key] = value
    return record


BAD_RECORDS = [
    ("atomic_claim", "## a heading"),
    ("atomic_claim", "text\n#\nmore"),
    ("atomic_claim", "text\n   ### three spaces in"),
    ("atomic_claim", "text\n```\ncode"),
    ("atomic_claim", "text\n~~~"),
    ("atomic_claim", "text\rmore"),
    ("atomic_claim", "text\n- Epistemic Mode: ASSERTED"),
    ("atomic_claim", "text\n  *   MAPPING STATUS ： COMPLETE"),
    ("atomic_claim", "text\n-mapping ſtatus:x"),
    ("atomic_claim", "text\n\n\t- epistemic mode:"),
    ("evidence", "e\n## heading"),
    ("context_before", "before\n```"),
    ("context_after", "after\r\nmore"),
]
GOOD_RECORDS = [
    ("atomic_claim", "text\n#hashtag, not a heading"),
    ("atomic_claim", "text\n    # four spaces: code, not a heading"),
    ("atomic_claim", "text with ``` inside a line"),
    ("atomic_claim", "the epistemic mode: not at a line start"),
    ("atomic_claim", "text\n- epistemic modes: plural"),
    ("atomic_claim", "text\n- Mapping: Status"),
    ("evidence", "e\n####### seven is not a heading"),
    ("context_before", ""),
]


@pytest.mark.parametrize("field,value", BAD_RECORDS)
def test_records_a_note_cannot_hold_still_fail(field: str, value: str) -> None:
    assert SCHEMAS.check("record", _record()) == []
    problems = SCHEMAS.check("record", _record(**{field: value}))
    assert any("should not be valid" in p.message for p in problems), problems


@pytest.mark.parametrize("field,value", GOOD_RECORDS)
def test_records_a_note_can_hold_still_pass(field: str, value: str) -> None:
    assert SCHEMAS.check("record", _record(**{field: value})) == []


# ---------------------------------------------------------------- the example vault


def _example_notes() -> list[Note]:
    paths = sorted((EXAMPLE_VAULT / "03_claims").glob("*.md"))
    return [parse_note(p.read_bytes(), p.relative_to(EXAMPLE_VAULT).as_posix()) for p in paths]


def _instances(notes: list[Note]) -> dict[str, list[tuple[str, Any]]]:
    """schema name -> (what, instance) for every instance the example notes hold."""
    found: dict[str, list[tuple[str, Any]]] = {
        "properties": [],
        "frame": [],
        "claim": [],
        "metadata": [],
        "record": [],
    }
    for note in notes:
        name = Path(note.path).stem
        assert note.frame is not None and note.claim is not None
        found["properties"].append((name, note.properties))
        found["frame"].append((name, note.frame.data))
        record = record_of(note)
        claim = {k: record[k] for k in ("atomic_claim", "epistemic_mode", "mapping_status")}
        found["claim"].append((name, {**claim, "semantic_frame": note.frame.data}))
        found["record"].append((name, record))
        if note.drafts is not None:
            found["frame"].append((f"{name}-draft", note.drafts.frame.data))
            found["metadata"].append((f"{name}-draft", note.drafts.metadata.data))
    return found


def _ledger_events(tmp_path: Path) -> list[tuple[str, Any]]:
    """The events of the example vault's review cycle (`vt demo`: ACCEPT, REJECT, REPAIR),
    and a REVERT of the first."""
    from vault_tools.integrations.demo import run_demo

    tmp_path.mkdir()
    result = run_demo(keep=True, workdir=tmp_path)
    assert result.ok and result.kept is not None
    ledger = result.kept / "05_ledger" / "decision_ledger.jsonl"
    first = json.loads(ledger.read_text(encoding="utf-8").splitlines()[0])
    reverted = run_vt("revert", first["id"], vault=result.kept)
    assert reverted.returncode == 0, reverted.stderr
    lines = ledger.read_text(encoding="utf-8").splitlines()
    return [(f"event-{n}", json.loads(line)) for n, line in enumerate(lines, 1)]


def _write(folder: Path, instances: list[tuple[str, Any]]) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for what, instance in instances:
        path = folder / f"{what}.json"
        path.write_text(json.dumps(instance, ensure_ascii=False), encoding="utf-8")
        paths.append(str(path))
    return paths


def test_the_example_vault_validates_with_check_jsonschema(tmp_path: Path) -> None:
    instances = _instances(_example_notes())
    instances["event"] = _ledger_events(tmp_path / "demo")
    assert {e["action"] for _, e in instances["event"]} == {"ACCEPT", "REJECT", "REPAIR", "REVERT"}
    assert instances["metadata"], "the example vault holds V2 drafts"
    for name, found in instances.items():
        for what, instance in found:
            assert SCHEMAS.check(name, instance) == [], (name, what)  # vt agrees
        files = _write(tmp_path / name, found)
        schema = str(schema_dir() / SCHEMA_FILES[name])
        done = check_jsonschema("--schemafile", schema, *files)
        assert done.returncode == 0, f"{name}: {done.stdout}{done.stderr}"


@pytest.mark.parametrize("field,value", BAD_RECORDS[:10:3])
def test_check_jsonschema_rejects_what_vt_rejects(tmp_path: Path, field: str, value: str) -> None:
    files = _write(tmp_path, [("bad", _record(**{field: value}))])
    schema = str(schema_dir() / SCHEMA_FILES["record"])
    done = check_jsonschema("--schemafile", schema, *files)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "should not be valid" in done.stdout + done.stderr
