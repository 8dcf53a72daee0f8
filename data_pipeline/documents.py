"""Input documents for pretraining: file lists, formats, and blocks of bounded size.

Formats:
  text   the official format: one sentence per line, a blank line between documents.
         With `split_sentences`, each line is further split into sentences (for corpora
         with one paragraph per line).
  jsonl  one JSON object per line whose `text` field is a document; it is split into
         lines at newlines and each line into sentences.
Either may be gzip-compressed (`.gz`). `auto` picks jsonl for `*.jsonl[.gz]`/`*.json[.gz]`.

Blocks. The corpus is cut into blocks of about `block_size` bytes so that memory is bounded
by one block and work can be spread over processes and machines. The cut is a pure
function of the file's bytes and `block_size`: block k of a plain file starts at the first
document start at or after byte k·block_size (a document start is a non-blank line that
follows a blank line, or any line in jsonl), so blocks can be read independently with a
seek, and never split a document. A gzip file cannot be seeked: it is one block, read as a
stream and cut into parts of about `block_size` decompressed bytes at document starts.

Bad input is never fatal where it can be counted: invalid UTF-8 is replaced (U+FFFD) and
counted per line; empty files and blank documents are counted. Malformed JSON fails with
the file and line.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
import zlib
from collections.abc import Iterator, Sequence

from data_pipeline.io import filesystem

FORMATS = ("auto", "text", "jsonl")


def expand_input_files(spec: str | Sequence[str]) -> list[str]:
    """Comma-separated globs (or a list of them) → sorted, de-duplicated file paths.

    Each pattern's matches are sorted so that the order (and so the output) does not depend
    on the file system. A pattern matching nothing is an error: a typo must not silently
    shrink a corpus; a directory says so, with the glob to give instead.
    """
    patterns = spec.split(",") if isinstance(spec, str) else list(spec)
    files, seen = [], set()
    for pattern in (p.strip() for p in patterns):
        if not pattern:
            continue
        matches = sorted(m for m in filesystem.glob(pattern) if filesystem.isfile(m))
        if not matches and filesystem.isdir(pattern):
            raise FileNotFoundError(
                f"input pattern {pattern!r} is a directory, not a file; give its files as a "
                f"glob ({filesystem.join(pattern, '*.txt')!r})"
            )
        if not matches:
            raise FileNotFoundError(f"input pattern {pattern!r} matches no file")
        for m in matches:
            if m not in seen:
                seen.add(m)
                files.append(m)
    return files


def file_format(path: str, fmt: str = "auto") -> str:
    if fmt not in FORMATS:
        raise ValueError(f"input format {fmt!r} is not one of {FORMATS}")
    if fmt != "auto":
        return fmt
    name = path[:-3] if path.endswith(".gz") else path
    return "jsonl" if name.endswith((".jsonl", ".json")) else "text"


@dataclasses.dataclass(frozen=True)
class Block:
    """A slice of one input file: [start, end) nominal byte offsets (plain files), or the
    whole stream (gzip: start=0, end=None)."""

    file_index: int
    path: str
    fmt: str
    block_index: int
    start: int
    end: int | None

    @property
    def compressed(self) -> bool:
        return self.end is None


def plan_blocks(files: Sequence[str], block_size: int, fmt: str = "auto") -> list[Block]:
    """Every block of every file, in corpus order (file order, then offset)."""
    if block_size < 1:
        raise ValueError(f"block_size={block_size} must be positive")
    blocks = []
    for i, path in enumerate(files):
        f = file_format(path, fmt)
        if path.endswith(".gz"):
            blocks.append(Block(i, path, f, 0, 0, None))
            continue
        size = filesystem.getsize(path)
        for k in range(max(1, -(-size // block_size))):
            blocks.append(Block(i, path, f, k, k * block_size, min((k + 1) * block_size, size)))
    return blocks


@dataclasses.dataclass
class ReadStats:
    """Counts of what reading saw and what it replaced or skipped (summed into meta_data)."""

    bytes: int = 0
    lines: int = 0
    documents: int = 0
    sentences: int = 0
    invalid_utf8_lines: int = 0
    empty_files: int = 0

    def add(self, other: ReadStats) -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))


def _doc_start(f, nominal: int, fmt: str) -> int:
    """The first document start at or after byte `nominal` of an open binary file."""
    if nominal == 0:
        return 0
    f.seek(nominal - 1)
    if f.read(1) != b"\n":
        f.readline()  # the rest of a line that began before `nominal`
    pos = f.tell()
    if fmt == "jsonl":
        return pos
    seen_blank = False
    while True:
        line = f.readline()
        if not line:
            return pos
        if not line.strip():
            seen_blank = True
        elif seen_blank:
            return pos
        pos += len(line)


def _decode_lines(data: bytes, stats: ReadStats) -> list[str]:
    try:
        return data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        lines = []
        for raw in data.split(b"\n"):
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                stats.invalid_utf8_lines += 1
                lines.append(raw.decode("utf-8", errors="replace"))
        return lines


# Sentence ends: Latin terminal punctuation followed by closers and whitespace, or CJK
# terminal punctuation (no whitespace needed) followed by closers.
_LATIN_END = re.compile(r"[.!?]+[\"'”’)\]]*\s+")
_CJK_END = re.compile(r"[。！？]+[”’」』）)]*")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs etc e.g i.e u.s no vol gen col lt sen rep gov inc ltd co "
    "fig jan feb mar apr jun jul aug sep sept oct nov dec mt ft".split()
)


def split_sentences(text: str) -> list[str]:
    """A paragraph → sentences (rule based, language-agnostic enough for English and
    Chinese). Does not split after common abbreviations ("Mr.", "U.S.") or initials
    ("J. Smith"), nor when the next word starts in lowercase."""
    cuts = []
    for m in _LATIN_END.finditer(text):
        nxt = text[m.end() : m.end() + 1]
        if not nxt or nxt.islower():
            continue
        if text[m.start()] == ".":
            word = text[: m.start()].rsplit(None, 1)[-1] if text[: m.start()].strip() else ""
            word = word.lstrip("\"'“‘([").lower()
            if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue
        cuts.append(m.end())
    for m in _CJK_END.finditer(text):
        cuts.append(m.end())
    sentences, prev = [], 0
    for cut in sorted(set(cuts)):
        piece = text[prev:cut].strip()
        if piece:
            sentences.append(piece)
        prev = cut
    tail = text[prev:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def _documents_from_lines(
    lines: list[str], fmt: str, split: bool, path: str, first_line: int, stats: ReadStats
) -> list[list[str]]:
    """Lines of a block → documents (lists of sentences). `first_line` is the 1-based line
    number of lines[0] in the file, or 0 when unknown (gzip parts count from their start)."""
    docs: list[list[str]] = []
    # `lines` comes from bytes.split(b"\n"): a final "" after the last newline is no line
    # (counting it would make `lines` depend on how the file is cut into blocks).
    stats.lines += len(lines) - (1 if lines and lines[-1] == "" else 0)
    if fmt == "jsonl":
        for n, line in enumerate(lines):
            if not line.strip():
                continue
            where = f"{path}:{first_line + n}" if first_line else path
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: invalid JSON ({e.msg} at column {e.colno})") from None
            except RecursionError:  # (arrays or objects nested too deep for the parser)
                raise ValueError(f"{where}: JSON nested too deeply to read") from None
            if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                raise ValueError(f"{where}: expected an object with a string 'text' field")
            doc = [s for para in record["text"].splitlines() for s in split_sentences(para)]
            if doc:
                docs.append(doc)
    else:
        doc: list[str] = []
        for line in lines:
            line = line.strip()
            if not line:
                if doc:
                    docs.append(doc)
                    doc = []
                continue
            if split:
                doc.extend(split_sentences(line))
            else:
                doc.append(line)
        if doc:
            docs.append(doc)
    stats.documents += len(docs)
    stats.sentences += sum(len(d) for d in docs)
    return docs


def _gzip_lines(f, path: str) -> Iterator[bytes]:
    """The lines of an open gzip stream; a truncated or damaged stream is a ValueError
    naming the input file and the last line read, not gzip's EOFError (which the writers
    would report against the output shard they were filling)."""
    lines = iter(f)
    count = 0
    while True:
        try:
            raw = next(lines)
        except StopIteration:
            return
        except (EOFError, zlib.error, gzip.BadGzipFile) as e:
            raise ValueError(
                f"{path}: a truncated or damaged gzip file (after line {count}: {e})"
            ) from None
        count += 1
        yield raw


def read_block(
    block: Block, block_size: int, split: bool = False, stats: ReadStats | None = None
) -> Iterator[tuple[int, list[list[str]]]]:
    """Documents of a block as (part, documents) pairs: one part for a plain-file block,
    parts of about `block_size` decompressed bytes for a gzip stream. Each document is a
    list of sentence strings (raw text; normalization belongs to the tokenizer)."""
    stats = stats if stats is not None else ReadStats()
    if not block.compressed:
        size = filesystem.getsize(block.path)
        with filesystem.open(block.path, "rb") as f:
            begin = _doc_start(f, block.start, block.fmt)
            end = _doc_start(f, block.end, block.fmt) if block.end < size else block.end
            whole_file = block.start == 0 and end == size
            if end <= begin:
                stats.empty_files += whole_file
                return
            f.seek(begin)
            data = f.read(end - begin)
            first_line = 0
            if block.fmt == "jsonl":  # line numbers only matter for jsonl errors
                f.seek(0)
                first_line = f.read(begin).count(b"\n") + 1
        stats.bytes += len(data)
        if whole_file and not data.strip():
            stats.empty_files += 1
        yield (
            0,
            _documents_from_lines(
                _decode_lines(data, stats), block.fmt, split, block.path, first_line, stats
            ),
        )
        return
    part, buffered, size, line_no, part_first = 0, [], 0, 0, 1
    seen_blank, any_text = False, False
    with filesystem.open(block.path, "rb") as raw_file, gzip.open(raw_file, "rb") as f:
        for raw in _gzip_lines(f, block.path):
            line_no += 1
            blank = not raw.strip()
            any_text = any_text or not blank
            starts_doc = (block.fmt == "jsonl" or seen_blank) and not blank
            if starts_doc and size >= block_size:
                stats.bytes += size
                yield (
                    part,
                    _documents_from_lines(
                        _decode_lines(b"".join(buffered), stats),
                        block.fmt,
                        split,
                        block.path,
                        part_first,
                        stats,
                    ),
                )
                part, buffered, size, part_first = part + 1, [], 0, line_no
            seen_blank = blank if block.fmt == "text" else False
            buffered.append(raw)
            size += len(raw)
    if not any_text:
        stats.empty_files += 1
    if buffered:
        stats.bytes += size
        yield (
            part,
            _documents_from_lines(
                _decode_lines(b"".join(buffered), stats),
                block.fmt,
                split,
                block.path,
                part_first,
                stats,
            ),
        )
