"""The examples of README.md and docs/*.md, read the way a reader reads them.

- A *session* is a fenced block with `$ ` lines: each `$ gpuplat ...` line is a command, the lines
  under it (up to the next `$ ` line) its expected output. A line `...` stands for any number of
  lines, `...` inside a line for any text (abridged output). `# exits N` after a command says
  its exit code (default 0). `$ cd DIR && gpuplat ...` runs the command and the rest of the
  block in DIR. A block whose first command is `gpuplat init` runs in a new empty directory (a
  new user's), every other block at the repository's root.
- A *citation* is any `gpuplat COMMAND --flag ...` in an inline code span or a code line: the
  command and each flag must exist.
- A *spec* is a fenced yaml block with `apiVersion: gpuplat/v1`: it must validate.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
_FENCE = re.compile(r"^(`{3,}|~{3,})(\S*)")
_EXITS = re.compile(r"\s+#\s*exits\s+(\d+)\s*$")
_CITATION = re.compile(r"(?:^|[`\s(])(?:\$ )?gpuplat ([a-z]+)\b([^`\n]*)")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    lines: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


@dataclass
class Command:
    line: int
    argv: list[str]
    cd: str | None
    exit_code: int
    expected: list[str] = field(default_factory=list[str])


def blocks(page: Path) -> list[Block]:
    out: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, start, body = match.group(1), i, []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        out.append(Block(page, start + 1, match.group(2), tuple(body)))
        i += 1
    return out


def all_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


def commands(block: Block) -> list[Command]:
    """The `$ gpuplat` commands of a session with their expected output ([] when none)."""
    found: list[Command] = []
    for n, text in enumerate(block.lines):
        if text.startswith("$ "):
            line = text[2:]
            code = _EXITS.search(line)
            line = _EXITS.sub("", line)
            cd = None
            if line.startswith("cd ") and " && " in line:
                head, _, line = line.partition(" && ")
                cd = head[3:].strip()
            argv = shlex.split(line, comments=True)
            found.append(Command(block.line + 1 + n, argv, cd, int(code.group(1)) if code else 0))
        elif found:
            found[-1].expected.append(text)
    return found


def expected_pattern(expected: list[str]) -> re.Pattern[str]:
    """`...` alone: any lines; `...` inside a line: any text on it; trailing blanks ignored."""
    parts: list[str] = []
    for line in expected:
        line = line.rstrip()
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append("[^\n]*".join(re.escape(piece) for piece in line.split("...")) + r"\n")
    return re.compile("".join(parts))


def normalise(output: str) -> str:
    text = "\n".join(line.rstrip() for line in output.splitlines())
    return text + "\n" if text else ""


def citations(block: Block | None, text: str) -> list[tuple[str, list[str]]]:
    """(command, its --flags) of every `gpuplat COMMAND ...` in code (a block or inline spans)."""
    sources = list(block.lines) if block is not None else re.findall(r"`([^`\n]+)`", text)
    out: list[tuple[str, list[str]]] = []
    for source in sources:
        for match in _CITATION.finditer(source):
            rest = re.split(r"\s(?:\||&&|;|#|>|2>)\s?", match.group(2))[0]
            try:
                words = shlex.split(rest)
            except ValueError:
                words = rest.split()
            out.append((match.group(1), [w.split("=")[0] for w in words if w.startswith("--")]))
    return out


def prose(page: Path) -> str:
    """The page without its fenced blocks (their lines replaced by blanks)."""
    fenced = {b.line - 1 + n for b in blocks(page) if b.page == page for n in range(len(b.lines) + 2)}
    lines = page.read_text(encoding="utf-8").splitlines()
    return "\n".join("" if i in fenced else line for i, line in enumerate(lines))
