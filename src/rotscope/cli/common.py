"""The typer app every command registers on, its consoles, exit codes and the shared handling of
errors: bad input is one line on stderr and exit 2 (``_guarded``)."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console, ConsoleDimensions
from typer.core import TyperGroup

from rotscope._util.resume_hint import resume_command
from rotscope._util.safe_text import terminal_safe
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput, SessionStopped, write_failure

EXIT_BROKEN_PIPE = 141
"""stdout was closed before everything was written (``rotscope export DIR | head -1``): the
command ends at once and quietly with the status a shell gives a process killed by SIGPIPE
(128 + 13), as ``cat`` or ``seq`` would; a script under ``set -o pipefail`` sees the output cut."""


def _quiet_closed_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not complain again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a file descriptor (a test's captured stdout)
        pass


def unwrap_paragraphs(text: str) -> str:
    """A docstring's paragraphs each on one line: rich keeps a docstring's line breaks, so a help
    text wrapped at the source's 100 columns would break mid-sentence in a narrower listing."""
    paragraphs = [" ".join(line.strip() for line in part.splitlines()) for part in text.split("\n\n")]
    return "\n\n".join(paragraph for paragraph in paragraphs if paragraph)


class _Commands(TyperGroup):
    """Every command: a closed stdout pipe ends it quietly with ``EXIT_BROKEN_PIPE``; its help text
    is wrapped to the terminal, not to the source (``unwrap_paragraphs``)."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None and command.help:
            command.help = unwrap_paragraphs(command.help)
        return command

    def invoke(self, ctx: Any) -> Any:  # a click context (typer vendors click)
        try:
            try:
                return super().invoke(ctx)
            finally:
                sys.stdout.flush()  # what is still buffered meets the closed pipe here, not at exit
        except BrokenPipeError:
            _quiet_closed_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals could hold secrets
    help="Measure where a model stops using its context.",
)


LOG_WIDTH = 100
"""The width of output that is not a terminal (a file, a pipe, a CI log) unless ``COLUMNS`` says
otherwise: wide enough for a heat map's row and a line per length without wrapping mid-phrase."""


class _Console(Console):
    @property
    def size(self) -> ConsoleDimensions:
        """The terminal's size; ``LOG_WIDTH`` columns for a file or pipe (rich would take 80, or the
        width of whatever terminal stdin happens to be)."""
        size = super().size
        columns = self._environ.get("COLUMNS") or ""
        if columns.isdigit() and int(columns) > 0:  # asked for now, whatever width was set before
            return ConsoleDimensions(int(columns), size.height)
        if self._width is None and not self.is_terminal:
            return ConsoleDimensions(LOG_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size

    def on_broken_pipe(self) -> None:
        """rich would exit 1; a closed pipe ends the command as ``_Commands`` says."""
        self.quiet = True
        raise BrokenPipeError


console = _Console()
errors = _Console(stderr=True)
T = TypeVar("T")

EXIT_BAD_INPUT = 2
EXIT_BUDGET = 4
"""A run stopped by --max-cost: not done (so not 0, which scripts would take as complete), not
bad input (2), not a Ctrl-C (130); finished work is kept and --resume with a larger budget goes on."""
EXIT_ENGINE_CRASHED = 5
"""The local engine crashed repeatedly (its worker restarted each time); finished work is kept."""
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
"""SIGTERM (128 + 15): handled as Ctrl-C is (finished work kept, every command rotscope started
ended, its temporary folders removed), and reported with the status a shell expects of it."""
_terminated = False


def _terminate_as_interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM takes the path of Ctrl-C: the SIGINT handler in force (asyncio's, which cancels the
    calls in flight so that each one ends its command, or Python's ``KeyboardInterrupt``)."""
    global _terminated
    _terminated = True
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:  # SIGINT ignored (a background job of a script): SIGTERM still stops the run
        raise KeyboardInterrupt


def _interrupted_code() -> int:
    return EXIT_TERMINATED if _terminated else EXIT_INTERRUPTED


def _warn(message: str) -> None:
    """A warning on stderr, ``rotscope: warning: ...``; the command goes on."""
    errors.print(
        f"rotscope: warning: {terminal_safe(message)}", markup=False, highlight=False, soft_wrap=True
    )


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    # A server's error text is part of some messages: its control characters are shown escaped.
    errors.print(f"rotscope: {terminal_safe(message)}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _guarded(action: Callable[[], T]) -> T:
    """Run a command body; bad input becomes one line on stderr and exit 2, Ctrl-C exit 130; so does
    a write the disk or file system refused (disk full, read-only, no permission)."""
    from rotscope.execution.workflows.runner import BudgetReached, EngineStopped, Interrupted

    try:
        return action()
    except BadInput as error:
        _fail(str(error))
    except sqlite3.DatabaseError as error:
        # A store of a newer schema is refused by name when it is opened (BadInput above); what
        # reaches here is a write the disk refused or a file that is not a run store.
        reason = write_failure(error)
        _fail(f"run store: {reason} ({error})" if reason else f"run store unreadable ({error})")
    except OSError as error:
        reason = write_failure(error)
        if reason is None:
            raise
        _fail(f"cannot write {error.filename or 'an output'} ({reason})")
    except Interrupted as stop:
        _quiet_loop_finalizers()
        _fail(stop.line(), _interrupted_code())
    except BudgetReached as stop:
        _fail(
            f"stopped at budget: ${stop.spent:.4f} spent of --max-cost ${stop.max_cost:.4f}, the next call "
            f"could exceed it; {stop.done} of {stop.total} items done and kept in {stop.run_dir}; "
            f"continue with: {resume_command(stop.run_dir, '--max-cost LARGER')}",
            EXIT_BUDGET,
        )
    except EngineStopped as stop:
        _fail(
            f"stopped: {stop.reason}; {stop.done} of {stop.total} items done and kept in {stop.run_dir}; "
            f"check the machine with rotscope doctor, then: {resume_command(stop.run_dir)}",
            EXIT_ENGINE_CRASHED,
        )
    except SessionStopped as stop:
        _fail(str(stop), EXIT_BUDGET if stop.budget else _interrupted_code())
    except KeyboardInterrupt:
        _quiet_loop_finalizers()
        _fail("interrupted", _interrupted_code())


def _quiet_loop_finalizers() -> None:
    """After Ctrl-C the command ends with its one line: an asyncio loop that a SIGINT stopped inside
    ``asyncio.run``'s own cleanup is finalised at exit, and CPython prints its ``__del__``'s failure
    to close it as a traceback under the one line a user should see. Only that finaliser is
    silenced; any other unraisable error still reaches the default hook."""

    def hook(unraisable: Any) -> None:
        if getattr(unraisable.object, "__qualname__", "") == "BaseEventLoop.__del__":
            return
        sys.__unraisablehook__(unraisable)

    sys.unraisablehook = hook


SCORE_HELP = (
    "accuracy or likelihood (the gold answer's probability): the score the verdicts stand on; "
    "default accuracy where the run has replies, likelihood for a --score likelihood run."
)
"""The ``--score`` option of the commands that read runs (show, report, compare, gate, canary)."""


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def _numbers(value: str | None, kind: type, field: str) -> list[Any] | None:
    parts = _split(value)
    if parts is None:
        return None
    parsed: list[Any] = []
    for part in parts:
        try:
            parsed.append(kind(part))
        except ValueError:
            if field == "depths":
                parsed.append(part)
            else:
                raise BadInput(f"--{field}: {part!r} is not a number") from None
    return parsed


def _build(
    config_path: Path | None, overrides: dict[str, Any], sections: dict[str, dict[str, Any]] | None = None
) -> ExperimentConfig:
    """The experiment of a command's config file and options (``config.builder.build_experiment``)."""
    from rotscope.config.builder import build_experiment

    return build_experiment(config_path, overrides, sections)


def main() -> None:
    from rotscope.backends.cmd.process import stop_all

    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        app()
    except BadInput as error:  # one no command guards itself against (stale package metadata)
        try:
            _fail(str(error))
        except typer.Exit as stop:
            raise SystemExit(stop.exit_code) from None
    finally:
        stop_all()  # a command still running (an interrupt outside any call's own clean-up)
