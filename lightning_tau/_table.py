"""Fixed-width text tables for what the package prints (pre-flight summary, transfer table, sweep optima)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["table_lines"]


def table_lines(
    columns: Sequence[str], rows: Sequence[Sequence[str]], *, rule: bool = True, indent: str = ""
) -> list[str]:
    """Header, an optional rule, and one line per row, each column padded to its widest cell.

    Example:
        >>> print("\\n".join(table_lines(["Group", "lr"], [["pg1", "0.001"], ["matrices", "0.01"]])))
        Group    | lr
        -------------
        pg1      | 0.001
        matrices | 0.01
    """
    widths = [max([len(column), *(len(row[i]) for row in rows)]) for i, column in enumerate(columns)]

    def line(cells: Sequence[str]) -> str:
        return indent + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip()

    header = line(columns)
    return [header, *([indent + "-" * (len(header) - len(indent))] if rule else []), *(line(r) for r in rows)]
