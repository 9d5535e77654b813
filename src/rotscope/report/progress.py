"""The run's progress bar: items done, prompt tokens per second, time left."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from rotscope._util.safe_text import terminal_safe
from rotscope.types import Completion, WorkItem


class ProgressBar:
    """A ``runner.Reporter``; time left is estimated on prompt tokens, which dominate local cost."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("[bold]items {task.fields[items]}"),
            BarColumn(),
            TextColumn("{task.fields[rate]} prompt tok/s"),
            TextColumn("errors {task.fields[errors]}"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._task = self._progress.add_task("run", total=1, rate="-", errors=0, items="0/0")
        self._items_total = 0
        self._tokens_total = 0
        self._tokens_done = 0
        self._items_done = 0
        self._errors = 0
        self._started = time.perf_counter()

    def start(self, items: int, prompt_tokens: int) -> None:
        self._items_total = items
        self._tokens_total = max(prompt_tokens, 1)
        self._started = time.perf_counter()
        self._progress.update(self._task, total=self._tokens_total, items=f"0/{items}")
        self._progress.start()

    def advance(self, item: WorkItem, completion: Completion) -> None:
        self._items_done += 1
        self._tokens_done += item.prompt.prompt_tokens
        self._errors += completion.error is not None
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        self._progress.update(
            self._task,
            completed=self._tokens_done,
            items=f"{self._items_done}/{self._items_total}",
            rate=f"{self._tokens_done / elapsed:,.0f}",
            errors=self._errors,
        )

    def finish(self) -> None:
        self._progress.stop()

    def notice(self, message: str) -> None:
        self._progress.console.print(terminal_safe(message), markup=False, highlight=False, soft_wrap=True)
