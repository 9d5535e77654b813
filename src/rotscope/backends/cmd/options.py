"""The ``cmd/PATH`` backend's own section of the experiment file (``cmd:``)."""

from __future__ import annotations

import re
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from rotscope.config.options import PathOption, RuntimeOption
from rotscope.config.sections import Float, Int, OptionalInt, SectionSpec, StrictOptions

CMD_PLACEHOLDERS = ("{prompt_file}", "{system}", "{system_file}", "{usage_file}", "{usage_fd}")
"""What ``cmd.args`` may contain, replaced on every call (see ``CmdOptions``)."""
_PLACEHOLDER = re.compile(r"\{[A-Za-z_]+\}")
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class CmdOptions(StrictOptions):
    """How the ``cmd/PATH`` backend runs the executable at ``PATH`` (or a command name found on
    ``$PATH``): once per prompt, the reply read from its standard output. In ``args``,
    ``{prompt_file}``, ``{system}``, ``{system_file}``, ``{usage_file}`` and ``{usage_fd}`` are
    replaced on every call. Usage's prompt tokens minus rotscope's own count are the harness
    overhead. A non-zero exit, a timeout or an empty reply is an error row, retried up to
    ``max_attempts`` times and again on ``--resume``.
    """

    SECTION: ClassVar[SectionSpec] = SectionSpec(
        subject_overrides=True, identity_when_set=False, model_name_form="path-or-command"
    )
    """A subject (``subjects:``) may set its keys one by one; the model name after ``cmd/`` is
    read in its form (``rotscope.config.spec.ModelNameForm``). Part of every run identity since
    before sections were registered, so at its defaults too (``identity_when_set=False``: configs
    keep their digests)."""

    args: list[str] = Field(default_factory=list)
    """Arguments after the executable, each one word (no shell)."""
    prompt: Literal["stdin", "file"] = "stdin"
    """Where the prompt goes: the command's standard input, or a file named by ``{prompt_file}``."""
    parts: Literal["conversation", "split"] = "conversation"
    """``conversation``: every message's content, joined by blank lines; ``split``: the user's part as
    the prompt, the system prompt apart as ``{system}`` or ``{system_file}``."""
    usage: Literal["none", "file", "fd"] = "none"
    """Where the command reports usage as JSON (``prompt_tokens``, ``completion_tokens``,
    ``cached_tokens``, ``cost``): ``file`` (``{usage_file}``, ``$ROTSCOPE_USAGE_FILE``), ``fd``
    (``{usage_fd}``, ``$ROTSCOPE_USAGE_FD``) or ``none``."""
    env: list[Annotated[str, Field(pattern=_ENV_NAME)]] = Field(default_factory=list)
    """Names of environment variables passed through (an API key, a model choice); only these,
    besides ``PATH``, ``HOME``, the user and the locale, reach the command. Their values never enter
    the run folder, and values of eight characters or more are redacted from replies and errors."""
    cwd: Annotated[str | None, PathOption()] = None
    """Working folder of the command; unset, each call gets an empty folder of its own, so an agent
    sees no project files it could read."""
    timeout_s: Annotated[Float, RuntimeOption()] = Field(default=600.0, gt=0.0)
    """Seconds one attempt may run; then its whole process group is killed (SIGTERM, then SIGKILL)."""
    max_attempts: Annotated[Int, RuntimeOption()] = Field(default=2, ge=1)
    """Attempts per call for a non-zero exit or a timeout; an empty reply is not retried."""
    backoff_initial_s: Annotated[Float, RuntimeOption()] = Field(default=1.0, ge=0.0)
    """Seconds before the first retry; each further wait doubles, up to ``backoff_max_s``."""
    backoff_max_s: Annotated[Float, RuntimeOption()] = Field(default=30.0, ge=0.0)
    """The longest wait between two attempts."""
    tokenizer: Annotated[
        str | None, PathOption(keep_prefix="tiktoken:", by_content="subject.tokenizer_digest")
    ] = None
    """Counts lengths, as ``remote.tokenizer`` does: a GGUF file, a ``tokenizer.json`` or
    ``tiktoken:NAME``; with none, lengths are an estimate and the run is marked approximate."""
    context_window: OptionalInt = Field(default=None, gt=0)
    """The window of the model behind the command, when the tokenizer does not say: longer planned
    lengths are refused, and ``--dry-run`` warns when a measured harness overhead would exceed it."""

    @field_validator("args")
    @classmethod
    def _known_placeholders(cls, args: list[str]) -> list[str]:
        for arg in args:
            for found in _PLACEHOLDER.findall(arg):
                if found not in CMD_PLACEHOLDERS:
                    raise ValueError(f"unknown placeholder {found} (known: {', '.join(CMD_PLACEHOLDERS)})")
        return args

    @model_validator(mode="after")
    def _placeholders_for_parts(self) -> CmdOptions:
        joined = " ".join(self.args)
        if self.prompt == "file" and "{prompt_file}" not in joined:
            raise ValueError("prompt: file needs {prompt_file} in cmd.args")
        if self.parts == "split" and "{system}" not in joined and "{system_file}" not in joined:
            raise ValueError("parts: split needs {system} or {system_file} in cmd.args")
        return self
