"""Agreement between reviewers on nominal verdicts: Cohen's kappa for two reviewers and
Krippendorff's alpha for any number, with missing values (docs/stats.md).

Pure functions on plain values; exact (`Fraction`) so a test can compare a planted
agreement with `==`, and the caller turns the result into a float to print.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from fractions import Fraction


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> Fraction | None:
    """Cohen's kappa of two raters, from each unit's (first rater's, second rater's)
    value: (p_o - p_e) / (1 - p_e). None when it is undefined: no units, or chance
    agreement is certain (both raters gave one and the same value throughout)."""
    n = len(pairs)
    if n == 0:
        return None
    observed = Fraction(sum(1 for a, b in pairs if a == b), n)
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    expected = Fraction(sum(first[c] * second[c] for c in first), n * n)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def krippendorff_alpha(units: Iterable[Sequence[Hashable]]) -> Fraction | None:
    """Krippendorff's alpha, nominal metric, from each unit's values (one per rater who
    rated it, any number of raters, missing values simply absent).

    Units with fewer than two values are not pairable and drop out. Through the
    coincidence matrix: alpha = 1 - (n - 1) * sum(o_ck, c != k) / sum(n_c * n_k, c != k).
    None when undefined: fewer than two pairable values, or one value only (no expected
    disagreement)."""
    disagree = Fraction(0)  # sum of o_ck over c != k
    totals: Counter[Hashable] = Counter()  # n_c
    for values in units:
        m = len(values)
        if m < 2:
            continue
        counts = Counter(values)
        totals.update(counts)
        # ordered pairs of different values within the unit, each weighted 1 / (m - 1)
        pairs = m * m - sum(c * c for c in counts.values())
        disagree += Fraction(pairs, m - 1)
    n = sum(totals.values())
    if n < 2:
        return None
    expected = n * n - sum(c * c for c in totals.values())  # sum of n_c * n_k, c != k
    if expected == 0:
        return None
    return 1 - (n - 1) * disagree / expected
