"""A folder of text -> the token shards a run trains on (data.source =
'shards', data.path = the folder written here).

  python -m train.prepare --input=/data/TinyStories --tokenizer=gpt2 \
      --outdir=/data/tinystories_gpt2
  python -m train.prepare --input='/data/fineweb-edu/*.parquet' \
      --tokenizer=smollm2 --outdir=/data/fineweb_smollm2

Documents, files in sorted order, streamed (never all in memory):
  .txt      separated by <|endoftext|> (TinyStories' files); a file without
            one is one document;
  .jsonl    one JSON object per line, its `field` (default 'text');
  .parquet  its `field` column (FineWeb-Edu), read in record batches
            (needs pyarrow).
Every `val_every`-th document goes to val.bin, the others to train.bin,
each followed by the tokenizer's end-of-text id. meta.json records the
tokenizer's digest (Tokenizer.digest): a run whose tokenizer differs is
refused, as is a folder that is not a finished preparation.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Iterator

import numpy as np

from bottleneck.io import cli, lock
from train.text import tokenizers

SUFFIXES = (".txt", ".jsonl", ".parquet")
BATCH_DOCS = 1024  # Documents encoded at a time.


def input_files(spec: str) -> list[str]:
  """The files of a folder (recursively), a file, or a glob, with a
  supported suffix, sorted."""
  if os.path.isdir(spec):
    found = glob.glob(os.path.join(spec, "**", "*"), recursive=True)
  else:
    found = glob.glob(spec)
  files = sorted(f for f in found if os.path.isfile(f) and f.endswith(
      SUFFIXES))
  if not files:
    raise ValueError(f"`input` {spec!r} holds no {'/'.join(SUFFIXES)} "
                     "files.")
  return files


def documents(path: str, field: str = "text") -> Iterator[str]:
  """The non-empty documents of one file (module docstring)."""
  if path.endswith(".txt"):
    with open(path, encoding="utf-8", errors="strict") as f:
      try:
        text = f.read()
      except UnicodeDecodeError as e:
        raise ValueError(f"`input` {path!r} is not UTF-8 text (byte "
                         f"{e.start}).") from None
    yield from (d.strip() for d in text.split(tokenizers.EOT) if d.strip())
  elif path.endswith(".jsonl"):
    with open(path, encoding="utf-8") as f:
      for number, line in enumerate(f, start=1):
        if not line.strip():
          continue
        try:
          row = json.loads(line)
        except ValueError as e:
          raise ValueError(f"`input` {path!r} line {number} is not JSON "
                           f"({e}).") from None
        text = row.get(field) if isinstance(row, dict) else None
        if not isinstance(text, str):
          raise ValueError(f"`input` {path!r} line {number} has no string "
                           f"field {field!r} (--field).")
        if text.strip():
          yield text
  else:
    try:
      import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
    except ImportError:
      raise ValueError("reading .parquet files needs pyarrow (pip install "
                       "pyarrow).") from None
    try:
      table = pq.ParquetFile(path)
      if field not in table.schema_arrow.names:
        raise ValueError(f"`input` {path!r} has no column {field!r} "
                         f"(--field); it has {table.schema_arrow.names}.")
      for batch in table.iter_batches(columns=[field], batch_size=4096):
        yield from (t for t in batch.column(0).to_pylist() if t and
                    t.strip())
    except (OSError, pq.lib.ArrowException) as e:
      raise ValueError(f"`input` {path!r} is not a readable parquet file: "
                       f"{e}.") from None


def prepare(spec: str, tok: tokenizers.Tokenizer, outdir: str,
            val_every: int = 100, field: str = "text", progress=None) -> dict:
  """Writes outdir/{train,val}.bin and meta.json (module docstring);
  returns the meta. `progress(files_done, files)`."""
  if val_every < 2:
    raise ValueError(f"`val_every` must be >= 2; got {val_every}.")
  files = input_files(spec)
  cli.writable_dir("outdir", outdir)
  if os.path.exists(os.path.join(outdir, "meta.json")):
    raise ValueError(f"`outdir` {outdir!r} holds a preparation already: "
                     "give a new folder.")
  dtype = np.uint16 if tok.vocab_size <= 65535 else np.uint32
  with lock.FolderLock(outdir, "prepare.lock", "outdir"):
    tmp = {s: os.path.join(outdir, f".{s}.bin.tmp") for s in ("train", "val")}
    outs = {s: open(p, "wb") for s, p in tmp.items()}
    counts, docs = {"train": 0, "val": 0}, 0
    try:
      for k, path in enumerate(files):
        pending = []
        for text in documents(path, field):
          pending.append(text)
          if len(pending) == BATCH_DOCS:
            docs = _write(pending, docs, tok, outs, counts, val_every, dtype)
            pending = []
        docs = _write(pending, docs, tok, outs, counts, val_every, dtype)
        if progress:
          progress(k + 1, len(files))
    finally:
      for f in outs.values():
        f.close()
    if not counts["train"] or not counts["val"]:
      raise ValueError(f"`input` {spec!r}: {docs} document(s), too few for "
                       f"a validation split of every {val_every}th.")
    for split, path in tmp.items():
      os.replace(path, os.path.join(outdir, f"{split}.bin"))
    meta = {"train": os.path.join(os.path.abspath(outdir), "train.bin"),
            "val": os.path.join(os.path.abspath(outdir), "val.bin"),
            "dtype": np.dtype(dtype).name, "tokens": counts,
            "documents": docs, "tokenizer": tok.name,
            "tokenizer_digest": tok.digest, "vocab_size": tok.vocab_size,
            "input": spec, "files": len(files), "val_every": val_every}
    cli.write_atomic(os.path.join(outdir, "meta.json"), json.dumps(meta))
  return meta


def _write(texts, docs, tok, outs, counts, val_every, dtype) -> int:
  """Encodes a batch of documents and appends each to its split."""
  for ids in tok.encode_many(texts):
    split = "val" if docs % val_every == val_every - 1 else "train"
    ids = np.asarray(ids + [tok.eot_id], dtype)
    outs[split].write(ids.tobytes())
    counts[split] += ids.size
    docs += 1
  return docs


def read(folder: str, tok: tokenizers.Tokenizer) -> dict:
  """The meta of a finished preparation, checked against the run's
  tokenizer and the shard files' sizes."""
  path = os.path.join(folder, "meta.json")
  if not os.path.isfile(path):
    raise ValueError(f"`data.path` {folder!r} is not a prepared folder (no "
                     "meta.json: python -m train.prepare writes one).")
  try:
    with open(path) as f:
      meta = json.load(f)
    size = np.dtype(meta["dtype"]).itemsize
    whole = all(os.path.getsize(os.path.join(folder, f"{s}.bin")) ==
                meta["tokens"][s] * size for s in ("train", "val"))
  except (OSError, ValueError, KeyError, TypeError) as e:
    raise ValueError(f"`data.path` {folder!r}: meta.json or a shard is "
                     f"unreadable ({e}).") from None
  if not whole:
    raise ValueError(f"`data.path` {folder!r}: a shard's size disagrees "
                     "with meta.json (cut short?): prepare it again.")
  if meta.get("tokenizer_digest") != tok.digest:
    raise ValueError(f"`data.path` {folder!r} was prepared with tokenizer "
                     f"{meta.get('tokenizer')!r}; `data.tokenizer` "
                     f"{tok.name!r} is another: prepare it again with that "
                     "tokenizer.")
  return dict(meta, train=os.path.join(folder, "train.bin"),
              val=os.path.join(folder, "val.bin"))
