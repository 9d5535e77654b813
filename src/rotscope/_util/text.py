"""Lexical overlap between a question and its evidence, for probes that promise none (NoLiMa)."""

from __future__ import annotations

import re

STOP_WORDS = frozenset(
    """a an the of in on at to for is was are were be been being who whom which what when where why how
    has have had does did do doing with by from and or nor but not no that this these those it its as near
    next every one any some all each into onto over under about than then there their they them he she his
    her him i me my we our you your can could would should may might must will shall very so just also
    right once""".split()
)
_SUFFIXES = ("ing", "es", "ed", "s")


def stem(word: str) -> str:
    """A deliberately crude stem: enough to catch clock/clocks and visit/visited."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_stems(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {stem(word) for word in words if word not in STOP_WORDS}


def shared_content_words(question: str, evidence: str) -> set[str]:
    return content_stems(question) & content_stems(evidence)


def mentions(text: str, value: str) -> bool:
    """Whether ``value`` occurs in ``text`` as a whole token (4817 is not in 48170 nor in 2.4817)."""
    return re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", text) is not None
