"""Tokenizers: the target model's own vocabulary, and a deterministic one for tests.

Every length and span in rotscope is counted with these, on the final rendered prompt.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2.sandbox import ImmutableSandboxedEnvironment

from rotscope._util.quiet import quiet_stderr
from rotscope.errors import BadInput
from rotscope.types import Tokenizer


def _raise_template_error(message: str) -> None:
    raise ValueError(f"chat template error: {message}")


@functools.lru_cache(maxsize=16)
def _compiled(template: str) -> Any:
    """A template compiled once: a session prompt renders its template many times."""
    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    environment.globals["raise_exception"] = _raise_template_error
    return environment.from_string(template)


def render_template(template: str, messages: Sequence[dict[str, str]], **special: str) -> str:
    """Render a Hugging Face style jinja chat template with the generation prompt appended."""
    return str(_compiled(template).render(messages=list(messages), add_generation_prompt=True, **special))


class LlamaCppTokenizer:
    """The vocabulary and chat template stored in a GGUF file, read through llama.cpp."""

    def __init__(self, model_path: Path, llama: Any | None = None) -> None:
        from llama_cpp import Llama

        self.model_path = model_path
        if llama is None:
            with quiet_stderr():
                llama = Llama(model_path=str(model_path), vocab_only=True, verbose=False)
        self._llama = llama
        self.name = f"llamacpp:{model_path.name}"
        self._vocab = self._llama._model.vocab
        self._pieces: dict[int, bytes] = {}
        self.context_window = int(
            self._llama.metadata.get(
                f"{self._llama.metadata.get('general.architecture', 'llama')}.context_length", 0
            )
        )
        self.metadata: dict[str, str] = dict(self._llama.metadata)
        self.n_vocab = int(self._llama.n_vocab())
        self.template: str = self._llama.metadata.get("tokenizer.chat_template", "")
        if not self.template:
            raise BadInput(f"{model_path}: the GGUF file has no chat template (tokenizer.chat_template)")
        self._bos_text = self._token_text(self._llama.token_bos())
        self._eos_text = self._token_text(self._llama.token_eos())
        self._adds_bos = bool(self._llama._model.add_bos_token())

    def _token_text(self, token_id: int) -> str:
        if token_id < 0:
            return ""
        return self.piece(token_id).decode("utf-8", errors="replace")

    def encode(self, text: str, *, special: bool = False) -> list[int]:
        return list(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def piece(self, token_id: int) -> bytes:
        found = self._pieces.get(token_id)
        if found is None:
            found = self._read_piece(token_id)
            self._pieces[token_id] = found
        return found

    def _read_piece(self, token_id: int) -> bytes:
        import llama_cpp

        size = 64
        while True:
            buffer = ctypes.create_string_buffer(size)
            length = llama_cpp.llama_token_to_piece(self._vocab, token_id, buffer, size, 0, True)
            if length >= 0:
                return buffer.raw[:length]
            size = -length

    def decode(self, ids: Sequence[int]) -> str:
        return b"".join(self.piece(token_id) for token_id in ids).decode("utf-8", errors="replace")

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        text = render_template(self.template, messages, bos_token=self._bos_text, eos_token=self._eos_text)
        if self._adds_bos and not text.startswith(self._bos_text):
            text = self._bos_text + text
        return text

    def digest(self) -> str:
        """Identifies vocabulary and template together, so a changed tokenizer is never mistaken."""
        sample = ",".join(str(i) for i in self.encode("rotscope tokenizer digest: 0123456789 éß 漢字 \n\t"))
        material = f"{self.template}\n{sample}\n{self._llama.n_vocab()}"
        return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


# Every character is in a piece: a run of line feeds, a run of any other white space (a space, a tab,
# a carriage return, U+2028, U+2029, U+0085...), a word, or one other character. White space outside
# ``[ \t\n]`` was once in no piece and dropped, so a session message holding U+2028 decoded to other
# text than it was and every layout around it was rejected; texts without such characters keep their
# ids, so the digest stays.
_FAKE_PIECES = re.compile(r"<\|[a-z_]+\|>|\n+|[^\S\n]+|\w+|[^\w\s]")
_FAKE_SPECIAL = re.compile(r"<\|[a-z_]+\|>")
_FAKE_SPECIAL_PARTS = re.compile(r"\w+|[^\w\s]")
FAKE_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


class PieceVocabulary(ABC):
    """A vocabulary grown from the text pieces it meets, so pieces decode exactly. The base of the
    regex tokenizers (test fake, approximate count).

    A piece's id is derived from the piece itself (48 bits of its BLAKE2b hash), not from the order
    in which pieces were first met: the same text has the same ids whatever was encoded before it,
    so a prompt's ids (and its work item id) do not depend on how much filler was read for the
    other lengths of a grid, or on the other tasks. Two pieces sharing a hash (about one chance in
    10^5 for a vocabulary of 10^5 pieces) are told apart by taking the next free id."""

    _ID_SPACE = 1 << 48

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._pieces: dict[int, str] = {}

    def _id(self, piece: str) -> int:
        token_id = self._ids.get(piece)
        if token_id is None:
            digest = hashlib.blake2b(piece.encode("utf-8"), digest_size=6).digest()
            token_id = int.from_bytes(digest, "big")
            while token_id in self._pieces:
                token_id = (token_id + 1) % self._ID_SPACE
            self._ids[piece] = token_id
            self._pieces[token_id] = piece
        return token_id

    @abstractmethod
    def encode(self, text: str, *, special: bool = False) -> list[int]: ...

    def piece(self, token_id: int) -> bytes:
        return self._pieces[token_id].encode("utf-8")

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self._pieces[token_id] for token_id in ids)

    def count(self, text: str) -> int:
        return len(self.encode(text))


class FakeTokenizer(PieceVocabulary):
    """Deterministic word/space/punctuation tokenizer for unit tests: pieces are exact,
    special tokens ``<|name|>`` are single ids only when ``special=True``."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "fake:regex"

    def encode(self, text: str, *, special: bool = False) -> list[int]:
        # The hot path of every fake run (planning encodes each prompt again to verify it): a piece
        # already met is one dict lookup, and only a piece starting "<|" can be a special token.
        ids: list[int] = []
        known, append = self._ids.get, ids.append
        for piece in _FAKE_PIECES.findall(text):
            token_id = known(piece)
            if token_id is not None and (special or not piece.startswith("<|")):
                append(token_id)
            elif not special and _FAKE_SPECIAL.fullmatch(piece):
                ids.extend(self._id(part) for part in _FAKE_SPECIAL_PARTS.findall(piece))
            else:
                append(self._id(piece))
        return ids

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        return render_template(FAKE_TEMPLATE, messages)

    def digest(self) -> str:
        return "fake-regex-2"


def _byte_offsets(tokenizer: Tokenizer, ids: Sequence[int]) -> list[int]:
    offsets = [0]
    for token_id in ids:
        offsets.append(offsets[-1] + len(tokenizer.piece(token_id)))
    return offsets


def _char_byte_starts(text: str) -> list[int]:
    starts = [0]
    for character in text:
        starts.append(starts[-1] + len(character.encode("utf-8")))
    return starts


def char_offsets(tokenizer: Tokenizer, ids: Sequence[int]) -> list[int]:
    """Where each token starts in ``tokenizer.decode(ids)``, in characters, plus the text's length.

    A token that starts inside a multi-byte character maps to that character. Together with
    ``token_at_char`` this is the mapping between characters and tokens.
    """
    char_starts = _char_byte_starts(tokenizer.decode(ids))
    return [bisect.bisect_right(char_starts, offset) - 1 for offset in _byte_offsets(tokenizer, ids)]


def token_at_char(tokenizer: Tokenizer, ids: Sequence[int], char_index: int) -> int:
    """The index of the token holding the first byte of character ``char_index`` of the decoded text."""
    char_starts = _char_byte_starts(tokenizer.decode(ids))
    if not 0 <= char_index < len(char_starts) - 1:
        raise IndexError(f"character {char_index} is outside the text ({len(char_starts) - 1} characters)")
    return bisect.bisect_right(_byte_offsets(tokenizer, ids), char_starts[char_index]) - 1
