"""Reads a CSV text record by record, each record with the line of the text it starts on, so that a message
about a record can name its line. Price sheets imported (``app.kb.price_import``) and price files uploaded
(``app.domain.procurement.price_sheets``) are read with it.

A record can span lines (a quoted cell may hold a line break), so a record's line is counted from the
reader, not from the records before it. A record the ``csv`` module cannot read is refused with its line, by
the exception the caller's ``refuse`` makes: each reader says it in its own words.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator


def records(text: str, refuse: Callable[[int, csv.Error], Exception]) -> Iterator[tuple[int, list[str]]]:
    """Each record of ``text`` (an empty line: no cells) with the line it starts on, the first line 1; a
    malformed record raises ``refuse(line, error)``."""
    reader = csv.reader(io.StringIO(text, newline=""))
    line = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise refuse(line, exc) from exc
        yield line, cells
        line = reader.line_num + 1
