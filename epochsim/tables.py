"""Column tables for a command's results on stdout, laid out by rich.

Contract: `column_lines(headers, rows, right=())` returns the table as plain text lines (no
colour, no box, no wrapping however wide the rows: a log or a pipe gets whole lines), the
columns named in `right` right-aligned, columns two spaces apart. Cells are strings.
"""

from __future__ import annotations

import io


def column_lines(headers: list[str], rows: list[list[str]], right=()) -> list[str]:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 1), header_style="",
                  show_header=True)
    for h in headers:
        table.add_column(h, justify="right" if h in right else "left", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    width = sum(max([len(h)] + [len(r[i]) for r in rows]) + 2 for i, h in enumerate(headers))
    buf = io.StringIO()
    Console(file=buf, width=width + 8, color_system=None, highlight=False,
            emoji=False, markup=False).print(table)
    return [line.rstrip() for line in buf.getvalue().splitlines()]
