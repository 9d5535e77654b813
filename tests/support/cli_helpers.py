"""What the command-line tests share: calling the CLI, the bad-input contract, a nonsense corpus,
one-fact cases."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from rotscope.backends.fake import FakeBackend
from rotscope.cli import app
from rotscope.types import Completion, GenerateRequest

SYLLABLES = ("zu", "qa", "xo", "vy", "ku", "pim", "dax", "fol", "wex", "jor", "ibb", "oth")


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def count_fake_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call of a fake model from now on (answered as the fake would), by its model id: a dry
    run or a refused one must leave it empty."""
    calls: list[str] = []
    generate = FakeBackend.generate

    async def counted(self: FakeBackend, request: GenerateRequest) -> Completion:
        calls.append(self.model_id)
        return await generate(self, request)

    monkeypatch.setattr(FakeBackend, "generate", counted)
    return calls


def assert_bad_input(result: Result, *fragments: str) -> str:
    """Exit 2, exactly one line on stderr starting with 'rotscope: ', no traceback; the line."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("rotscope: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def nonsense_corpus(folder: Path, files: int = 3, lines: int = 40, seed: int = 0) -> Path:
    """Lines of invented words: no content word is shared with any task question, so the fake
    string matcher can only ever find the planted needle."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(files):
        text = "\n".join(
            " ".join(rng.choice(SYLLABLES) + rng.choice(SYLLABLES) for _ in range(8)) + "."
            for _ in range(lines)
        )
        (folder / f"doc{number}.txt").write_text(text + "\n", encoding="utf-8")
    return folder


def valve_corpus(folder: Path) -> Path:
    """Short numbered lines ("valve N checked."), so a needle can sit at the start, the middle or
    the end even at 200 tokens, and a scripted model can tell its depth from its line."""
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(3):
        text = "".join(f"valve {line} checked.\n" for line in range(number * 60, number * 60 + 60))
        (folder / f"doc{number}.txt").write_text(text, encoding="utf-8")
    return folder


CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def bpe_tokenizer_folder(folder: Path, corpus: Path, vocab_size: int = 800) -> Path:
    """A model folder's tokenizer: a byte-level BPE ``tokenizer.json`` trained on the ``*.txt`` of
    ``corpus`` (exact pieces, so spans verify), with ``CHAT_TEMPLATE`` as ``chat_template.jinja``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    model = Tokenizer(models.BPE())
    model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    model.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|user|>", "<|assistant|>", "<|end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    model.train_from_iterator([path.read_text() for path in sorted(corpus.glob("*.txt"))], trainer)
    folder.mkdir(parents=True, exist_ok=True)
    model.save(str(folder / "tokenizer.json"))
    (folder / "chat_template.jinja").write_text(CHAT_TEMPLATE, encoding="utf-8")
    return folder


PLACES = ("Brant", "Calder", "Dunmore", "Elgin", "Fenwick", "Garrow", "Hollis", "Ingram")
SITES = ("gate", "vault", "tower", "depot", "mill", "dock", "yard", "hall")


def case_file(path: Path) -> Path:
    """64 one-fact cases whose words the nonsense corpus never holds: instances enough to decide."""
    records = [
        {
            "case_id": f"{place}-{site}".lower(),
            "question": f"What is the {place} {site} code?",
            "documents": [
                {"id": "fact", "text": f"The {place} {site} code is {4000 + 97 * n}.", "claims": ["code"]}
            ],
            "claims": {"code": [str(4000 + 97 * n)]},
            "required_claims": ["code"],
        }
        for n, (place, site) in enumerate((place, site) for place in PLACES for site in SITES)
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path
