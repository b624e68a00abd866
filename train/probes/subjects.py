"""Probe subjects: a model, its tokenizer, and token windows of a text.

`load_subject(model=SPEC)` with SPEC one of
  smollm2 | gemma3   the offline LLMs (bottleneck/io/zoo.py)
  gguf:PATH          any GGUF file of a registered architecture
  hf:DIR             any HF folder of a registered model_type
  run:WORKDIR        a run of this project's trainer
(`workdir=` / `hf_dir=` are the older spellings of run: / hf:). Every
family meets train.models.protocol.ModelConfig, so nothing here asks which
family a subject is. `windows` cuts a text into the model's windows, with
BOS first where the model expects it.
"""

from __future__ import annotations

import dataclasses
import os

import jax.numpy as jnp
import numpy as np
from ml_collections import config_dict

from bottleneck.io import zoo
from train.models import build, loaders, validate
from train.text import data, tokenizers

SPECS = "smollm2, gemma3, gguf:PATH, hf:DIR or run:WORKDIR"


@dataclasses.dataclass
class Subject:
  params: dict
  cfg: object  # A train.models.protocol.ModelConfig.
  tokenizer: tokenizers.Tokenizer | None
  name: str
  config: config_dict.ConfigDict | None = None  # Run config (runs only).
  workdir: str | None = None
  # What probes derive from the (never changed) weights and share, by name
  # (e.g. the head's float64 moments: train/probes/encoding.py).
  derived: dict = dataclasses.field(default_factory=dict, repr=False,
                                    compare=False)

  @property
  def model(self):
    return self.cfg.module()

  def head(self):
    """(W [V, D], b [V] or None) as float32 numpy (no copy on CPU)."""
    w, b = self.cfg.head_weights(self.params)
    return (np.asarray(w, np.float32),
            None if b is None else np.asarray(b, np.float32))

  def input_embeddings(self) -> np.ndarray:
    return np.asarray(self.cfg.input_embeddings(self.params), np.float32)

  def head_rank(self) -> int:
    """D of the subject's head (`head_rank`)."""
    return head_rank(self.cfg, self.cfg.n_embd)

  def describe(self) -> dict:
    """What a report states about the subject (d: the head's input width,
    D: its rank)."""
    w, _ = self.cfg.head_weights(self.params)
    return {"name": self.name, "family": self.cfg.family,
            "V": int(w.shape[0]), "d": int(w.shape[1]),
            "D": self.head_rank(),
            "layers": int(self.cfg.n_layer), "tied": bool(self.cfg.tied),
            "context": int(self.cfg.context_length),
            "logit_softcap": float(self.cfg.logit_softcap),
            "bos": None if self.tokenizer is None else self.tokenizer.bos_id}


def head_rank(cfg, width: int) -> int:
  """D of seed 002 (eq. 10's sqrt(1 - D/V)) for a head W [V, width]: a
  low-rank head W = A B is stored as its product, of rank `head_rank`
  whatever its width; any other head has the rank of its width."""
  if cfg.head == "lowrank" and getattr(cfg, "head_rank", 0):
    return int(cfg.head_rank)
  return int(width)


def _on_device(tree: dict) -> dict:
  """The numpy parameter tree as jax arrays, leaf by leaf and in place: each
  host copy is dropped as soon as its device copy exists (jax.tree.map
  held both trees: Gemma 3 270M peaked at 3.1 GB while loading)."""
  for key, value in tree.items():
    tree[key] = (_on_device(value) if isinstance(value, dict) else
                 jnp.asarray(value))
  return tree


def load_subject(workdir: str | None = None, hf_dir: str | None = None,
                 model: str | None = None, dtype: str = "float32"):
  """A subject from a spec (module docstring). Real checkpoints are held in
  `dtype` (float32 | bfloat16), checked against this machine's memory
  before any tensor is read."""
  given = [v for v in (workdir, hf_dir, model) if v]
  if len(given) != 1:
    raise ValueError("give exactly one of `model`, `workdir` and `hf_dir`.")
  spec = model or (f"hf:{hf_dir}" if hf_dir else f"run:{workdir}")
  kind, _, rest = spec.partition(":")
  if kind in zoo.NAMES or kind in ("gguf", "hf"):  # loaders.SPECS
    params, cfg, tok = loaders.load(spec, dtype)
    name = (kind if kind in zoo.NAMES else
            os.path.splitext(os.path.basename(rest))[0] if kind == "gguf"
            else os.path.basename(os.path.normpath(rest)))
    return Subject(_on_device(params), cfg, tok, name)
  if kind != "run":
    raise ValueError(f"`model` must be {SPECS}; got {model!r}.")
  workdir = rest
  from train.training import runs  # pylint: disable=g-import-not-at-top
  params, cfg, tok, config = runs.load(workdir)
  return Subject(params, cfg, tok, os.path.basename(os.path.normpath(
      workdir)), config, workdir)


def check_spec(spec: str) -> None:
  """What load_subject(model=spec) reads before the weights, without them:
  the spec's form, a checkpoint's metadata (loaders.config_of) and an HF
  folder's tokenizer, a run's config, model config and a checkpoint: a
  comparison refuses a bad entry before it probes any model."""
  kind, _, rest = spec.partition(":")
  if kind in zoo.NAMES and not rest:
    return
  if kind in ("gguf", "hf") and rest:
    loaders.config_of(spec)
    if kind == "hf":
      tokenizers.load(spec)
    return
  if kind != "run" or not rest:
    raise ValueError(f"`model` must be {SPECS}; got {spec!r}.")
  from train.training import runs  # pylint: disable=g-import-not-at-top
  config = runs.read_config(rest)
  if config.data.source == "spamlang":
    raise ValueError(f"`workdir` {rest!r} is a SpamLang run: no text.")
  validate.config(lambda: build.model_config(config.model), {},
                  "config.json ", f"`model` {spec!r}")
  if not runs.steps(rest):
    raise ValueError(f"`workdir` {rest!r} has no checkpoint.")


def other_source(subject: Subject) -> str:
  """An out-of-domain text for a subject: the run's other source, or the
  Python reference manual (modern technical prose) for real LLMs, whose
  default text is Shakespeare."""
  if subject.config is None:
    return "python_docs"
  own = subject.config.data.source
  return "synthetic_stories" if own == "shakespeare" else "shakespeare"


TEXT_SOURCES = tuple(s for s in data.SOURCES if s != "spamlang")


def _text_defaults(tokenizer: str) -> dict:
  return {"source": "shakespeare", "path": "", "online": False,
          "val_fraction": 0.05, "cache_dir": "", "synthetic_stories": 4000,
          "spamlang_vocab": 0, "seed": 0, "tokenizer": tokenizer}


def check_text_spec(spec: str, arg: str) -> None:
  """A text spec (`data_config`) names a text source whose files exist:
  checked before a model is loaded; '' (the default) passes."""
  if not spec:
    return
  source, _, path = spec.partition(":")
  if source not in TEXT_SOURCES:
    raise ValueError(f"`{arg}` {spec!r}: the source must be one of "
                     f"{TEXT_SOURCES} (as SOURCE or SOURCE:PATH).")
  d = config_dict.ConfigDict(dict(_text_defaults("byte"), source=source,
                                  path=path))
  try:
    if source == "shards" and not os.path.isfile(os.path.join(path,
                                                              "meta.json")):
      raise ValueError(f"{path!r} is not a prepared folder (no meta.json).")
    if source != "shards":
      data.corpus_files(d)
  except ValueError as e:
    raise ValueError(f"`{arg}` {spec!r}: {e}") from None


def data_config(spec: str, subject: Subject):
  """`--data`: synthetic_stories | shakespeare[:GLOBS] | python_docs |
  tinystories:PATH | text:GLOB ('' = the run's own training source; the
  packaged Shakespeare for real LLMs), read with the subject's tokenizer."""
  base = (subject.config.data.to_dict() if subject.config is not None
          else _text_defaults(subject.tokenizer.name))
  d = config_dict.ConfigDict(base)
  if spec:
    source, _, path = spec.partition(":")
    d.source, d.path = source, path
  return d


def text_tokens(subject: Subject, spec: str, split: str = "val"):
  """The token stream of a text in the subject's tokenizer: a run's
  held-out split, or all of the text for a real LLM (not trained on it)."""
  d = data_config(spec, subject)
  if d.source == "spamlang":
    raise ValueError("`data` must be a text source for the probes.")
  meta = data.token_meta(d, subject.tokenizer)
  read = lambda s: np.memmap(meta[s], dtype=meta["dtype"], mode="r")
  if subject.config is not None:
    return read(split)
  return np.concatenate([read("train"), read("val")])


def windows(subject: Subject, spec: str, n_windows: int, split: str = "val",
            seed: int = 0, length: int | None = None):
  """n_windows non-overlapping windows of `length` tokens (default: the
  model's block size) drawn at random from the text: inputs x [n, T] and
  targets y [n, T]. With a BOS token, x = [BOS] + T - 1 text tokens and y
  the next T. A text too short for the request is an error naming the
  count it holds."""
  t = min(length or subject.cfg.block_size, subject.cfg.block_size)
  if n_windows < 1 or t < 2:
    raise ValueError(f"`windows` must be >= 1 and the window >= 2 tokens; "
                     f"got {n_windows} windows of {t}.")
  tokens = text_tokens(subject, spec, split)
  bos = subject.tokenizer.bos_id if subject.tokenizer else None
  span = t if bos is not None else t + 1  # Text tokens one window reads.
  available = (len(tokens) - span) // t + 1 if len(tokens) >= span else 0
  if n_windows > available:
    raise ValueError(
        f"`text` {spec or 'default'!r} holds {len(tokens)} tokens of "
        f"{subject.name}'s tokenizer: {available} window(s) of {t}, fewer "
        f"than the {n_windows} asked for; ask for at most {available} or "
        "give a longer text.")
  starts = np.sort(np.random.default_rng(seed).choice(
      available, n_windows, replace=False)) * t
  text = np.stack([np.asarray(tokens[s:s + span]) for s in starts]).astype(
      np.int32)
  if bos is not None:
    return (np.concatenate([np.full((n_windows, 1), bos, np.int32),
                            text[:, :-1]], 1), text)
  return text[:, :-1], text[:, 1:]
