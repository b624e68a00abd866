"""A folder of text -> the token shards a run trains on (data.source =
'shards', data.path = the folder written here).

  python -m train.prepare --input=/data/TinyStories --tokenizer=gpt2 \
      --outdir=/data/tinystories_gpt2
  python -m train.prepare --input=/data/fineweb-edu --tokenizer=smollm2 \
      --outdir=/data/fineweb_smollm2

The documents of .txt / .jsonl / .parquet files (train/text/documents.py:
`input` taken literally, links followed once, every document streamed in
pieces of at most documents.PIECE_CHARS characters, never a file or a
document encoded whole). Every `val_every`-th document goes to val.bin,
the others to train.bin, each followed by the tokenizer's end-of-text id,
as SHARD_DTYPE of the vocabulary size. meta.json records the tokenizer's
digest (Tokenizer.digest), the dtype, each shard's token count and sha256:
`read` refuses a run whose tokenizer differs, and a folder whose shards
disagree with meta.json (size, dtype, bytes) or that is no finished
preparation.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import numpy as np

from bottleneck.io import cli, lock, zoo
from train.text import documents, tokenizers

SPLITS = ("train", "val")
BATCH_PIECES = 1024  # Pieces encoded at a time, at most, and at most
BATCH_CHARS = 1 << 20  # this many characters (the `tokenizers` library
# holds some 150 bytes a character while it encodes).


def shard_dtype(vocab_size: int) -> str:
  """The dtype of a vocabulary's token shards (what prepare writes)."""
  return "uint16" if vocab_size <= 65535 else "uint32"


class _Shards:
  """Appends documents, given as pieces, to the train / val shard files,
  hashing what it writes; every `val_every`-th document goes to val."""

  def __init__(self, paths: dict, tok: tokenizers.Tokenizer, val_every: int):
    self.tok, self.val_every = tok, val_every
    self.dtype = shard_dtype(tok.vocab_size)
    self.outs = {s: open(p, "wb") for s, p in paths.items()}
    self.sha = {s: hashlib.sha256() for s in paths}
    self.tokens, self.docs = dict.fromkeys(paths, 0), 0
    self.pending, self.chars = [], 0

  def add(self, piece: str, last: bool) -> None:
    self.pending.append((piece, last))
    self.chars += len(piece)
    if len(self.pending) >= BATCH_PIECES or self.chars >= BATCH_CHARS:
      self.flush()

  def flush(self) -> None:
    """Encodes the pending pieces and appends them to their splits."""
    texts = [p for p, _ in self.pending if p]
    encoded = iter(self.tok.encode_many(texts) if texts else [])
    ids = {s: [] for s in SPLITS}
    for piece, last in self.pending:
      split = ("val" if self.docs % self.val_every == self.val_every - 1
               else "train")
      if piece:
        ids[split].extend(next(encoded))
      if last:
        ids[split].append(self.tok.eot_id)
        self.docs += 1
    for split, part in ids.items():
      data = np.asarray(part, self.dtype).tobytes()
      self.outs[split].write(data)
      self.sha[split].update(data)
      self.tokens[split] += len(part)
    self.pending, self.chars = [], 0

  def close(self) -> None:
    for f in self.outs.values():
      f.close()


def prepare(spec: str, tok: tokenizers.Tokenizer, outdir: str,
            val_every: int = 100, field: str = "text", progress=None) -> dict:
  """Writes outdir/{train,val}.bin and meta.json (module docstring);
  returns the meta. `progress(files_done, files)`."""
  if val_every < 2:
    raise ValueError(f"`val_every` must be >= 2; got {val_every}.")
  files, skipped = documents.input_files(spec)
  digest = tok.digest  # A tokenizer without a definition: before any work.
  cli.writable_dir("outdir", outdir)
  if os.path.exists(os.path.join(outdir, "meta.json")):
    raise ValueError(f"`outdir` {outdir!r} holds a preparation already: "
                     "give a new folder.")
  if skipped:
    print(f"note: `input` {spec!r}: {len(skipped)} link(s) lead to a folder "
          f"or file read already, or nowhere; skipped (each file is read "
          f"once): {', '.join(map(repr, skipped[:5]))}"
          f"{' ...' if len(skipped) > 5 else ''}", file=sys.stderr)
  with lock.FolderLock(outdir, "prepare.lock", "outdir"):
    tmp = {s: os.path.join(outdir, f".{s}.bin.tmp") for s in SPLITS}
    shards = _Shards(tmp, tok, val_every)
    try:
      for k, path in enumerate(files):
        for piece, last in documents.pieces(path, field):
          shards.add(piece, last)
        shards.flush()
        if progress:
          progress(k + 1, len(files))
      shards.close()
      if not shards.tokens["train"] or not shards.tokens["val"]:
        raise ValueError(f"`input` {spec!r}: {shards.docs} document(s), "
                         f"too few for a validation split of every "
                         f"{val_every}th.")
    except BaseException:
      shards.close()
      for path in tmp.values():
        os.remove(path)  # No half shard left behind.
      raise
    for split, path in tmp.items():
      os.replace(path, os.path.join(outdir, f"{split}.bin"))
    meta = {**{s: os.path.join(os.path.abspath(outdir), f"{s}.bin")
               for s in SPLITS},
            "dtype": shards.dtype, "tokens": shards.tokens,
            "sha256": {s: h.hexdigest() for s, h in shards.sha.items()},
            "documents": shards.docs, "tokenizer": tok.name,
            "tokenizer_digest": digest, "vocab_size": tok.vocab_size,
            "input": spec, "files": len(files), "val_every": val_every}
    cli.write_atomic(os.path.join(outdir, "meta.json"), json.dumps(meta))
  return meta


def read(folder: str, tok: tokenizers.Tokenizer) -> dict:
  """The meta of a finished preparation, checked against the run's
  tokenizer and the shard files (check_shards)."""
  path = os.path.join(folder, "meta.json")
  if not os.path.isfile(path):
    raise ValueError(f"`data.path` {folder!r} is not a prepared folder (no "
                     "meta.json: python -m train.prepare writes one).")
  try:
    with open(path, encoding="utf-8") as f:
      meta = json.load(f)
  except (OSError, ValueError, RecursionError) as e:
    raise ValueError(f"`data.path` {folder!r}: meta.json is unreadable "
                     f"({e}).") from None
  if not isinstance(meta, dict):
    raise ValueError(f"`data.path` {folder!r}: meta.json is not a JSON "
                     "object: prepare it again.")
  if meta.get("tokenizer_digest") != tok.digest:
    raise ValueError(f"`data.path` {folder!r} was prepared with tokenizer "
                     f"{meta.get('tokenizer')!r}; `data.tokenizer` "
                     f"{tok.name!r} is another: prepare it again with that "
                     "tokenizer.")
  check_shards(folder, meta, tok.vocab_size)
  return dict(meta, **{s: os.path.join(folder, f"{s}.bin") for s in SPLITS})


def check_shards(folder: str, meta: dict, vocab_size: int) -> None:
  """meta.json's vocab_size, dtype, token counts and sha256 against the
  tokenizer and the shard files: one ValueError naming the field."""
  bad = lambda field, why: ValueError(
      f"`data.path` {folder!r}: {os.path.join(folder, 'meta.json')}'s "
      f"`{field}` {why}: prepare the folder again.")
  if meta.get("vocab_size") != vocab_size:
    raise bad("vocab_size", f"is {meta.get('vocab_size')!r}, the "
              f"tokenizer's is {vocab_size}")
  dtype = shard_dtype(vocab_size)
  if meta.get("dtype") != dtype:
    raise bad("dtype", f"is {meta.get('dtype')!r}; shards of a "
              f"{vocab_size}-token vocabulary are {dtype} (uint16 up to "
              "65535 tokens, uint32 above)")
  tokens, sha = meta.get("tokens"), meta.get("sha256")
  for split in SPLITS:
    n = tokens.get(split) if isinstance(tokens, dict) else None
    if type(n) is not int or n < 1:  # pylint: disable=unidiomatic-typecheck
      raise bad(f"tokens.{split}", f"is {n!r}, not a positive integer")
    shard = os.path.join(folder, f"{split}.bin")
    try:
      size = os.path.getsize(shard)
    except OSError as e:
      raise bad(f"tokens.{split}", f"counts {split}.bin, which cannot be "
                f"read ({e.strerror})") from None
    itemsize = np.dtype(dtype).itemsize
    if size != n * itemsize:
      raise bad(f"tokens.{split}", f"is {n} ({n * itemsize} bytes of "
                f"{dtype}); {split}.bin holds {size} bytes (cut short, or "
                "meta.json edited)")
    want = sha.get(split) if isinstance(sha, dict) else None
    if want is None:
      raise bad(f"sha256.{split}", "is missing (prepared before shards "
                "carried a digest)")
    if _sha256(shard) != want:
      raise bad(f"sha256.{split}", f"disagrees with {split}.bin's bytes "
                "(the shard changed after preparation)")


_VERIFIED: dict = {}  # (path, inode, size, mtime, ctime) -> sha256.


def _sha256(path: str) -> str:
  """zoo.sha256, once per process for a file that has not changed."""
  st = os.stat(path)
  key = (os.path.abspath(path), st.st_ino, st.st_size, st.st_mtime_ns,
         st.st_ctime_ns)
  if key not in _VERIFIED:
    _VERIFIED[key] = zoo.sha256(path)
  return _VERIFIED[key]
