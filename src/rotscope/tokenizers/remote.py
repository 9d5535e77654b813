"""Tokenizers for models served elsewhere: a local tokenizer file, a cached tiktoken encoding, or an
estimate that is marked approximate.

A remote API receives text, not token ids, and applies its own chat template. Lengths and spans
are therefore counted on a local tokenizer: exact when it is the model's own (a GGUF file with its
template, a Hugging Face ``tokenizer.json``, a tiktoken encoding), else an estimate. Without a known
template the messages are joined plainly, and the provider's reported prompt tokens minus this
count is the harness overhead (template, system prompt) that ``rotscope run`` reports.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rotscope.errors import BadInput
from rotscope.tokenizers.local import PieceVocabulary, render_template

PLAIN_SEPARATOR = "\n\n"


def render_plain(messages: Sequence[dict[str, str]]) -> str:
    """The message contents joined by blank lines: what is counted when the server's template is unknown."""
    return PLAIN_SEPARATOR.join(message["content"] for message in messages)


_APPROX_PIECES = re.compile(r"\n+|[^\S\n]+(?=\n)|[^\S\n]*[^\W\d_]{1,6}|\d{1,3}|[^\S\n]+|[^\w\s]|_")


class ApproximateTokenizer(PieceVocabulary):
    """A deterministic estimate of a BPE tokenizer (a word of up to six letters with its leading
    space, three digits, one mark, one run of whitespace per token). Its pieces are exact, so spans
    and round trips hold; its counts are estimates, and runs using it are marked approximate."""

    approximate = True

    def __init__(self) -> None:
        super().__init__()
        self.name = "approximate:regex-bpe"

    def encode(self, text: str, *, special: bool = False) -> list[int]:
        return [self._id(match.group()) for match in _APPROX_PIECES.finditer(text)]

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        return render_plain(messages)

    def digest(self) -> str:
        return "approximate-regex-bpe-2"


class TiktokenTokenizer:
    """A tiktoken encoding. Only encodings already in tiktoken's local cache load: rotscope never
    downloads a vocabulary at run time."""

    approximate = False

    def __init__(self, encoding: Any) -> None:
        self._encoding = encoding
        self.name = f"tiktoken:{encoding.name}"

    @classmethod
    def cached(cls, name: str, field: str = "remote.tokenizer") -> TiktokenTokenizer:
        import tiktoken
        import tiktoken.load

        def refuse_download(blobpath: str) -> bytes:
            if "://" in blobpath:
                raise BadInput(
                    f"{field}: tiktoken encoding {name!r} is not in the local cache "
                    "(TIKTOKEN_CACHE_DIR); rotscope does not download it"
                )
            return original(blobpath)

        original = tiktoken.load.read_file
        tiktoken.load.read_file = refuse_download  # the one place tiktoken would reach the network
        try:
            return cls(tiktoken.get_encoding(name))
        except ValueError as error:
            raise BadInput(f"{field}: {error}") from None
        finally:
            tiktoken.load.read_file = original

    def encode(self, text: str, *, special: bool = False) -> list[int]:
        if special:
            return list(self._encoding.encode(text, allowed_special="all"))
        return list(self._encoding.encode(text, disallowed_special=()))

    def piece(self, token_id: int) -> bytes:
        return bytes(self._encoding.decode_single_token_bytes(token_id))

    def decode(self, ids: Sequence[int]) -> str:
        return b"".join(self.piece(token_id) for token_id in ids).decode("utf-8", errors="replace")

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        return render_plain(messages)

    def digest(self) -> str:
        sample = self.encode("rotscope tokenizer digest: 0123456789 éß 漢字 \n\t")
        material = f"{self.name}\n{sample}\n{self._encoding.n_vocab}"
        return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet: the printable character standing for each byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    codes = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return {chr(code): byte for byte, code in zip(printable, codes, strict=True)}


_BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")


class HFTokenizer:
    """A Hugging Face ``tokenizer.json`` read with the ``tokenizers`` library; the chat template comes
    from ``tokenizer_config.json`` (or ``chat_template.jinja``) beside it when there is one, else
    messages are joined plainly."""

    approximate = False

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer as HFTokenizerModel

        try:
            self._model = HFTokenizerModel.from_file(str(path))
        except Exception as error:
            raise BadInput(f"remote.tokenizer: {path} is not a tokenizer.json ({error})") from None
        self.path = path
        self.name = f"hf:{path}"
        decoder = json.loads(path.read_text(encoding="utf-8")).get("decoder") or {}
        self._byte_level = "ByteLevel" in json.dumps(decoder)
        self._bytes = _byte_decoder()
        self._pieces: dict[int, bytes] = {}
        self.template = ""
        self._special: dict[str, str] = {}
        config_path = path.with_name("tokenizer_config.json")
        if config_path.is_file():
            config = json.loads(config_path.read_text(encoding="utf-8"))
            template = config.get("chat_template")
            self.template = template if isinstance(template, str) else ""
            for key in ("bos_token", "eos_token"):
                value = config.get(key)
                content = value.get("content") if isinstance(value, dict) else value
                self._special[key] = content if isinstance(content, str) else ""
        template_path = path.with_name("chat_template.jinja")
        if not self.template and template_path.is_file():  # where transformers 5 saves it
            self.template = template_path.read_text(encoding="utf-8")

    def encode(self, text: str, *, special: bool = False) -> list[int]:
        return list(self._model.encode(text, add_special_tokens=False).ids)

    def piece(self, token_id: int) -> bytes:
        found = self._pieces.get(token_id)
        if found is None:
            token = self._model.id_to_token(token_id) or ""
            if self._byte_level:
                found = bytes(self._bytes.get(char, 0) for char in token)
            elif fallback := _BYTE_FALLBACK.fullmatch(token):
                found = bytes([int(fallback.group(1), 16)])
            else:
                found = token.replace("▁", " ").encode("utf-8")
            self._pieces[token_id] = found
        return found

    def decode(self, ids: Sequence[int]) -> str:
        return b"".join(self.piece(token_id) for token_id in ids).decode("utf-8", errors="replace")

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        if not self.template:
            return render_plain(messages)
        return render_template(self.template, messages, **self._special)

    def digest(self) -> str:
        sample = self.encode("rotscope tokenizer digest: 0123456789 éß 漢字 \n\t")
        material = f"{self.template}\n{sample}\n{self._model.get_vocab_size()}"
        return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def load_tokenizer(spec: str | None, field: str = "remote.tokenizer") -> Any:
    """The tokenizer ``field`` names: ``tiktoken:NAME``, a ``.gguf`` file, a ``tokenizer.json``
    file (or a folder holding one); ``None`` gives the approximate estimate."""
    if spec is None:
        return ApproximateTokenizer()
    if spec.startswith("tiktoken:"):
        return TiktokenTokenizer.cached(spec.removeprefix("tiktoken:"), field)
    path = Path(spec).expanduser()
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise BadInput(f"{field}: {spec!r} is neither tiktoken:NAME nor an existing file")
    if path.suffix == ".gguf":
        from rotscope.tokenizers.gguf import check_gguf
        from rotscope.tokenizers.local import LlamaCppTokenizer

        check_gguf(path)
        return LlamaCppTokenizer(path)
    return HFTokenizer(path)


def is_approximate(tokenizer: object) -> bool:
    return bool(getattr(tokenizer, "approximate", False))
