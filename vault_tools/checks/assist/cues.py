"""The cue words of a claim, found in one scan: the words that say a comparison's
direction, a condition, a negation or a metric, in Chinese and English.

Every claim of a vault is read by the checks of meaning.py and terms.py,
most of which find nothing to say; one scan of the claim for every cue at once (a single
alternation of literal words, which the regex engine skips through quickly) and a lookup
per check keeps their cost a fraction of a note's. The lists err towards silence: a word
that may or may not carry the meaning counts where counting it keeps a check quiet.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from vault_tools.checks.assist.wording import nfkc

# families of cues
RISE, FALL, ALIKE = "rise", "fall", "alike"  # the direction a claim's comparison states
RISE_SPEED, FALL_SPEED = "rise-speed", "fall-speed"  # faster is less latency
THAN = "than"  # a comparison that sets one thing against another ("A 比 B", "A outperforms B")
DENY = "deny"  # a plain negation: 不, 沒有, 無法, not, never
DENY_SOFT = "deny-soft"  # a word that may render one: 僅, 避免, 免, avoid, lack, un…
CONDITION = "condition"
CONCESSIVE = "concessive"  # a condition said not to matter: 即使, even if, regardless of
EVERY, SOME = "every", "some"  # a quantifier: 所有, all, always; 多數, most, often
ATTRIBUTED = "attributed"  # who says it: 根據, according to, reports
MULTIPLE = "multiple"  # a comparison said with a multiplier: 倍, twice, times
NOTHING = ""  # words holding a cue word that say none of it (不同, 比較, not only)

METRICS = ("LATENCY_COST", "COMPUTE_PERFORMANCE", "THROUGHPUT", "ACCEPTANCE_RATE", "COST")
EFFICIENCY = "efficiency"  # compute's, or the acceptance rate's, or throughput's

# word -> families. A word ending in "*" is a prefix (outperform*: outperforms, …).
_LEXICON: dict[str, str] = {
    # comparisons, Chinese: 比 … 更 X, or a verb that compares by itself
    "比": THAN,
    "相比": THAN,
    "相較": THAN,
    "相较": THAN,
    "比較": NOTHING,
    "比较": NOTHING,
    **dict.fromkeys(
        "優於 优于 勝過 胜过 高於 高于 大於 大于 多於 多于 超過 超过 超越 領先 领先 強於 "
        "强于".split(),
        f"{RISE} {THAN}",
    ),
    **dict.fromkeys(
        "低於 低于 小於 小于 少於 少于 劣於 劣于 遜於 逊于 不如 落後 落后 弱於 弱于".split(),
        f"{FALL} {THAN}",
    ),
    **dict.fromkeys(
        "更有效 更高 更好 更佳 更多 更大 更強 更强 較高 较高 較好 较好 較佳 较佳 較多 较多 "
        "較大 较大 更能 增加 增大 提升 提高 上升 加大".split(),
        RISE,
    ),
    "更有效率": f"{RISE} {EFFICIENCY}",
    **dict.fromkeys(
        "更低 更差 更少 更小 更弱 較低 较低 較差 较差 較少 较少 較小 较小 減少 减少 降低 下降 "
        "縮短 缩短 縮小 缩小 減低".split(),
        FALL,
    ),
    **dict.fromkeys("更快 較快 较快 加快".split(), RISE_SPEED),
    "加速": f"{RISE_SPEED} LATENCY_COST",
    **dict.fromkeys("更慢 較慢 较慢".split(), FALL_SPEED),
    **dict.fromkeys(
        "約等於 约等于 相當於 相当于 大致相同 差不多 相近 相若 持平 近似 略微 略 稍微 幾乎 几乎 "
        "≈ ~".split(),
        ALIKE,
    ),
    # comparisons, English
    **dict.fromkeys("than outperform* exceed* surpass* beat beats above".split(), f"{RISE} {THAN}"),
    **dict.fromkeys("underperform* below trail trails".split(), f"{FALL} {THAN}"),
    **dict.fromkeys(
        "more higher greater larger better increase* boost* improv* raise raises raised".split(),
        RISE,
    ),
    **dict.fromkeys(
        "less lower fewer smaller worse decrease* reduce* reducing cut cuts drop drops".split(),
        FALL,
    ),
    "faster": f"{RISE_SPEED} LATENCY_COST",
    "slower": f"{FALL_SPEED} LATENCY_COST",
    **dict.fromkeys(
        "roughly approximately comparable similar marginally slightly nearly almost".split(), ALIKE
    ),
    "on par": ALIKE,
    "the same": ALIKE,
    # negations
    **dict.fromkeys(
        "不 沒有 没有 沒 没 未 無法 无法 無 无 非 別 别 勿 難以 难以".split(), f"{DENY} {DENY_SOFT}"
    ),
    **dict.fromkeys("莫 否 免 缺 避 忽略 而已 僅 仅 只".split(), DENY_SOFT),
    # "stays unchanged", as "un…" is: 維持不變 renders "holds", which denies nothing
    **dict.fromkeys("不變 不变".split(), DENY_SOFT),
    **dict.fromkeys(
        "不同 不斷 不断 不僅 不仅 不只 不少 不但 不過 不过 不論 不论 無論 无论 不管 非常 未來 "
        "未来 無數 无数 否則 否则 是否 能否 可否 與否 与否".split(),
        NOTHING,
    ),
    **dict.fromkeys(
        "not no never cannot without neither nor none nothing unable can't won't don't doesn't "
        "isn't aren't wasn't weren't didn't hasn't haven't wouldn't couldn't shouldn't".split(),
        f"{DENY} {DENY_SOFT}",
    ),
    **dict.fromkeys(["fail to", "fails to", "failed to"], f"{DENY} {DENY_SOFT}"),
    **dict.fromkeys(["not only", "not just", "no matter", "no more than", "no less than"], NOTHING),
    **dict.fromkeys(
        "sub* un* inefficient* insufficient* infeasible* incapable* impossible free lack lacks "
        "lacking absent missing avoid* bypass* prevent* rarely hardly barely seldom".split(),
        DENY_SOFT,
    ),
    # conditions
    **dict.fromkeys(
        "當 当 時 时 若 如果 假如 假設 假设 只要 取決 取决 視 视 除非 僅當 仅当 只有在 一旦 依 "
        "根據 根据 隨 随 基於 基于 前提 條件 条件 情況 情况 的話 的话".split(),
        CONDITION,
    ),
    # a time clause, "after X, …": how a claim says "when X" of a thing done first
    **dict.fromkeys("後， 后， 後, 后, 之後 之后 以後 以后".split(), CONDITION),
    **dict.fromkeys("if when whenever unless".split(), CONDITION),
    **dict.fromkeys(
        ["only if", "as long as", "provided that", "depending on", "depends on", "based on"]
        + ["given that", "at high", "at low", "at large", "at small", "for large", "for small"],
        CONDITION,
    ),
    # a condition said not to matter ("only when X" turned into "even if not X")
    **dict.fromkeys(
        "即使 即便 就算 哪怕 縱使 纵使 縱然 纵然 無論 无论 不論 不论 不管 "
        "regardless irrespective".split(),
        CONCESSIVE,
    ),
    **dict.fromkeys(
        ["even if", "even when", "even without", "even though", "no matter", "whether or"],
        CONCESSIVE,
    ),
    # quantifiers: how much of a thing, or how often, the claim speaks of
    **dict.fromkeys(
        "所有 全部 全都 都 總是 总是 一律 一概 皆 始終 始终 永遠 永远 凡是 任何 all every always "
        "invariably universally".split(),
        EVERY,
    ),
    **dict.fromkeys(
        "多數 多数 大多 大都 多半 大部分 部分 一些 有些 某些 許多 许多 很多 眾多 众多 少數 少数 "
        "通常 往往 經常 经常 常常 時常 时常 常見 常见 一般 有時 有时 偶爾 偶尔 "
        "most mostly many some several often usually typically generally frequently "
        "sometimes commonly occasionally majority largely partly partially tend tends".split(),
        SOME,
    ),
    "不少": SOME,
    **dict.fromkeys(
        "不是所有 並非所有 并非所有 不是每 並非每 并非每 未必都".split(),
        f"{SOME} {DENY} {DENY_SOFT}",
    ),
    **dict.fromkeys(["not all", "not every", "not always"], f"{SOME} {DENY} {DENY_SOFT}"),
    # words holding a quantifier or a metric that say neither: the longest cue counts
    **dict.fromkeys(
        "首都 都市 成都 京都 重新計算 重新计算 計算機 计算机 計算出 计算出 "
        "延遲滿足 延迟满足".split(),
        NOTHING,
    ),
    **dict.fromkeys(
        ["the most", "at most", "is most", "are most", "was most", "were most", "most likely"]
        + ["at all", "after all", "above all", "all but", "at times"]
        + ["re compute", "pre compute"],
        NOTHING,
    ),
    # qualifier words of a condition: "at the same temperature" compares nothing
    **dict.fromkeys(
        ["at the same", "under the same", "for the same", "with the same", "in the same"]
        + ["on the same", "of the same"],
        NOTHING,
    ),
    # who the claim says says it
    **dict.fromkeys("根據 根据 依據 依据".split(), f"{CONDITION} {ATTRIBUTED}"),
    **dict.fromkeys(
        "據 据 指出 報告 报告 認為 认为 估計 估计 according reports reported says said finds "
        "found estimates estimated argues argued concludes concluded".split(),
        ATTRIBUTED,
    ),
    **dict.fromkeys("數據 数据 證據 证据 據說 据说 佔據 占据".split(), NOTHING),
    # a comparison said with a multiplier
    **dict.fromkeys("倍 × twice double triple thrice times fold half".split(), MULTIPLE),
    # metrics
    **dict.fromkeys("latency 延遲 延迟 時延 时延 耗時 耗时 毫秒 ms".split(), "LATENCY_COST"),
    **dict.fromkeys("throughput 吞吐 輸出 输出".split(), "THROUGHPUT"),
    **dict.fromkeys(
        ["per decode step", "per step", "tokens per second", "tokens/s", "token/s"]
        + ["output token", "output tokens"],
        "THROUGHPUT",
    ),
    **dict.fromkeys(
        ["acceptance rate", "acceptance", "accept rate", "接受率", "接受度"], "ACCEPTANCE_RATE"
    ),
    **dict.fromkeys(
        "cost costs 成本 price 價格 价格 費用 费用 每百萬 每百万 美元 $".split(), "COST"
    ),
    "per million": "COST",
    **dict.fromkeys("compute 算力 運算 运算 計算 计算 flops flop".split(), "COMPUTE_PERFORMANCE"),
    **dict.fromkeys("efficien* 效率 效能 性能 performance 表現 表现".split(), EFFICIENCY),
}

_FAMILIES = {word.rstrip("*"): frozenset(families.split()) for word, families in _LEXICON.items()}
_PREFIXES = frozenset(word[:-1] for word in _LEXICON if word.endswith("*"))
_LATIN_WORDS = frozenset(w for w in _FAMILIES if w[0].isascii() and w[0].isalnum())
_SINGLE_WORDS = frozenset(w for w in _LATIN_WORDS if " " not in w)
_STARTERS = frozenset(w.split(" ", 1)[0] for w in _LATIN_WORDS if " " in w)
# the first two words of each entry of several: most starters ("for", "the", "tokens")
# are followed by no second word of theirs, and then no longer entry is looked up
_PAIRS = frozenset(tuple(w.split(" ")[:2]) for w in _LATIN_WORDS if " " in w)
_LONGEST = max(w.count(" ") for w in _LATIN_WORDS) + 1  # words in the longest entry
_PREFIX_HEADS = frozenset(p[:2] for p in _PREFIXES)
_COSTS = frozenset(("cost", "costs"))
# Latin words are looked up token by token (a dict lookup each); the others (Chinese,
# ≈, ~, $) are found by one alternation over the text
_LATIN_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+|/[a-z]+)?")
_FULL_WIDTH = re.compile("[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a]")


def trie_pattern(words: list[str]) -> str:
    """One alternation for `words`, shaped as their trie ("a(?:bove|lmost)|…"): the
    regex engine then tries one branch per character instead of every word at every
    position. At each node a longer word is tried before a shorter one ends there."""
    if words == [""]:
        return ""
    ends = "" in words
    by_first: dict[str, list[str]] = {}
    for word in words:
        if word:
            by_first.setdefault(word[0], []).append(word[1:])
    branches = [re.escape(char) + _group(trie_pattern(rests)) for char, rests in by_first.items()]
    if ends:
        branches.append("")
    return "|".join(branches)


def _group(pattern: str) -> str:
    return f"(?:{pattern})" if "|" in pattern else pattern


def whole_word_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """A pattern that matches the Latin `words` (lower case) only where one is a whole
    word of lowered text: not after or before a letter or digit. The test of the start
    follows each word's first letter, so the regex engine still skips ahead to the
    letters the words begin with (one put first is tried at every place)."""
    by_first: dict[str, list[str]] = {}
    for word in sorted(words):
        by_first.setdefault(word[0], []).append(word[1:])
    branches = [
        f"{re.escape(char)}(?<![a-z0-9].){_group(trie_pattern(rests))}"
        for char, rests in by_first.items()
    ]
    return re.compile(f"(?:{'|'.join(branches)})(?![a-z0-9])")


_PREFIX = re.compile(trie_pattern(sorted(_PREFIXES)))
_OTHER_CUE = re.compile(
    trie_pattern(sorted(w for w in _FAMILIES if not w[0].isascii() or not w[0].isalnum()))
)


def lowered(text: str) -> str:
    """`text` for the cue words: lower case, full-width letters and digits made ASCII."""
    return text.lower() if text.isascii() else _lowered_beyond_ascii(text)


@functools.lru_cache(maxsize=64)  # a Chinese claim is read for its cue words and units
def _lowered_beyond_ascii(text: str) -> str:
    if _FULL_WIDTH.search(text):
        text = nfkc(text)
    return text.lower()


@functools.lru_cache(maxsize=64)  # a claim is asked about by several checks
def cues(text: str) -> Mapping[str, str]:
    """Each family of cue `text` holds, with the first word of it (a Latin word counts
    only as a whole word, or as a word's beginning for a prefix such as "outperform").
    Read-only: every caller shares the memo's one answer."""
    low = lowered(text)
    # the cue words in the order they count: the others (Chinese, ≈, ~, $), then the Latin
    words = _OTHER_CUE.findall(low) if not low.isascii() or "~" in low or "$" in low else []
    tokens = _latin_tokens(low)
    marks = list(map(_TOKEN_CUES.__getitem__, tokens))
    if not _STARTERS.isdisjoint(tokens) or ("latency" in tokens and not _COSTS.isdisjoint(tokens)):
        _latin_cues_in_order(words, tokens, marks)  # entries of several words: in order
    else:
        # the usual claim: the whole words first, then the words a prefix begins
        words += [word for word, whole in marks if whole]
        words += [word for word, whole in marks if word and not whole]
    found: dict[str, str] = {}
    for word in words:
        for family in _FAMILIES[word]:
            found.setdefault(family, word)
    return MappingProxyType(found)


# ASCII letters, digits, ' and / kept, every other character made a space
_TOKEN_CHARACTERS = str.maketrans(
    {
        chr(c): chr(c) if chr(c) in "0123456789abcdefghijklmnopqrstuvwxyz'/" else " "
        for c in range(128)
    }
)


def _latin_tokens(low: str) -> list[str]:
    """`_LATIN_TOKEN.findall(low)`: the runs of its characters, split in C (translate,
    split; outside ASCII each character made "?" first), and the regex run over a run
    only when some run holds ' or / (a run of letters and digits is one token)."""
    ascii_low = low if low.isascii() else low.encode("ascii", "replace").decode("ascii")
    runs = ascii_low.translate(_TOKEN_CHARACTERS).split()
    if "'" in ascii_low or "/" in ascii_low:
        return [token for run in runs for token in _LATIN_TOKEN.findall(run)]
    return runs


class _TokenCues(dict):
    """token -> (its cue word, whether the token is the whole word): the token itself for
    an entry of one word, the prefix it begins with ("outperform" of "outperforms"), or
    ("", False). Filled as tokens are met (a vault's words recur from claim to claim), so
    a claim's tokens are looked up in C, one dict lookup each."""

    _LIMIT = 65536  # past this many, a token is worked out each time it is met

    def __missing__(self, token: str) -> tuple[str, bool]:
        if token in _SINGLE_WORDS:
            mark = (token, True)
        else:
            prefix = _PREFIX.match(token) if token[:2] in _PREFIX_HEADS else None
            mark = (prefix.group(), False) if prefix else ("", False)
        if len(self) < self._LIMIT:
            self[token] = mark
        return mark


_TOKEN_CUES = _TokenCues()


def _latin_cues_in_order(
    words: list[str], tokens: list[str], marks: list[tuple[str, bool]]
) -> None:
    # tokens an entry of several words holds; none when no two tokens in a row begin
    # one (a set lookup in C, where most claims have a starter such as "for" or "tokens")
    pairs = zip(tokens, tokens[1:], strict=False)
    spanned = _several_words(words, tokens) if not _PAIRS.isdisjoint(pairs) else ()
    for index, (word, _) in enumerate(marks):
        if not word or index in spanned:
            continue  # "not only" says no "not"
        if word in _COSTS and index and tokens[index - 1] == "latency":
            continue  # a latency cost is a latency
        words.append(word)


def _several_words(words: list[str], tokens: list[str]) -> set[int]:
    """Add the entries of several words ("not only", "per decode step") to `words`;
    the indexes of the tokens they hold."""
    spanned: set[int] = set()
    for index, token in enumerate(tokens):
        if (
            token not in _STARTERS
            or index in spanned
            or tuple(tokens[index : index + 2]) not in _PAIRS
        ):
            continue
        for size in range(min(_LONGEST, len(tokens) - index), 1, -1):
            entry = " ".join(tokens[index : index + size])
            if entry in _FAMILIES:
                words.append(entry)
                spanned.update(range(index, index + size))
                break
    return spanned
