"""The documents of `python -m train.prepare`'s input, streamed in pieces.

`input` is a path taken literally (no glob patterns): a file, or a folder
read recursively with symbolic links followed once (each real file and
folder read once, by device and inode; a link back into what is read
already, such as `loop -> .`, is skipped and named).

Documents, files in sorted order:
  .txt      separated by <|endoftext|> (TinyStories' files); a file without
            one is one document; read in blocks of BLOCK_BYTES;
  .jsonl    one JSON object per line (at most MAX_LINE_BYTES), its `field`
            (default 'text'), a string;
  .parquet  its `field` column, of strings, read in batches of
            PARQUET_ROWS rows (needs pyarrow).
Each document, stripped of surrounding whitespace, comes as pieces of at
most PIECE_CHARS characters (`split_text`), so that no file, line or
document is ever encoded whole. A defect is one ValueError naming the file,
the line or row, and what is allowed.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
from typing import Iterator

from train.text import tokenizers

SUFFIXES = (".txt", ".jsonl", ".parquet")
PIECE_CHARS = 1 << 18  # A longer document is encoded in pieces.
BLOCK_BYTES = 1 << 20  # A .txt file is read this many bytes at a time.
MAX_LINE_BYTES = 1 << 26  # The longest .jsonl line (64 MiB).
PARQUET_ROWS = 256  # Rows of a .parquet column read at a time.
_EOT = tokenizers.EOT
_SURROGATE = re.compile("[\ud800-\udfff]")  # JSON's "\ud800": not UTF-8.


def _inode(path: str) -> tuple[int, int, int] | None:
  """(device, inode, mode) of what `path` leads to; None if unreadable."""
  try:
    st = os.stat(path)
  except OSError:  # A dangling link, a link to itself, no permission.
    return None
  return st.st_dev, st.st_ino, st.st_mode


def input_files(spec: str) -> tuple[list[str], list[str]]:
  """(the .txt/.jsonl/.parquet files `spec` names, sorted; the links
  skipped as leading to a folder or file read already, or nowhere)."""
  if os.path.isfile(spec):
    if not spec.endswith(SUFFIXES):
      raise ValueError(f"`input` {spec!r} is not a {'/'.join(SUFFIXES)} "
                       "file.")
    return [spec], []
  if not os.path.isdir(spec):
    raise ValueError(f"`input` {spec!r} is not a file or folder (taken "
                     "literally, no glob patterns: put the files in a "
                     "folder).")
  seen, files, skipped = {_inode(spec)[:2]}, [], []
  for root, dirs, names in os.walk(spec, followlinks=True):
    keep = []
    for name in sorted(dirs):
      path, key = os.path.join(root, name), _inode(os.path.join(root, name))
      if key is None or key[:2] in seen:
        skipped.append(path)
      else:
        seen.add(key[:2])
        keep.append(name)
    dirs[:] = keep  # os.walk descends into these only.
    for name in sorted(n for n in names if n.endswith(SUFFIXES)):
      path, key = os.path.join(root, name), _inode(os.path.join(root, name))
      if key is None or key[:2] in seen:
        skipped.append(path)
      elif stat.S_ISREG(key[2]):
        seen.add(key[:2])
        files.append(path)
  if not files:
    raise ValueError(f"`input` {spec!r} holds no {'/'.join(SUFFIXES)} "
                     "files.")
  return sorted(files), skipped


def split_text(text: str, limit: int = PIECE_CHARS) -> Iterator[str]:
  """`text` in pieces of at most `limit` characters, joined = `text`: cut
  before a space between two words (where the byte-level BPEs' pre-
  tokenizers cut too, so the pieces encode as the whole does), else before
  any whitespace, else at `limit`."""
  start = 0
  while len(text) - start > limit:
    cut = _cut(text, start, start + limit)
    yield text[start:cut]
    start = cut
  yield text[start:]


def _cut(text: str, lo: int, hi: int) -> int:
  """Where split_text cuts text[lo:] (lo < cut <= hi < len(text))."""
  p = text.rfind(" ", lo + 1, hi + 1)
  for _ in range(256):  # Words first: ' ' between two non-spaces.
    if p <= lo:
      break
    if (not text[p - 1].isspace() and p + 1 < len(text) and
        not text[p + 1].isspace()):
      return p
    p = text.rfind(" ", lo + 1, p)
  for p in range(hi, max(lo, hi - 4096), -1):  # Then any whitespace.
    if text[p].isspace():
      return p
  return hi


def _document(text: str, started: bool = False) -> Iterator[tuple[str,
                                                                   bool]]:
  """(piece, is its document's last) of one document's (rest of) text;
  nothing for an empty document not `started`."""
  text = text.rstrip() if started else text.strip()
  if not text and not started:
    return
  parts = list(split_text(text, PIECE_CHARS))
  for k, part in enumerate(parts):
    yield part, k == len(parts) - 1


def pieces(path: str, field: str = "text") -> Iterator[tuple[str, bool]]:
  """(piece, is its document's last) of every document of one file, in
  order (module docstring)."""
  if path.endswith(".txt"):
    yield from _txt(path)
    return
  texts = (_jsonl(path, field) if path.endswith(".jsonl") else
           _parquet(path, field))
  for text in texts:
    yield from _document(text)


def _txt(path: str) -> Iterator[tuple[str, bool]]:
  """A .txt file's documents (<|endoftext|>-separated), read in blocks; a
  long document's leading pieces leave before its end is read."""
  decode = codecs.getincrementaldecoder("utf-8")("strict").decode
  buf, started, offset = "", False, 0
  with open(path, "rb") as f:
    while True:
      block = f.read(BLOCK_BYTES)
      try:
        buf += decode(block, final=not block)
      except UnicodeDecodeError as e:
        raise ValueError(f"`input` {path!r} is not UTF-8 text (near byte "
                         f"{offset + e.start}: {e.reason}).") from None
      offset += len(block)
      *done, buf = buf.split(_EOT)
      for text in done:
        yield from _document(text, started)
        started = False
      if not started:
        buf = buf.lstrip()
      while len(buf) > PIECE_CHARS + len(_EOT):  # Keeps a cut-off EOT.
        cut = _cut(buf, 0, PIECE_CHARS)
        yield buf[:cut], False
        buf, started = buf[cut:], True
      if not block:
        yield from _document(buf, started)
        return


def _jsonl(path: str, field: str) -> Iterator[str]:
  """The `field` strings of a .jsonl file's lines (blank lines skipped)."""
  where = lambda n: f"`input` {path!r} line {n}"
  with open(path, "rb") as f:
    for number, line in enumerate(iter(
        lambda: f.readline(MAX_LINE_BYTES + 1), b""), start=1):
      if len(line) > MAX_LINE_BYTES:
        raise ValueError(f"{where(number)} is longer than "
                         f"{MAX_LINE_BYTES >> 20} MiB, the most a .jsonl "
                         "line may hold (split the document, or use .txt).")
      if not line.strip():
        continue
      try:
        row = json.loads(line.decode("utf-8"))
      except UnicodeDecodeError as e:
        raise ValueError(f"{where(number)} is not UTF-8 (byte {e.start}: "
                         f"{e.reason}).") from None
      except ValueError as e:
        raise ValueError(f"{where(number)} is not JSON ({e}).") from None
      except RecursionError:
        raise ValueError(f"{where(number)} nests JSON too deeply to parse: "
                         "one flat object per line is allowed.") from None
      if not isinstance(row, dict):
        raise ValueError(f"{where(number)} is a JSON {type(row).__name__}; "
                         f"a line must be an object with a string field "
                         f"{field!r} (--field).")
      text = row.get(field)
      if not isinstance(text, str):
        raise ValueError(f"{where(number)} has no string field {field!r} "
                         f"(--field); its {field!r} is "
                         f"{type(text).__name__}.")
      if _SURROGATE.search(text):
        raise ValueError(f"{where(number)}: field {field!r} holds an "
                         "unpaired surrogate escape (\\ud800-\\udfff), not "
                         "text that UTF-8 can hold.")
      yield text


def _parquet(path: str, field: str) -> Iterator[str]:
  """The non-null strings of a .parquet file's `field` column."""
  try:
    import pyarrow as pa  # pylint: disable=g-import-not-at-top
    import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ValueError("reading .parquet files needs pyarrow (pip install "
                     "pyarrow).") from None
  unreadable = lambda e, at: ValueError(
      f"`input` {path!r} is not a readable parquet file ({at}"
      f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}"
      ").")
  try:
    table = pq.ParquetFile(path)
    names = table.schema_arrow.names
  except (OSError, pa.ArrowException) as e:
    raise unreadable(e, "") from None
  if names.count(field) != 1:
    raise ValueError(f"`input` {path!r} has {names.count(field)} columns "
                     f"named {field!r} (--field); one is needed; its columns "
                     f"are {names[:20]}.")
  kind = table.schema_arrow.field(field).type
  if pa.types.is_dictionary(kind):
    kind = kind.value_type
  if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or
          pa.types.is_string_view(kind)):
    raise ValueError(f"`input` {path!r} column {field!r} (--field) holds "
                     f"{kind}; a column of strings (UTF-8 text) is "
                     "needed.")
  row, batches = 0, table.iter_batches(columns=[field],
                                       batch_size=PARQUET_ROWS)
  while True:
    try:
      batch = next(batches, None)
      texts = None if batch is None else batch.column(0).to_pylist()
    except (OSError, pa.ArrowException, UnicodeDecodeError) as e:
      raise unreadable(e, f"rows from {row}: ") from None
    if texts is None:
      return
    yield from (t for t in texts if t is not None)
    row += len(texts)
