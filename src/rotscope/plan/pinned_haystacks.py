"""The haystacks that cases saved from a failure name (``Case.haystack``), read once each, so a
saved case renders in the filler it failed in whatever the experiment's seed, variants and cases.

A haystack is read as the plan reads its own variants (``filler.variants.variant_corpora``): the
experiment's filler source in the order of the saved seed, the saved variant of as many orders as
the failing run read, at least its tokens, the run's guarded strings avoided. Where that is not the
haystack the case failed in (another filler, tokenizer or source text: its digest differs) or the
source has too few variants, the run says so in one line per case and still runs the case, in the
haystack it could read or the experiment's own."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from rotscope.errors import BadInput
from rotscope.filler import Document
from rotscope.filler.corpus import TokenizedCorpus
from rotscope.filler.variants import variant_corpora
from rotscope.types import Case, Haystack, Tokenizer

Source = Callable[[int, frozenset[str]], Iterator[Document]]
"""The experiment's filler documents in the order of a seed, avoiding the given strings."""


class PinnedHaystacks:
    """The haystacks of saved cases, each read once, and the notices of those that differ."""

    def __init__(self, source: Source, tokenizer: Tokenizer, *, allow_repeat: bool, origin: str) -> None:
        self._source = source
        self._tokenizer = tokenizer
        self._allow_repeat = allow_repeat
        self._origin = origin
        self._read: dict[tuple[int, int, int, tuple[str, ...]], list[TokenizedCorpus]] = {}
        self.notices: list[str] = []

    def corpus(self, case: Case) -> TokenizedCorpus | None:
        """The haystack ``case`` names, or ``None`` (said in ``notices``) where the source cannot
        give it; ``None`` for a case that names none."""
        haystack = case.haystack
        if haystack is None:
            return None
        corpora = self._corpora(haystack)
        say = self.notices.append if not case.control else (lambda line: None)  # said once, for the case
        if haystack.variant >= len(corpora):
            say(
                f"case {case.case_id}: filler {self._origin} gives {len(corpora)} haystack variants for seed "
                f"{haystack.seed}, not variant {haystack.variant} it failed in; it runs in the experiment's "
                "haystack, so its prompts differ from the failure's"
            )
            return None
        corpus = corpora[haystack.variant]
        if haystack.digest is not None and corpus.digest != haystack.digest:
            was = f" ({haystack.filler})" if haystack.filler else ""
            say(
                f"case {case.case_id}: its haystack here (filler {self._origin}, digest {corpus.digest}) "
                f"is not the one it failed in{was}, digest {haystack.digest}: another filler, tokenizer or "
                "source text, so its prompts differ from the failure's"
            )
        return corpus

    def _corpora(self, haystack: Haystack) -> list[TokenizedCorpus]:
        key = (haystack.seed, haystack.variants, haystack.tokens, haystack.avoid)
        found = self._read.get(key)
        if found is None:
            avoid = frozenset(haystack.avoid)
            try:
                found = variant_corpora(
                    lambda seed: self._source(seed, avoid),
                    self._tokenizer,
                    haystack.tokens,
                    seed=haystack.seed,
                    variants=haystack.variants,
                    allow_repeat=self._allow_repeat,
                    origin=self._origin,
                )
            except BadInput as problem:
                raise BadInput(f"a saved case's haystack: {problem}") from None
            self._read[key] = found
        return found
