#!/usr/bin/env python3
"""Write a synthetic vault of claim review notes, shaped like examples/vault's.

    python bench/synthetic.py OUT --notes 10000 [--seed 7] [--defects 0.05] [--kb 440]

The vault the benchmarks run on, written by this script alone (stdlib only, so it runs
from a clean clone). The same seed gives the same bytes. Review notes go to 03_claims/,
entity notes to 04_knowledge_base/, and 05_ledger/ holds an empty decision ledger.

Each note is drawn from a small bank of claim shapes (throughput, latency, cost, memory;
hedged or not; the claim in Chinese or English, the evidence in English), with its
entities, numbers and epistemic mode consistent with the evidence, so that review
assist stays as quiet as on a carefully extracted note. review_action and the checklist
follow the proportions of a vault in mid-review (`ACTIONS`); a quarter of the notes are
REQUEST_REPAIR with V2 drafts.

With --defects RATE, that share of the notes gets one realistic mistake (`DEFECTS`: a
typo in a property, broken JSON, an unknown enum, a missing knowledge-base note, …), and
every finding `vt validate` must report for them is listed, one per line as
`path<TAB>line<TAB>code`, in OUT.defects.tsv beside the vault.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

KB_DIR = "04_knowledge_base"
LEDGER = "05_ledger/decision_ledger.jsonl"

# review_action -> weight: most notes wait, a quarter ask for a repair
ACTIONS = {"PENDING": 45, "REQUEST_REPAIR": 25, "APPROVE": 20, "REJECT": 7, "APPROVE_REPAIR": 3}
CHECKS = ("check_source_claim", "check_claim_frame", "check_entity_mapping", "check_epistemic_mode")
REVIEWERS = ("alice", "bob", "陳怡君", "mark.t")
COMMENTS = ("", "", "", "數字與原文一致", "label 需對照 KB", "operator should be APPROX_EQUAL")

# (title, alias): the knowledge base's fixed part; numbered systems fill the rest
CONCEPTS = [
    ("Prefill", "prefill"),
    ("Decode", "decode step"),
    ("Speculative Decoding", "speculative decoding"),
    ("Multi-Token Prediction", "MTP"),
    ("KV Cache", "kv cache"),
    ("Draft Model", "drafter"),
    ("Target Model", "main model"),
    ("EAGLE-3", "eagle3"),
    ("DFlash", "dflash"),
    ("DSpark", "dspark"),
    ("Memory Bandwidth", "HBM bandwidth"),
    ("Batch Size", "batch size"),
    ("Acceptance Rate", "acceptance rate"),
    ("LPU", "lpu"),
    ("Tensor Parallelism", "TP"),
    ("Paged Attention", "paged attention"),
    ("Continuous Batching", "continuous batching"),
    ("Mixture of Experts", "MoE"),
    ("FP8 Quantization", "FP8"),
    ("Block Verification", "block verification"),
]
FAMILIES = ("Accelerator", "Drafter", "Serving Stack", "Kernel", "Cluster")
SOURCES = (
    ("開啟完整 SA 文章", "https://example.org/sa/{}", "Speculative Decoding"),
    ("Devoured digest", "https://devoured.fyi/{}", "Deep dive"),
    ("InferenceX notes", "https://example.org/ix/{}", "Multi Token Prediction (MTP)"),
)
FILLER = (
    "The measurements were taken on a single node with eight accelerators.",
    "Each configuration was run five times and the median is reported.",
    "The serving stack keeps the KV cache resident in device memory.",
    "Requests arrive at a fixed rate and prompts average two thousand tokens.",
    "Token generation is memory-bound at small batch sizes.",
    "The verification pass runs on the target model once per step.",
    "All systems used the same prompts and the same sampling settings.",
    "Source: SemiAnalysis",
)
Entity = tuple[str, str]  # (knowledge-base title, the label the claim uses)


@dataclass
class Claim:
    """One claim drawn from the bank: the texts a note is written from."""

    evidence: str
    claim: str
    expression: str  # the frame's comparison_expression: a part of the claim
    entities: list[tuple[str, str]]  # (title, label as the claim writes it)
    metric: str
    operator: str
    numbers: list[str]
    condition: str | None
    mode: str


def _shape_throughput(rng: random.Random, a: Entity, b: Entity) -> Claim:
    x, n = f"{rng.randrange(12, 40) / 10:g}", str(rng.choice((8, 16, 32, 64, 128)))
    claim = f"在 batch size {n} 下，{a[1]} 的 throughput 是 {b[1]} 的 {x} 倍。"
    return Claim(
        f"At batch size {n}, {a[0]} delivered {x}x the throughput of {b[0]} on the same hardware.",
        claim,
        f"{a[1]} 的 throughput 是 {b[1]} 的 {x} 倍",
        [a, b],
        "THROUGHPUT",
        "GREATER_THAN",
        [x, n],
        f"batch size {n}",
        "ASSERTED",
    )


def _shape_latency(rng: random.Random, a: Entity, b: Entity) -> Claim:
    k, n = str(rng.choice((2, 4, 8))), str(rng.choice((1024, 2048, 4096, 8192)))
    # the claim names its metric ("latency cost"), as the source does: a bare "costs"
    # would say a price, and the frame's LATENCY_COST would not be the claim's
    claim = (
        f"For a context of {n} tokens, verifying {k} draft tokens on {a[1]} has a latency "
        f"cost of roughly one decode step of {b[1]}."
    )
    return Claim(
        f"For a decoding step of context {n} tokens, adding {k} tokens during the forward "
        f"pass of {a[0]} marginally increases the latency: verifying them has a latency cost "
        f"of roughly one decode step of {b[0]}.",
        claim,
        f"verifying {k} draft tokens on {a[1]} has a latency cost of roughly one decode step "
        f"of {b[1]}",
        [a, b],
        "LATENCY_COST",
        "APPROX_EQUAL",
        [k, n],
        f"context of {n} tokens",
        "ASSERTED",
    )


def _shape_cost(rng: random.Random, a: Entity, b: Entity) -> Claim:
    p = str(rng.randrange(10, 60))
    claim = f"若 acceptance rate 維持不變，{a[1]} 相比 {b[1]} 可能讓每 token 成本降低 {p}%。"
    return Claim(
        f"If the acceptance rate holds, {a[0]} could cut the cost per token by {p}% "
        f"compared with {b[0]}, though this depends on the workload.",
        claim,
        f"{a[1]} 相比 {b[1]} 可能讓每 token 成本降低 {p}%",
        [a, b],
        "COST",
        "LESS_THAN",
        [f"{p}%"],
        "acceptance rate 維持不變",
        "HYPOTHETICAL",
    )


def _shape_bandwidth(rng: random.Random, a: Entity, b: Entity) -> Claim:
    g = str(rng.randrange(2, 9))
    claim = (
        f"{a[1]} 在 decode 階段受限於 memory bandwidth，其效能與 {b[1]} 相近，差距在 {g}% 以內。"
    )
    return Claim(
        f"During decode, {a[0]} is bound by memory bandwidth; its performance stays within "
        f"{g}% of {b[0]}.",
        claim,
        f"{a[1]} 的效能與 {b[1]} 相近，差距在 {g}% 以內",
        [a, b, ("Memory Bandwidth", "memory bandwidth")],
        "COMPUTE_PERFORMANCE",
        "APPROX_EQUAL",
        [f"{g}%"],
        None,
        "ASSERTED",
    )


def _shape_unspecified(rng: random.Random, a: Entity, b: Entity) -> Claim:
    claim = (
        f"在高 batch size 下，{a[1]} 帶來的額外 verification 工作未必能塞進閒置 compute，"
        f"效益可能小於 {b[1]}。"
    )
    return Claim(
        f"This extra verification work from {a[0]} may not fit cleanly into slack, resulting "
        f"in smaller improvements than {b[0]} at high batch sizes.",
        claim,
        f"{a[1]} 帶來的額外 verification 工作未必能塞進閒置 compute",
        [a, b],
        "COMPUTE_PERFORMANCE",
        "UNSPECIFIED_COMPARISON",
        [],
        "高 batch size 下",
        "HYPOTHETICAL",
    )


# shape -> weight
SHAPES: dict[Callable[[random.Random, Entity, Entity], Claim], int] = {
    _shape_throughput: 4,
    _shape_latency: 2,
    _shape_cost: 2,
    _shape_bandwidth: 2,
    _shape_unspecified: 1,
}


@dataclass
class Note:
    """A note being written: its lines, and the findings planted in it so far."""

    path: str
    claim_id: str
    lines: list[str]
    planted: list[tuple[int, str]] = field(default_factory=list)  # (1-based line, code)

    def index(self, prefix: str, start: int = 0) -> int:
        """The 0-based index of the first line from `start` that starts with `prefix`."""
        return next(i for i in range(start, len(self.lines)) if self.lines[i].startswith(prefix))


def kb_titles(count: int) -> list[str]:
    """The knowledge base's note titles: the concepts, then numbered systems."""
    titles = [title for title, _ in CONCEPTS]
    number = 0
    while len(titles) < count:
        titles.append(f"{FAMILIES[number % len(FAMILIES)]} {chr(65 + number // 500 % 26)}{number}")
        number += 1
    return titles[:count]


def _frame_json(claim: Claim, operator: str) -> list[str]:
    frame = {
        "comparison_expression": claim.expression,
        "entities": [{"id": f"{KB_DIR}/{t}", "label": label} for t, label in claim.entities],
        "frame_type": "COMPARISON",
        "metric": claim.metric,
        "operator": operator,
        "qualifiers": {
            "condition_text": claim.condition,
            "numeric_mentions": claim.numbers,
            "temporal_mentions": [],
        },
    }
    return ["```json", *json.dumps(frame, ensure_ascii=False, indent=2).split("\n"), "```"]


def _properties(rng: random.Random, claim_id: str, action: str) -> list[str]:
    if action in ("APPROVE", "APPROVE_REPAIR"):
        checks = [True] * 4
    elif action == "REQUEST_REPAIR":
        checks = [True] * 4
        checks[rng.randrange(1, 4)] = False  # the part the repair fixes
    elif action == "REJECT" or rng.random() < 0.3:
        checks = [rng.random() < 0.6 for _ in CHECKS]  # a review under way
    else:
        checks = [False] * 4
    decided = action != "PENDING"
    reviewer = rng.choice(REVIEWERS) if decided else ""
    comment = rng.choice(COMMENTS) if decided else ""
    return [
        "---",
        f"claim_id: {claim_id}",
        f"review_action: {action}",
        "review_state: NEW",
        *(f"{key}: {str(value).lower()}" for key, value in zip(CHECKS, checks, strict=True)),
        f'reviewer: "{reviewer}"',
        f'review_comment: "{comment}"',
        "tags: [claim-review]" if rng.random() < 0.9 else "tags: [claim-review, inference]",
        "---",
    ]


def _mapping_rows(claim: Claim, rng: random.Random) -> list[str]:
    linked = rng.random() < 0.85  # some pipelines write the target without [[ ]]
    rows = []
    for k, (title, label) in enumerate(claim.entities):
        target = f"[[{KB_DIR}/{title}]]" if linked else f"{KB_DIR}/{title}"
        rows.append(f"| comparison_entity_{k} | {label} | {target} |")
    return rows


def _drafts(claim: Claim, rng: random.Random) -> list[str]:
    """The V2 Draft section: the frame's comparison_expression widened to the whole claim.
    The draft stays as faithful as the note (its operator the claim's: another one would
    be a slip review assist rightly warns about)."""
    widened = replace(claim, expression=claim.claim.rstrip("。."))
    status = "COMPLETE" if rng.random() < 0.7 else "PARTIAL"
    metadata = {"epistemic_mode": claim.mode, "mapping_status": status}
    return [
        "## ⑤ V2 Draft（需要修正時直接編輯）",
        "> [!tip] Inline repair",
        "> 只編輯以下三個 Draft 區塊。完成後將`review_action`設為`REQUEST_REPAIR`，"
        "再手動執行 Repair Preview。",
        "",
        "### V2 Atomic Claim Draft",
        claim.claim,
        "",
        "### V2 Semantic Frame Draft",
        *_frame_json(widened, claim.operator),
        "",
        "### V2 Revision Metadata Draft",
        "```json",
        *json.dumps(metadata, ensure_ascii=False, indent=2).split("\n"),
        "```",
        "",
    ]


HUMAN_REVIEW = [
    "請在 Properties 逐項確認：",
    "- 原文 → Atomic Claim 是否忠實",
    "- Atomic Claim → Semantic Frame 是否忠實",
    "- Canonical Entity mapping 是否正確",
    "- Epistemic mode 是否保留原文語氣",
    "- 最後選擇 `review_action`",
    "",
    "> [!info] Review state",
    "> Markdown 內文不是正式 approval。"
    "只有 Apply bridge 寫入的 Decision Ledger event 才是正式決策。",
]


def _entity(rng: random.Random, kb: list[str]) -> Entity:
    """A concept (every other pick: they are the notes most claims name) or any KB note;
    a concept is named by its alias a third of the time."""
    if rng.random() < 0.5:
        title, alias = rng.choice(CONCEPTS)
        return (title, alias if rng.random() < 0.33 else title)
    title = rng.choice(kb)
    return (title, title)


def review_note(rng: random.Random, number: int, kb: list[str]) -> Note:
    """The `number`th review note, every entity in `kb`."""
    claim_id = f"SA{260300 + number // 400}R-{number % 400 + 1:04d}"
    a, b = _entity(rng, kb), _entity(rng, kb)
    while b[0] == a[0]:
        b = _entity(rng, kb)
    claim = rng.choices(list(SHAPES), list(SHAPES.values()))[0](rng, a, b)
    if len({t for t, _ in claim.entities}) < len(claim.entities):
        claim.entities = claim.entities[:2]  # "Memory Bandwidth" drawn as a or b
    action = rng.choices(list(ACTIONS), list(ACTIONS.values()))[0]
    title, url, section = rng.choice(SOURCES)
    filler = rng.sample(FILLER, 3)
    status = "COMPLETE" if rng.random() < 0.8 else "PARTIAL"
    lines = [
        *_properties(rng, claim_id, action),
        f"# {claim_id}",
        "",
        "## ① SA Source",
        f"- Source: [{title}]({url.format(number // 400)})",
        f"- Section: {section}",
        f"- Line hint: {rng.randrange(1, 900)}",
        "",
        "### Context Before",
        filler[0],
        "",
        "### Evidence",
        f"{filler[1]} {claim.evidence}" if rng.random() < 0.5 else claim.evidence,
        "",
        "### Context After",
        filler[2],
        "",
        "## ② Atomic Claim",
        claim.claim,
        "",
        f"- Epistemic Mode: {claim.mode}",
        f"- Mapping Status: {status}",
        "",
        "## ③ Semantic Frame",
        *_frame_json(claim, claim.operator),
        "",
        "## ④ Canonical Entity Mapping",
        "| Role | Surface Label | Canonical Target |",
        "|---|---|---|",
        *_mapping_rows(claim, rng),
        "",
    ]
    repairing = action in ("REQUEST_REPAIR", "APPROVE_REPAIR")
    if repairing:
        lines += _drafts(claim, rng)
    lines += ["## ⑥ Human Review" if repairing else "## ⑤ Human Review", *HUMAN_REVIEW]
    return Note(f"03_claims/{claim_id}.md", claim_id, lines)


# --- planted defects: each edits the note's lines and records what vt must report ------


def _retarget_first_entity(note: Note, change: Callable[[str], str]) -> int:
    """Point the frame's first entity and its mapping row at `change(target)`; the
    0-based index of the entity's `"id"` line."""
    start = note.index("## ③")
    i = note.index('      "id": ', start)
    target = note.lines[i].split('"')[3]
    note.lines[i] = note.lines[i].replace(target, change(target))
    row = note.index("| comparison_entity_0 ", start)
    role, label, cell = note.lines[row].strip("| ").split(" | ")
    note.lines[row] = f"| {role} | {label} | {cell.replace(target, change(target))} |"
    return i


def _unresolved_when_complete(note: Note) -> None:
    """What an entity that does not resolve adds in a note whose mapping is COMPLETE."""
    status = note.index("- Mapping Status: ")
    if note.lines[status].endswith("COMPLETE"):
        note.planted.append((status + 1, "mapping-complete-unresolved"))


def _typo_in_action(note: Note) -> None:
    i = note.index("review_action: ")
    note.lines[i] = "review_action: APPROVED"
    note.planted.append((i + 1, "properties-schema"))


def _duplicate_key(note: Note) -> None:
    i = note.index("review_state: ")
    note.lines.insert(i + 1, "review_action: APPROVE")
    note.planted.append((i + 2, "yaml-duplicate-key"))


def _unknown_metric(note: Note) -> None:
    i = note.index('  "metric": ', note.index("## ③"))
    note.lines[i] = '  "metric": "SPEED",'
    note.planted.append((i + 1, "frame-schema"))


def _broken_json(note: Note) -> None:
    i = note.index('  "frame_type": ', note.index("## ③"))
    note.lines[i] = note.lines[i].rstrip(",")  # a member without its comma
    note.planted.append((i + 2, "json-syntax"))


def _missing_kb_note(note: Note) -> None:
    i = _retarget_first_entity(note, lambda target: f"{target} (old name)")
    note.planted.append((i + 1, "kb-target-missing"))
    _unresolved_when_complete(note)


def _escaping_target(note: Note) -> None:
    i = _retarget_first_entity(note, lambda target: target.replace("/", "/../../", 1))
    note.planted.append((i + 1, "kb-target-escape"))
    _unresolved_when_complete(note)


def _empty_claim(note: Note) -> None:
    i = note.index("## ② Atomic Claim")
    note.lines[i + 1] = ""
    note.planted.append((i + 1, "claim-empty"))


def _unknown_mode(note: Note) -> None:
    i = note.index("- Epistemic Mode: ")
    note.lines[i] = "- Epistemic Mode: CERTAIN"
    note.planted.append((i + 1, "claim-field"))


def _mode_slip(note: Note) -> None:
    """The reviewer's commonest slip, a warning of review assist: the mode flipped."""
    i = note.index("- Epistemic Mode: ")
    if note.lines[i].endswith("HYPOTHETICAL"):
        note.lines[i], code = "- Epistemic Mode: ASSERTED", "assist-mode-hedged"
    else:
        note.lines[i], code = "- Epistemic Mode: HYPOTHETICAL", "assist-mode-unhedged"
    note.planted.append((i + 1, code))


def _mismatched_label(note: Note) -> None:
    i = note.index("| comparison_entity_0 ")
    role, label, target = note.lines[i].strip("| ").split(" | ")
    note.lines[i] = f"| {role} | {label} v2 | {target} |"
    entity = note.index("    {", note.index("## ③"))  # the frame's side: the entity's object
    note.planted += [(entity + 1, "mapping-mismatch"), (i + 1, "mapping-mismatch")]


DEFECTS: dict[str, Callable[[Note], None]] = {
    "typo_in_action": _typo_in_action,
    "duplicate_key": _duplicate_key,
    "unknown_metric": _unknown_metric,
    "broken_json": _broken_json,
    "missing_kb_note": _missing_kb_note,
    "escaping_target": _escaping_target,
    "empty_claim": _empty_claim,
    "unknown_mode": _unknown_mode,
    "mismatched_label": _mismatched_label,
    "mode_slip": _mode_slip,
}


def _kb_note(title: str, alias: str | None) -> str:
    aliases = f"aliases: [{alias}]\n" if alias else ""
    return f"---\n{aliases}tags: [entity]\n---\n# {title}\n\nA canonical entity of the vault.\n"


def make_vault(
    target: Path, notes: int, *, seed: int = 7, defects: float = 0.0, kb: int | None = None
) -> Path:
    """A synthetic vault of `notes` review notes at `target` (see the module's docstring).

    With `defects` > 0 the planted findings go to `<target>.defects.tsv`."""
    rng = random.Random(seed)
    titles = kb_titles(max(len(CONCEPTS), kb if kb is not None else 40 + notes // 25))
    aliases = dict(CONCEPTS)
    for folder in (".obsidian", "03_claims", KB_DIR, Path(LEDGER).parent.as_posix()):
        (target / folder).mkdir(parents=True, exist_ok=True)
    (target / ".obsidian" / "app.json").write_text("{}\n", encoding="utf-8")
    (target / LEDGER).touch()
    for title in titles:
        (target / KB_DIR / f"{title}.md").write_text(
            _kb_note(title, aliases.get(title)), encoding="utf-8"
        )
    planted: list[str] = []
    kinds = list(DEFECTS.values())
    for number in range(notes):
        note = review_note(rng, number, titles)
        if defects and rng.random() < defects:
            rng.choice(kinds)(note)
            planted += [f"{note.path}\t{line}\t{code}" for line, code in note.planted]
        (target / note.path).write_text("\n".join(note.lines) + "\n", encoding="utf-8")
    if defects:
        tsv = target.with_name(f"{target.name}.defects.tsv")
        tsv.write_text("".join(f"{row}\n" for row in planted), encoding="utf-8")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the vault folder to write")
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--defects", type=float, default=0.0, help="share of defective notes")
    parser.add_argument("--kb", type=int, default=None, help="entity notes (40 + notes/25)")
    args = parser.parse_args()
    make_vault(args.out, args.notes, seed=args.seed, defects=args.defects, kb=args.kb)
    print(f"wrote {args.notes} review notes to {args.out}")


if __name__ == "__main__":
    main()
