"""Cohen's kappa and Krippendorff's alpha against hand-computed textbook examples."""

from __future__ import annotations

from fractions import Fraction

from vault_tools.review.agreement import cohen_kappa, krippendorff_alpha

# Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011), the worked example
# with missing data: 4 observers, 12 units, values 1-5, "." where an observer gave none.
# Nominal alpha = 0.743 (the paper's figure); exactly 113/152 through the coincidence
# matrix (n = 40 pairable values, unit 12 has one value and drops out).
KRIPPENDORFF = [
    "1 2 3 3 2 1 4 1 2 . . .",
    "1 2 3 3 2 2 4 1 2 5 . 3",
    ". 3 3 3 2 3 4 2 2 5 1 .",
    "1 2 3 3 2 4 4 1 2 5 1 .",
]


def units_of(rows: list[str]) -> list[list[str]]:
    columns = zip(*(row.split() for row in rows), strict=True)
    return [[v for v in column if v != "."] for column in columns]


def test_krippendorffs_worked_example() -> None:
    alpha = krippendorff_alpha(units_of(KRIPPENDORFF))
    assert alpha == Fraction(113, 152)
    assert round(float(alpha), 3) == 0.743


def test_alpha_drops_units_with_one_value() -> None:
    units = units_of(KRIPPENDORFF)
    assert units[-1] == ["3"]  # unit 12: one observer only
    assert krippendorff_alpha(units[:-1]) == krippendorff_alpha(units)


def test_alpha_of_perfect_agreement_is_one_and_of_one_value_undefined() -> None:
    assert krippendorff_alpha([["a", "a"], ["b", "b", "b"]]) == 1
    assert krippendorff_alpha([["a", "a"], ["a", "a"]]) is None
    assert krippendorff_alpha([["a"], []]) is None


def test_alpha_of_two_raters_on_four_units_by_hand() -> None:
    # A: a a b b, B: a b b b. Coincidences: o_aa 2, o_ab = o_ba 1, o_bb 4; n_a 3, n_b 5,
    # n 8. alpha = 1 - (n - 1) * (o_ab + o_ba) / (2 * n_a * n_b) = 1 - 7 * 2 / 30 = 8/15
    units = [["a", "a"], ["a", "b"], ["b", "b"], ["b", "b"]]
    assert krippendorff_alpha(units) == Fraction(8, 15)


def test_cohens_kappa_textbook_example() -> None:
    # 50 grant proposals read by two readers: yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    # p_o = 35/50 = 0.7; p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = 0.2 / 0.5 = 0.4
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    assert cohen_kappa(pairs) == Fraction(2, 5)


def test_cohens_kappa_with_three_categories_by_hand() -> None:
    # rows: first rater, columns: second; a: 4 1 0 / b: 0 3 1 / c: 1 0 2. n = 12,
    # p_o = 9/12; marginals 5 4 3 and 5 4 3; p_e = (25 + 16 + 9) / 144 = 50/144
    # kappa = (108/144 - 50/144) / (94/144) = 58/94 = 29/47
    cells = {("a", "a"): 4, ("a", "b"): 1, ("b", "b"): 3, ("b", "c"): 1,
             ("c", "a"): 1, ("c", "c"): 2}  # fmt: skip
    pairs = [pair for pair, n in cells.items() for _ in range(n)]
    assert cohen_kappa(pairs) == Fraction(29, 47)


def test_kappa_is_undefined_without_units_or_when_chance_agreement_is_certain() -> None:
    assert cohen_kappa([]) is None
    assert cohen_kappa([("a", "a")] * 5) is None


def test_alpha_of_two_raters_is_scotts_pi_corrected_for_sample_size() -> None:
    # Scott's pi of the proposals: p_e = 0.55^2 + 0.45^2 = 0.505, pi = 0.195 / 0.495
    # = 13/33; for two raters alpha = 1 - (2n - 1) / 2n * (1 - pi), here 2/5 exactly
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    alpha = krippendorff_alpha([list(p) for p in pairs])
    assert alpha == 1 - Fraction(99, 100) * (1 - Fraction(13, 33)) == Fraction(2, 5)
