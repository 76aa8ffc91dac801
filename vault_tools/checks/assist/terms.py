"""Review assist, the frame's closed fields against the claim's words (claim → frame):
an `operator` that says the opposite of the claim's comparison, a `metric` the claim is
not about.
"""

from __future__ import annotations

from vault_tools.checks.assist.cues import ALIKE, FALL, RISE, cues
from vault_tools.checks.assist.meaning import claim_ranking, entity_names
from vault_tools.checks.assist.reading import (
    claim_compares,
    claim_denial,
    claim_directions,
    claim_metrics,
)
from vault_tools.checks.claim_versions import ClaimVersion, block_line
from vault_tools.checks.context import CheckContext
from vault_tools.findings import Finding, warning
from vault_tools.notes.note import Note

_OPERATOR_OF = {RISE: "GREATER_THAN", FALL: "LESS_THAN", ALIKE: "APPROX_EQUAL"}
_METRICS = frozenset(
    ("LATENCY_COST", "COMPUTE_PERFORMANCE", "THROUGHPUT", "ACCEPTANCE_RATE", "COST")
)


def term_checks(note: Note, version: ClaimVersion, ctx: CheckContext) -> list[Finding]:
    return [*_operator(note, version, ctx), *_metric(note, version)]


def _operator(note: Note, version: ClaimVersion, ctx: CheckContext) -> list[Finding]:
    frame, claim = version.frame.data, version.claim.value
    operator = frame.get("operator")
    if operator not in _OPERATOR_OF.values() or claim_denial(claim, explicit=True):
        return []  # "不比 … 快" turns the words round; UNSPECIFIED claims nothing
    directions = claim_directions(claim, speed_counts=frame.get("metric") != "LATENCY_COST")
    expected, word = _expected(version, ctx, directions)
    if expected is None or expected == operator:
        return []
    line = _member_line(version, "operator", operator)
    return [
        warning(
            note.path,
            line,
            "assist-frame-operator",
            f"{version.label}the operator is against the claim: claim: {word!r} "
            f"({expected}); operator: {operator}",
        )
    ]


def _expected(
    version: ClaimVersion, ctx: CheckContext, directions: dict[str, str]
) -> tuple[str | None, str]:
    """The operator the claim's words call for, and the word that calls for it; None
    when they call for two (更高 … 約等於) or none."""
    if len(directions) != 1:
        return None, ""
    [(kind, word)] = directions.items()
    if kind != ALIKE and claim_compares(version.claim.value):
        keys = list(dict.fromkeys(entity["id"] for _, entity in version.entities))
        if len(keys) >= 2:
            # the frame compares its first entity with its second: "B 比 A 高" is LESS_THAN
            order = claim_ranking(version, entity_names(version, ctx))
            first, second = keys[0], keys[1]
            if (first, second) in order and (second, first) not in order:
                return "GREATER_THAN", word
            if (second, first) in order and (first, second) not in order:
                return "LESS_THAN", word
    return _OPERATOR_OF[kind], word


def _member_line(version: ClaimVersion, key: str, value: str) -> int:
    """The note line of the frame's top-level `key`: where `"key": "value"` is written,
    when it is written once (the pipeline's frames); else as block_line finds it."""
    text, member = version.frame.text, f'"{key}": "{value}"'
    at = text.find(member)
    if at < 0 or text.find(member, at + 1) >= 0:
        return block_line(version.frame, (key,), value)
    return version.frame.line + text.count("\n", 0, at)


def _metric(note: Note, version: ClaimVersion) -> list[Finding]:
    metric = version.frame.data.get("metric")
    if metric not in _METRICS or metric in cues(version.claim.value):
        return []  # a claim that names the metric itself is about it: no dict built
    named = claim_metrics(version.claim.value)
    if not named or metric in named:
        return []
    said = ", ".join(f"{word!r} ({m})" for m, word in sorted(named.items()))
    return [
        warning(
            note.path,
            _member_line(version, "metric", metric),
            "assist-frame-metric",
            f"{version.label}the metric is not the claim's: claim: {said}; metric: {metric}",
        )
    ]
