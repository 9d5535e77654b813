"""``cmd/PATH``: the subject is a command run once per prompt (an agent CLI in print mode, or a
script around one), measured the way the user calls the model.

The prompt goes to the command's standard input or a file (``cmd.prompt``), whole or with the
system prompt apart (``cmd.parts``); the reply is its standard output. A command that reports usage
(``cmd.usage``) shows its harness overhead: its prompt tokens minus rotscope's count, which the
first call of each run also remembers for the next ``--dry-run``. It runs as a remote API does
(concurrently under ``limits.cmd``, through the response cache, retried), since a command may call
one; lengths are counted on ``cmd.tokenizer``, or estimated and marked approximate.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rotscope.backends import register_backend
from rotscope.backends.cmd.harness_overhead import overhead_key, remember_overhead, remembered_overhead
from rotscope.backends.cmd.options import CmdOptions
from rotscope.backends.cmd.process import Finished, TimedOut, run_in_group
from rotscope.backends.retry import Permanent, RetryPolicy, Transient, call_with_retries
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BackendRefused, BadInput
from rotscope.tokenizers.remote import is_approximate, load_tokenizer, render_plain
from rotscope.types import BackendDescription, Capabilities, Completion, GenerateRequest, Tokenizer

UNKNOWN_CONTEXT_WINDOW = 10_000_000
"""A command does not report its window: without ``cmd.context_window`` nothing is refused."""
PASSED_ALWAYS = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
"""Variables every command gets (where set): enough to find programs, a home and a locale."""
RUNTIME_OPTIONS = frozenset({"timeout_s", "max_attempts", "backoff_initial_s", "backoff_max_s"})
"""Options that change how a call is made, not its reply: outside the backend's identity."""
MAX_REPLY_BYTES = 64 * 1024 * 1024
"""A reply longer than this (64 MiB of standard output) is an error row, not a reply: the command
is stopped when it passes it, so a runaway command costs bounded memory."""
TEMP_PREFIX = "rotscope-cmd-"
"""Each call's temporary folder is ``TEMP_PREFIX`` + rotscope's pid + ``-`` + a random part, so a
run killed before it could remove them (SIGKILL) has them removed by the next one (``clean_stale``)."""
REDACTED = "[redacted]"
SECRET_MIN_CHARS = 8
_DETAIL_CHARS = 300


@dataclass(frozen=True)
class _Call:
    """One call's arguments, standard input and environment, in its own temporary folder."""

    argv: list[str]
    stdin: bytes | None
    env: dict[str, str]
    usage_path: Path | None
    usage_fd: int | None


class CmdBackend:
    """Runs ``executable`` once per request (see the module docstring)."""

    provider = "cmd"
    capabilities = Capabilities(harness_prompt=True)

    def __init__(self, name: str, options: CmdOptions) -> None:
        self.model_id = f"cmd/{name}"
        self.options = options
        self.executable = find_executable(name)
        if options.cwd is not None and not Path(options.cwd).is_dir():
            raise BadInput(f"cmd.cwd: {options.cwd} is not a folder")
        self._digest = file_digest(self.executable)
        self._tokenizer: Tokenizer = load_tokenizer(options.tokenizer, "cmd.tokenizer")
        window = options.context_window or getattr(self._tokenizer, "context_window", 0)
        self.window_known = bool(window)
        self.context_window = int(window or UNKNOWN_CONTEXT_WINDOW)
        self._policy = RetryPolicy(options.max_attempts, options.backoff_initial_s, options.backoff_max_s)
        self._measured = False
        clean_stale()

    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        return None

    def passed_env(self) -> dict[str, str]:
        """The command's environment: ``PASSED_ALWAYS`` and the named variables; a named one that
        is unset stops the run (every call would fail the same way)."""
        env = {name: os.environ[name] for name in PASSED_ALWAYS if name in os.environ}
        for name in self.options.env:
            if name not in os.environ:
                raise BackendRefused(f"cmd.env: environment variable {name} is not set ({self.model_id})")
            env[name] = os.environ[name]
        return env

    def redact(self, text: str) -> str:
        """``text`` with the values of the named variables replaced (an API key in an error)."""
        for name in self.options.env:
            value = os.environ.get(name, "")
            if len(value) >= SECRET_MIN_CHARS:
                text = text.replace(value, REDACTED)
        return text

    async def generate(self, request: GenerateRequest) -> Completion:
        started = time.perf_counter()
        env = self.passed_env()
        attempts = 0

        async def attempt() -> Completion:
            nonlocal attempts
            attempts += 1
            with tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}{os.getpid()}-") as folder:
                return await self._run_once(request, env, Path(folder))

        try:
            completion = await call_with_retries(attempt, self._policy)
        except BackendRefused:
            raise
        except (Transient, Permanent) as failure:
            suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
            return self._failed(f"{failure}{suffix}", started, attempts)
        except Exception as error:  # a fault of this call must not stop the run: an error row
            return self._failed(f"{type(error).__name__}: {error}", started, attempts)
        if completion.prompt_tokens and not self._measured:
            self._measured = True
            remember_overhead(self._overhead_key(), completion.prompt_tokens - len(request.token_ids))
        return Completion(
            text=self.redact(completion.text),
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            cached_tokens=completion.cached_tokens,
            latency_s=time.perf_counter() - started,
            attempts=attempts,
            cost=completion.cost,
        )

    async def _run_once(self, request: GenerateRequest, env: Mapping[str, str], folder: Path) -> Completion:
        call = self._prepare(request, env, folder)
        try:
            finished = await run_in_group(
                call.argv,
                stdin=call.stdin,
                env=call.env,
                cwd=self.options.cwd or str(folder),
                timeout_s=self.options.timeout_s,
                pass_fds=() if call.usage_fd is None else (call.usage_fd,),
                max_output_bytes=MAX_REPLY_BYTES,
            )
        except TimedOut as timed_out:
            raise Transient(str(timed_out)) from None
        except OSError as error:
            raise BackendRefused(f"model: {self.model_id}: cannot run {self.executable} ({error})") from None
        finally:
            if call.usage_fd is not None:
                os.close(call.usage_fd)
        if finished.over_limit:
            raise Permanent(f"reply over {MAX_REPLY_BYTES} bytes: the command was stopped there")
        self._check_exit(finished)
        reply = finished.stdout.decode("utf-8", errors="replace").strip()
        if not reply:
            raise Permanent("empty reply: the command wrote nothing to its standard output")
        usage = read_usage(call.usage_path) if call.usage_path is not None else {}
        return Completion(text=reply, **usage)

    def _prepare(self, request: GenerateRequest, env: Mapping[str, str], folder: Path) -> _Call:
        """Arguments with their placeholders replaced, the input and the files of one call."""
        system = "\n\n".join(m["content"] for m in request.messages if m.get("role") == "system")
        if self.options.parts == "split":
            prompt = render_plain([m for m in request.messages if m.get("role") != "system"])
        else:
            prompt = render_plain(request.messages)
        values = {"{system}": system}
        call_env = dict(env)
        if self.options.prompt == "file":
            values["{prompt_file}"] = _write(folder / "prompt.txt", prompt)
            call_env["ROTSCOPE_PROMPT_FILE"] = values["{prompt_file}"]
        if "{system_file}" in " ".join(self.options.args):
            values["{system_file}"] = _write(folder / "system.txt", system)
        usage_path: Path | None = None
        usage_fd: int | None = None
        if self.options.usage != "none":
            usage_path = folder / "usage.json"
            usage_path.touch()
            values["{usage_file}"] = call_env["ROTSCOPE_USAGE_FILE"] = str(usage_path)
        if self.options.usage == "fd":
            usage_fd = os.open(folder / "usage.json", os.O_WRONLY | os.O_APPEND)
            values["{usage_fd}"] = call_env["ROTSCOPE_USAGE_FD"] = str(usage_fd)
        argv = [str(self.executable), *(_fill(arg, values) for arg in self.options.args)]
        stdin = prompt.encode("utf-8") if self.options.prompt == "stdin" else None
        return _Call(argv, stdin, call_env, usage_path, usage_fd)

    def _check_exit(self, finished: Finished) -> None:
        if finished.returncode == 0:
            return
        status = (
            f"killed by signal {-finished.returncode}"
            if finished.returncode < 0
            else f"exit status {finished.returncode}"
        )
        detail = " ".join(self.redact(finished.stderr.decode("utf-8", errors="replace")).split())
        raise Transient(f"{status}: {detail[-_DETAIL_CHARS:]}" if detail else status)

    def _failed(self, message: str, started: float, attempts: int) -> Completion:
        return Completion(
            text="", latency_s=time.perf_counter() - started, error=self.redact(message), attempts=attempts
        )

    def measured_overhead(self) -> int | None:
        """The harness overhead the latest run of this command measured on its first call."""
        return remembered_overhead(self._overhead_key())

    def _overhead_key(self) -> str:
        """What decides the overhead: the command and how it is called, not the declared window."""
        description = self.describe()
        description.pop("context_window")
        description["options"].pop("context_window")
        return overhead_key(description)

    def describe(self) -> BackendDescription:
        return {
            "backend": self.provider,
            "model": self.model_id,
            "executable": str(self.executable),
            "model_digest": self._digest,
            "tokenizer": self._tokenizer.name,
            "tokenizer_digest": self._tokenizer.digest(),
            "token_count": "approximate" if is_approximate(self._tokenizer) else "exact",
            "context_window": self.context_window if self.window_known else None,
            "options": self.options.model_dump(mode="json", exclude=set(RUNTIME_OPTIONS)),
        }

    def close(self) -> None:
        return None


def find_executable(name: str) -> Path:
    """The file ``cmd/NAME`` runs: a path, or a command name found on ``$PATH``; bad input when it
    is missing, a folder, or not executable."""
    if not name:
        raise BadInput("model: cmd/ needs the path of an executable, e.g. cmd/./agent.sh")
    if "/" not in name:
        found = shutil.which(name)
        if found is None:
            raise BadInput(f"model: cmd/{name}: no command {name!r} on $PATH")
        return Path(found).resolve()
    path = Path(name).expanduser()
    if not path.exists():
        raise BadInput(f"model: cmd/{name}: no such file")
    if not path.is_file():
        raise BadInput(f"model: cmd/{name}: not a file")
    if not os.access(path, os.X_OK):
        raise BadInput(f"model: cmd/{name}: not executable (chmod +x {path})")
    return path.resolve()


def file_digest(path: Path) -> str:
    """SHA-256 of the executable: a command replaced behind the same path is another subject."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_usage(path: Path) -> dict[str, Any]:
    """The usage the command wrote (``prompt_tokens``, ``completion_tokens``, ``cached_tokens``,
    ``cost``; any may be missing); nothing written is no usage, anything else a fault of the call."""
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    if not text:
        return {}
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        usage: dict[str, Any] = {
            key: int(data[key])
            for key in ("prompt_tokens", "completion_tokens", "cached_tokens")
            if data.get(key) is not None
        }
        if data.get("cost") is not None:
            usage["cost"] = float(data["cost"])
    except (ValueError, TypeError) as error:
        raise Permanent(f"usage: cannot read {text[:80]!r} ({error})") from None
    if any(value < 0 for value in usage.values()):
        raise Permanent(f"usage: negative values in {text[:80]!r}")
    return usage


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


_PLACEHOLDER = re.compile(r"\{(?:system|prompt_file|system_file|usage_file|usage_fd)\}")


def _fill(arg: str, values: Mapping[str, str]) -> str:
    """``arg`` with its placeholders replaced in one pass: a value that holds a placeholder's name
    (a system prompt mentioning ``{usage_file}``) is passed as it is, never filled in turn."""
    return _PLACEHOLDER.sub(lambda found: values.get(found[0], found[0]), arg)


def clean_stale(folder: Path | None = None) -> list[Path]:
    """Remove the call folders of rotscope processes that are gone (killed before they could remove
    them); the removed folders. Only this user's, only with a dead pid in the name."""
    removed: list[Path] = []
    root = Path(folder or tempfile.gettempdir())
    try:
        candidates = list(root.glob(f"{TEMP_PREFIX}*-*"))
    except OSError:
        return removed
    for path in candidates:
        pid_text = path.name[len(TEMP_PREFIX) :].partition("-")[0]
        try:
            if not pid_text.isdigit() or path.lstat().st_uid != os.getuid() or not path.is_dir():
                continue
        except OSError:
            continue
        if _alive(int(pid_text)):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@register_backend(
    "cmd",
    likelihood="reads no answer likelihood: a command gives its reply only; --score accuracy only",
    hint="cmd/PATH: your executable (an agent CLI in print mode, a script) run once per prompt, prompt "
    "on stdin or in a file, reply on stdout, usage optional; options under cmd: (examples/agent-cli.yaml)",
)
def cmd_backend(name: str, config: ExperimentConfig) -> CmdBackend:
    return CmdBackend(name, config.section(CmdOptions))
