"""Long lines broken where a reader pauses: after a clause's ``;`` or ``,`` outside brackets, never
inside an interval such as ``[0.22, 1.00]`` or a phrase, so a log of fixed width reads as the
terminal does."""

from __future__ import annotations

from rich.console import Console


def _clauses(text: str, deepest: int = 0) -> list[str]:
    """``text`` cut after each ``"; "`` or ``", "`` at bracket depth ``deepest`` or less (each piece
    keeps its mark; the space is the break)."""
    pieces, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif char in ";," and depth <= deepest and text[index + 1 : index + 2] == " ":
            pieces.append(text[start : index + 1])
            start = index + 2
    pieces.append(text[start:])
    return [piece for piece in pieces if piece]


def _words(piece: str, room: int) -> list[str]:
    """A clause longer than a line, cut between words (its leading spaces kept on its first line)."""
    words = piece.lstrip(" ")
    lead = piece[: len(piece) - len(words)]
    lines, line = [], ""
    for word in words.split(" "):
        if line and len(line) + 1 + len(word) > room:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines = [*lines, line] if line else lines
    return [lead + lines[0], *lines[1:]] if lines else lines


def _pieces(text: str, room: int) -> list[str]:
    """The pieces a line is built of: clauses; a clause longer than ``room`` cut at the clauses of
    its parenthesis, then between words."""
    out: list[str] = []
    for piece in _clauses(text):
        if len(piece) <= room:
            out.append(piece)
            continue
        for inner in _clauses(piece, deepest=1):
            out.extend([inner] if len(inner) <= room else _words(inner, room))
    return out


def clause_wrap(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` as lines of at most ``width`` columns (a word longer than a line excepted), broken
    after clauses; continuation lines start with ``indent``. With no indent, joining the lines with
    one space gives ``text`` back."""
    if len(text) <= width:
        return [text]
    lines: list[str] = []
    line = ""
    for piece in _pieces(text, width - len(indent)):
        if line and len(line) + 1 + len(piece) <= width:
            line = f"{line} {piece}"
            continue
        if line:
            lines.append(line)
        line = (indent if lines else "") + piece
    lines.append(line)
    return lines


def say(console: Console, text: str, style: str | None = None, indent: str | None = None) -> None:
    """A plain line (never markup), broken after clauses to the console's width; a continuation is
    indented four columns past the line's own indent unless ``indent`` says otherwise."""
    if indent is None:
        indent = " " * (len(text) - len(text.lstrip(" ")) + 4)
    for line in clause_wrap(text, console.width, indent):
        console.print(line, style=style, markup=False, highlight=False, soft_wrap=True)
