"""Probe subjects: a trained model, its tokenizer, and arrays from text.

A `Subject` (params, model config, tokenizer: from a run folder of this
project's trainer, from real HF GPT-2 weights, or from a Llama-family GGUF
file such as SmolLM2-135M, `load_subject(model=...)`) turns token windows of some
text into hidden states H and per-position probabilities (`forward`); the
probes hand those arrays to the pure functions of bottleneck.gradient /
encoding / head_stats.
"""

from __future__ import annotations

import dataclasses
import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
from ml_collections import config_dict

from bottleneck.io import gguf_file, hf
from train import data, llama, model as model_lib


@dataclasses.dataclass
class Subject:
  params: dict
  cfg: model_lib.GPTConfig | llama.LlamaConfig
  tokenizer: object
  name: str
  config: config_dict.ConfigDict | None = None  # Run config (workdir only).
  workdir: str | None = None

  @property
  def is_llama(self) -> bool:
    return isinstance(self.cfg, llama.LlamaConfig)

  @property
  def model(self):
    return llama.Llama(self.cfg) if self.is_llama else model_lib.GPT(self.cfg)

  def head(self):
    """(W [V, D], b [V] or None) as float64 numpy."""
    if self.is_llama:
      return np.asarray(llama.head_matrix(self.params, self.cfg),
                        np.float64), None
    w = np.asarray(model_lib.head_matrix(self.params, self.cfg), np.float64)
    b = model_lib.head_bias(self.params, self.cfg)
    return w, (None if b is None else np.asarray(b, np.float64))


# Probe windows of a real (GGUF or HF Llama-family) model: long enough for
# real context, short enough that a batch of next-token distributions
# (T x V floats) stays small.
GGUF_WINDOW = 128


def load_subject(workdir: str | None = None, hf_dir: str | None = None,
                 model: str | None = None):
  """A trained run, an HF GPT-2 folder, or `model` = smollm2 | gguf:PATH |
  run:WORKDIR | hf:DIR (the subject spec shared by the binaries)."""
  if model:
    kind, _, rest = model.partition(":")
    if kind in ("smollm2", "gguf"):
      if bool(workdir) or bool(hf_dir):
        raise ValueError("give one of `model`, `workdir` and `hf_dir`.")
      return _gguf_subject(gguf_file.smollm2_path() if kind == "smollm2"
                           else rest)
    if kind == "run":
      workdir = rest
    elif kind == "hf":
      hf_dir = rest
    else:
      raise ValueError("`model` must be smollm2, gguf:PATH, run:WORKDIR or "
                       f"hf:DIR; got {model!r}.")
  if bool(workdir) == bool(hf_dir):
    raise ValueError("give exactly one of `model`, `workdir` and `hf_dir`.")
  if hf_dir:
    from train import hf_gpt2, hf_llama, tokenizers  # pylint: disable=g-import-not-at-top
    kind = hf.read_config(hf_dir, "hf_dir").get("model_type", "gpt2")
    loader = hf_llama if kind in hf_llama.MODEL_TYPES else hf_gpt2
    params, cfg = loader.load(hf_dir)
    if kind in hf_llama.MODEL_TYPES:
      params = jax.tree.map(jnp.asarray, params)
      cfg = dataclasses.replace(cfg, block_size=GGUF_WINDOW)
    return Subject(params, cfg, tokenizers.load("hf:" + hf_dir),
                   os.path.basename(os.path.normpath(hf_dir)))
  from train import completions  # pylint: disable=g-import-not-at-top
  params, _, cfg, tok, config = completions.load_run(workdir)
  return Subject(params, cfg, tok, os.path.basename(os.path.normpath(
      workdir)), config, workdir)


def _gguf_subject(path: str) -> Subject:
  from train import gguf_llama  # pylint: disable=g-import-not-at-top
  params, cfg, tok = gguf_llama.load(path)
  cfg = dataclasses.replace(cfg, block_size=GGUF_WINDOW)
  name = os.path.splitext(os.path.basename(path))[0]
  return Subject(jax.tree.map(jnp.asarray, params), cfg, tok, name)


def other_source(subject: Subject) -> str:
  """An out-of-domain text source for a subject (not its training text)."""
  own = subject.config.data.source if subject.config is not None else ""
  return "synthetic_stories" if own == "shakespeare" else "shakespeare"


def data_config(spec: str, subject: Subject):
  """`--data`: synthetic_stories | shakespeare | tinystories:PATH | text:GLOB
  ('' = the run's own training source), read with the subject's tokenizer."""
  base = (subject.config.data.to_dict() if subject.config is not None
          else {"source": "synthetic_stories", "path": "", "online": False,
                "val_fraction": 0.05, "cache_dir": "",
                "synthetic_stories": 4000, "spamlang_vocab": 0, "seed": 0,
                "tokenizer": subject.tokenizer.name})
  d = config_dict.ConfigDict(base)
  if spec:
    source, _, path = spec.partition(":")
    d.source, d.path = source, path
  return d


def windows(subject: Subject, spec: str, n_windows: int, split: str = "val",
            seed: int = 0, length: int | None = None):
  """Token windows [n, T] (inputs) and their targets from a text source."""
  d = data_config(spec, subject)
  if d.source == "spamlang":
    raise ValueError("`data` must be a text source for the probes.")
  meta = data.build_shards(d, subject.tokenizer)  # The model's own tokens.
  tokens = np.memmap(meta[split], dtype=meta["dtype"], mode="r")
  t = min(length or subject.cfg.block_size, subject.cfg.block_size)
  loader = data.WindowLoader(tokens, t, n_windows, seed)
  return loader.batch(0)


@functools.partial(jax.jit, static_argnames="model")
def _forward(params, model, x):
  h = model.apply(params, x, method=type(model).hidden)
  logits = model.apply(params, h, method=type(model).head)
  return h, jax.nn.softmax(logits, axis=-1)


def forward(subject: Subject, x, batch: int = 16):
  """Hidden states [N, D] (float64) and probabilities [N, V] (float32)."""
  hs, ps = [], []
  for i in range(0, len(x), batch):
    h, p = _forward(subject.params, subject.model, jnp.asarray(x[i:i + batch]))
    hs.append(np.asarray(h, np.float64).reshape(-1, h.shape[-1]))
    ps.append(np.asarray(p).reshape(-1, p.shape[-1]))
  return np.concatenate(hs), np.concatenate(ps)


def next_token_targets(subject: Subject, x, keep: int = 512) -> np.ndarray:
  """App. D: a trained model's next-token distributions, top `keep` kept."""
  _, p = forward(subject, x)
  return -np.sort(-p, axis=1)[:, :keep]
