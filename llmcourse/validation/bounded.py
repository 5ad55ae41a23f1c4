"""Reading a measured file, or text, within bounds: at most :data:`MAX_ROWS` rows and :data:`MAX_LINES` lines,
:data:`MAX_BYTES` of text, :data:`MAX_CELL` characters a cell and :data:`MAX_LINE` a line, :data:`MAX_DEPTH` levels of
JSON; streamed (a file is never read whole), its encoding told by its byte-order mark or refused with a line
saying what to do."""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from llmcourse.errors import InputError
from llmcourse.validation.cells import escaped, one_line, shortened

# --- reading a file or text within bounds -------------------------------------------------------------
#: The most rows of a measured file read (the rest is left unread, and :attr:`Loaded.stopped` says so): a fit over
#: 20,000 rows takes seconds; a million rows would take minutes and gigabytes.
MAX_ROWS = 20_000


#: The most text read from one file: a CSV stops at the end of the row that crosses it (and says so); a JSON document
#: longer than this is refused (it cannot be read in part). A vllm bench result is a few kilobytes.
MAX_BYTES = 32 * 2**20


#: The most lines read from one file (a CSV's blank lines and the lines of its quoted cells count): a file of
#: millions of blank lines stops here, in a fraction of a second.
MAX_LINES = 50 * MAX_ROWS


#: The longest cell of a CSV (the csv module's own default limit): a longer one refuses the file with its row and column.
MAX_CELL = 128 * 2**10


#: The longest line of a CSV (a row of several long cells); a longer one refuses the file with its row.
MAX_LINE = 2**20


#: The deepest nesting of JSON arrays and objects read (a vllm bench result nests two levels).
MAX_DEPTH = 64


#: The most digits of a whole number in JSON read as a number (a longer one is kept as text, and refused as a count).
_MAX_DIGITS = 40


_UNDECODED = re.compile("[\udc80-\udcff]")  # the bytes that did not decode (surrogateescape)


_BOMS = (  # byte-order marks, longest first (UTF-32's little-endian mark begins with UTF-16's)
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)  # fmt: skip


def _size(n: int) -> str:
    return f"{n // 2**20:,} MiB" if n >= 2**20 else f"{n // 2**10:,} KiB"


class BoundedText:
    """A text stream read in bounded pieces: lines of at most :data:`MAX_LINE` characters, at most
    :data:`MAX_BYTES` characters in all; text that did not decode is refused with its line."""

    def __init__(self, stream: IO[str], source: str, *, decoded: bool) -> None:
        self.stream, self.source, self.decoded = stream, source, decoded
        self.lines = 0  # physical lines read
        self.chars = 0
        self.stopped = False  # MAX_BYTES reached before the end
        self.row = 1  # the row being read (the header is row 1), for messages
        self.header: list[str] = []

    def _check(self, text: str, line: int) -> None:
        if self.decoded:
            bad = _UNDECODED.search(text)
            if bad is not None:
                line += text.count("\n", 0, bad.start())
                raise InputError(
                    f"{self.source}: line {line:,} holds the byte {ord(bad.group()) - 0xDC00:#04x}, which is not "
                    "UTF-8 text (a binary file, or text saved as Latin-1 or Windows-1252?): save the file as UTF-8."
                )

    def readline(self, *, check: bool = True) -> str:
        """The next line ('' at the end), of at most :data:`MAX_LINE` characters: a longer one refuses the text
        (with ``check``), or is its first :data:`MAX_LINE` + 1 characters (without: JSON's lines may be long)."""
        line = self.stream.readline(MAX_LINE + 1)
        if not line:
            return ""
        self.lines += 1
        self._check(line, self.lines)
        if check:
            self.too_long(line)
        self.chars += len(line)
        return line

    def too_long(self, line: str) -> None:
        """Refuse a CSV line longer than :data:`MAX_LINE`, naming the row and the column of any cell over
        :data:`MAX_CELL` in it."""
        if len(line) > MAX_LINE:
            raise InputError(
                _too_long(self.source, self.row, line, self.header, f"a line longer than {_size(MAX_LINE)}")
            )

    def __iter__(self) -> Iterator[str]:
        while self.chars < MAX_BYTES and self.lines < MAX_LINES:
            line = self.readline()
            if not line:
                return
            yield line
        self.stopped = bool(self.stream.read(1))

    def rest(self) -> str:
        """The rest of the text, refused past :data:`MAX_BYTES`."""
        text = self.stream.read(MAX_BYTES + 1 - self.chars)
        self._check(text, self.lines + 1)
        self.chars += len(text)
        if self.chars > MAX_BYTES:
            raise InputError(
                f"{self.source}: more than {_size(MAX_BYTES)} of JSON, the most read (a vllm bench result is a few "
                "kilobytes; --save-detailed adds every request's times): save the results without it, or split them."
            )
        return text


def _too_long(source: str, row: int, line: str, header: list[str], what: str) -> str:
    """The message for row ``row`` holding a cell longer than :data:`MAX_CELL` (or a line longer than
    :data:`MAX_LINE`), naming the column where the line read shows it."""
    col, field, quoted = 0, 0, False
    for c in line:  # the fields of the line so far, with the csv module's default dialect
        if c == '"':
            quoted = not quoted
        elif c == "," and not quoted:
            col, field = col + 1, 0
            continue
        field += 1
        if field > MAX_CELL:
            name = repr(shortened(header[col])) if col < len(header) else f"{col + 1} (past the header's)"
            return (
                f"{escaped(source)}: row {row:,}, column {escaped(name)}: a cell longer than {_size(MAX_CELL)}, the "
                "most read; a measured file's cells are short (a name, a number): trim it."
            )
    return f"{escaped(source)}: row {row:,}: {what}, the most read; a measured file's rows are short: trim it."


def _json_int(text: str) -> int | str:
    """A JSON whole number, kept as its text past :data:`_MAX_DIGITS` digits (Python refuses to read more than 4,300
    digits as an int; the readers refuse a count past :data:`MOST_WHOLE`, naming the text)."""
    return int(text) if len(text) <= _MAX_DIGITS else text


def _depth(data: Any) -> int:
    """How deeply JSON arrays and objects nest in ``data`` (without recursion), stopping past :data:`MAX_DEPTH`."""
    deepest, todo = 0, [(data, 1)]
    while todo:
        x, d = todo.pop()
        if isinstance(x, dict | list):
            deepest = max(deepest, d)
            if d > MAX_DEPTH:
                break
            todo.extend((v, d + 1) for v in (x.values() if isinstance(x, dict) else x))
    return deepest


def json_records(text: str, source: str) -> list[Any]:
    def load(part: str) -> Any:
        try:
            return json.loads(part, parse_int=_json_int)
        except RecursionError:
            raise InputError(
                f"{escaped(source)}: JSON nested deeper than Python's reader allows; a vllm bench result nests two "
                "levels."
            ) from None

    text = text.strip()
    try:
        data = load(text)
    except json.JSONDecodeError:
        try:  # --append-result writes one JSON object per line
            data = [load(x) for x in text.splitlines() if x.strip()]
        except json.JSONDecodeError as exc:
            raise InputError(f"the text starts like JSON but is not valid JSON ({exc}).") from None
    if _depth(data) > MAX_DEPTH:
        raise InputError(
            f"{escaped(source)}: JSON nested more than {MAX_DEPTH} levels deep; a vllm bench result nests two levels."
        )
    return data if isinstance(data, list) else [data]


class BoundedRows:
    """The records of a CSV read from a :class:`BoundedText`: at most :data:`MAX_ROWS`, each cell at most :data:`MAX_CELL`
    characters; a cell or line too long refuses the file with its row and column (the row is the record's, the
    header row 1, as the readers number them)."""

    def __init__(self, text: BoundedText, first: str) -> None:
        self.text = text
        self.more = False  # rows left unread past MAX_ROWS
        self._last = first
        lines = self._lines(first)
        self.reader = csv.DictReader(lines)
        self.header = [str(h) for h in self._guard(lambda: self.reader.fieldnames) or ()]
        text.header = self.header

    def _lines(self, first: str) -> Iterator[str]:
        self._last = first
        yield first
        for line in self.text:
            self._last = line
            yield line

    def _guard(self, read: Any) -> Any:
        try:
            return read()
        except csv.Error as exc:
            if "field larger than field limit" in str(exc):
                raise InputError(_too_long(self.text.source, self.text.row, self._last, self.header, "")) from None
            raise InputError(f"{escaped(self.text.source)}: row {self.text.row:,} is not CSV ({exc}).") from None

    def __iter__(self) -> Iterator[dict[str, str]]:
        n = 0
        while True:
            self.text.row = n + 2
            r = self._guard(lambda: next(self.reader, None))
            if r is None:
                return
            if n == MAX_ROWS:
                self.more = True
                return
            for k, v in r.items():
                cells = [v] if isinstance(v, str) else v if isinstance(v, list) else []  # a list: cells past the header
                if any(len(x) > MAX_CELL for x in cells):
                    col = repr(shortened(k)) if isinstance(k, str) else f"{len(self.header) + 1} (past the header's)"
                    raise InputError(
                        f"{escaped(self.text.source)}: row {n + 2:,}, column {escaped(col)}: a cell longer than "
                        f"{_size(MAX_CELL)}, the most read; a measured file's cells are short (a name, a number): trim it."
                    )
            n += 1
            yield r

    def stopped(self) -> str:
        """The line saying where reading stopped short of the end of the file ('' where it did not)."""
        if self.more:
            return (
                f"{one_line(self.text.source)}: read the first {MAX_ROWS:,} rows, the most read from one file; the rest was not "
                "read: split the file to validate the rest."
            )
        if self.text.stopped:
            return (
                f"{one_line(self.text.source)}: read the first {self.text.lines:,} lines ({_size(self.text.chars)}) of the file, "
                f"the most read from one file ({MAX_LINES:,} lines, {_size(MAX_BYTES)}); the rest was not read: split "
                "the file to validate the rest."
            )
        return ""


def open_text(p: Path) -> IO[str]:
    """A measured file opened as text: UTF-8 (its byte-order mark dropped), or UTF-16 or UTF-32 with a byte-order
    mark; a binary file, a folder or a path with no file refused with a line saying so."""
    where = escaped(repr(str(p)))
    if p.is_dir():
        raise InputError(f"{where} is a folder: give the path to a measured file (a CSV, or a vllm bench JSON) in it.")
    try:
        raw = open(p, "rb")  # noqa: SIM115 - the caller closes the text stream, which closes this
    except FileNotFoundError:
        raise InputError(f"no file at {where}: give the path to a measured CSV or vllm JSON.") from None
    except OSError as exc:
        raise InputError(f"cannot read {where}: {exc.strerror or type(exc).__name__}.") from None
    try:
        head = raw.peek(4096)[:4096]
        encoding = next((enc for bom, enc in _BOMS if head.startswith(bom)), "utf-8")
        if encoding == "utf-8" and b"\x00" in head:
            raise InputError(
                f"{where} is a binary file (or UTF-16 text without a byte-order mark), not a measured CSV or JSON: "
                "give the text file (save it as UTF-8)."
            )
        return io.TextIOWrapper(raw, encoding=encoding, errors="surrogateescape", newline=None)
    except BaseException:
        raw.close()
        raise
