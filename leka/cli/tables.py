"""The one table writer: every table leka prints or writes (CLI tables, live views, the Markdown and HTML
of `bench report`, `experiment run` and `optimize`) is rendered here, with its cells formatted by `fmt_cell`
and long names shortened from the middle by `shorten_middle`.

Terminal and pipes: one description of the columns (`Col`), three renderings. "rich": a boxed table that
fits the terminal (80 columns and up): id columns are never split (no wrap; the longest id sets the
column's minimum width), descriptions are cut with an ellipsis, free text wraps. "plain": aligned columns
separated by two spaces, one line per row, laid out like "rich" for PLAIN_WIDTH (80) columns: optional
columns left out, names cut from the middle, descriptions and text cut at the end, ids and numbers whole.
"wide": the same, nothing left out or cut (logs, `less`). "tsv": one line per row, tab-separated, header
first (scripts). `--plain`, `--wide` and `--tsv` choose; when stdout is not a terminal, "plain" (or with
`--wide`, "wide") is the default.
Files: `markdown` (a GitHub table) and `html_table`.
"""
from __future__ import annotations

import html
import sys
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

KINDS = ("id", "text", "desc", "name", "num")
MISSING = "—"  # no value (no baseline, nothing correct to time): never printed as 0


def fmt_cell(x: Any, pct: bool = False) -> str:
    """A metric as a table cell: MISSING for None, a fraction as a percentage, floats to 3 significant digits."""
    if x is None:
        return MISSING
    if pct:
        return f"{100 * x:.1f}%"
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def shorten_middle(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut from the middle (`fused_mat…_add_relu`): the start and the
    end of a name tell names apart, so both are kept."""
    if len(text) <= width:
        return text
    if width < 3:
        return text[:width]
    tail = (width - 1) // 2
    return text[:width - 1 - tail] + "…" + text[len(text) - tail:]


def markdown_table(head: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub Markdown table (a `|` inside a cell is escaped)."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def html_table(head: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


@dataclass(frozen=True)
class Col:
    name: str
    kind: str = "text"  # id: never split; text: wraps; desc: cut at the end; name: cut from the middle; num
    optional: bool = False  # left out (rightmost first) when the terminal is too narrow for every column
    want: int = 8  # desc/text: the width it needs before optional columns give way to it

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"column kind {self.kind!r}; known: {KINDS}")


PLAIN_WIDTH = 80  # a "plain" table (piped, --plain) fits this many columns; "wide" has no limit


def add_output_flags(p: Any, wide: str = "") -> None:
    """--plain / --tsv (and --wide) on a subcommand that prints tables. `wide`: the help of a --wide that
    also adds columns (default: every column, nothing cut, wider than 80 columns)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--plain", action="store_true", help="aligned text, no boxes or colours, 80 columns "
                                                        "(default when piped)")
    g.add_argument("--tsv", action="store_true", help="tab-separated values with a header line")
    p.add_argument("--wide", action="store_true", help=wide or "aligned text with every column and nothing cut "
                                                               "(may be wider than 80 columns)")


def output_mode(args: Any, stream: Any = None) -> str:
    if getattr(args, "tsv", False):
        return "tsv"
    if getattr(args, "wide", False):
        return "wide"
    if getattr(args, "plain", False):
        return "plain"
    stream = stream or sys.stdout
    return "rich" if getattr(stream, "isatty", lambda: False)() else "plain"


def _clean(cell: Any) -> str:
    return " ".join(str("" if cell is None else cell).split())  # one line per cell outside rich


MIN_FLEX = 8  # narrowest a desc/text column is drawn


# the characters a table spends outside its cells, per column and once: rich draws "│ " + " " around each
# cell and one closing border; plain puts two spaces between cells
RICH_FRAME, PLAIN_FRAME = (3, 1), (2, -2)


def _flex_widths(cols: Sequence[Col], longest: list[int], width: int,
                 frame: tuple[int, int] = RICH_FRAME) -> dict[int, int]:
    """Widths of the desc/text columns once the id and number columns have theirs (never cut)."""
    fixed = sum(n for c, n in zip(cols, longest) if c.kind in ("id", "num"))
    # the narrowest first: what a short column does not need goes to the wide ones
    flex = sorted((i for i, c in enumerate(cols) if c.kind in ("desc", "name", "text")), key=lambda i: longest[i])
    room = width - fixed - frame[0] * len(cols) - frame[1]
    out: dict[int, int] = {}
    for n, i in enumerate(flex):
        share = max(MIN_FLEX, room // (len(flex) - n))
        out[i] = min(longest[i], share)
        room -= out[i]
    return out


def _fitting(cols: Sequence[Col], longest: list[int], width: int, frame: tuple[int, int] = RICH_FRAME) -> list[int]:
    """Indices of the columns shown: every one, less optional ones (rightmost first) until it fits."""
    keep = list(range(len(cols)))

    def need(idx: list[int]) -> int:
        return sum(longest[i] if cols[i].kind in ("id", "num") else min(longest[i], cols[i].want) for i in idx) \
            + frame[0] * len(idx) + frame[1]
    for i in reversed(range(len(cols))):
        if need(keep) <= width:
            break
        if cols[i].optional:
            keep.remove(i)
    return keep


def rich_table(title: str | None, cols: Sequence[Col], rows: Sequence[Sequence[Any]], width: int,
               caption: str | None = None) -> Any:
    """A rich Table laid out for `width` columns (see the module docstring)."""
    from rich.markup import escape
    from rich.table import Table

    cells = [[str("" if x is None else x) for x in r] for r in rows]
    longest = [max([len(c.name)] + [len(r[i]) for r in cells]) for i, c in enumerate(cols)]
    keep = _fitting(cols, longest, width)
    cols, longest = [cols[i] for i in keep], [longest[i] for i in keep]
    cells = [[r[i] for i in keep] for r in cells]
    flex = _flex_widths(cols, longest, width)
    t = Table(title=escape(title) if title else None, caption=escape(caption) if caption else None)
    for i, c in enumerate(cols):
        if c.kind in ("id", "num"):
            t.add_column(c.name, no_wrap=True, min_width=longest[i], justify="right" if c.kind == "num" else "left")
        elif c.kind in ("desc", "name"):
            t.add_column(c.name, no_wrap=True, overflow="ellipsis", width=flex[i])
        else:
            t.add_column(c.name, overflow="fold", min_width=min(flex[i], longest[i]), max_width=flex[i])
    for r in cells:
        t.add_row(*(escape(shorten_middle(x, flex[i]) if c.kind == "name" else x) for i, (x, c) in
                    enumerate(zip(r, cols))))
    return t


def render_rich(title: str | None, cols: Sequence[Col], rows: Sequence[Sequence[Any]], console: Any = None,
                caption: str | None = None) -> None:
    from rich.console import Console

    console = console or Console()
    console.print(rich_table(title, cols, rows, console.width, caption))


def _cut(text: str, kind: str, width: int) -> str:
    """A cell in `width` characters: a name from the middle, a description or text at the end."""
    if len(text) <= width:
        return text
    return shorten_middle(text, width) if kind == "name" else text[:max(width - 1, 0)] + "…"


def _fit_plain(cols: Sequence[Col], lines: list[list[str]], width: int) -> tuple[list[Col], list[list[str]]]:
    """The columns and cells (header first) of a plain table laid out for `width`, as rich_table does."""
    longest = [max(len(r[i]) for r in lines) for i in range(len(cols))]
    keep = _fitting(cols, longest, width, PLAIN_FRAME)
    kept, longest = [cols[i] for i in keep], [longest[i] for i in keep]
    flex = _flex_widths(kept, longest, width, PLAIN_FRAME)
    return kept, [[_cut(r[k], c.kind, flex[i]) if i in flex else r[k] for i, (k, c) in enumerate(zip(keep, kept))]
                  for r in lines]


def render_text(title: str | None, cols: Sequence[Col], rows: Sequence[Sequence[Any]], mode: str,
                stream: Any = None, caption: str | None = None) -> None:
    stream = stream or sys.stdout
    lines = [[c.name for c in cols]] + [[_clean(x) for x in r] for r in rows]
    if mode == "tsv":
        for line in lines:
            print("\t".join(x.replace("\t", " ") for x in line), file=stream)
        return
    if mode == "plain":
        cols, lines = _fit_plain(cols, lines, PLAIN_WIDTH)
    widths = [max(len(x) for x in col) for col in zip(*lines)]
    note = (lambda t: shorten_middle(t, PLAIN_WIDTH - 2)) if mode == "plain" else (lambda t: t)
    if title:
        print(f"# {note(title)}", file=stream)
    for line in lines:
        parts = [x.rjust(w) if c.kind == "num" else x.ljust(w) for x, w, c in zip(line, widths, cols)]
        print("  ".join(parts).rstrip(), file=stream)
    if caption:
        print(f"# {note(caption)}", file=stream)


def render(title: str | None, cols: Sequence[Col], rows: Sequence[Sequence[Any]], mode: str = "rich",
           console: Any = None, caption: str | None = None) -> None:
    if mode == "rich":
        render_rich(title, cols, rows, console, caption)
    else:
        render_text(title, cols, rows, mode, caption=caption)
