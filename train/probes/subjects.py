"""Probe subjects: a trained model, its tokenizer, and arrays from text.

A `Subject` (params, model config, tokenizer: from a run folder of this
project's trainer, an HF folder of GPT-2 / Llama / Mistral / Qwen2 /
GPT-NeoX (Pythia) weights, or a Llama-family GGUF file such as SmolLM2-135M;
`load_subject(model=...)`) turns token windows of some text into hidden
states H and per-position probabilities; the probes hand those arrays to the
pure functions of bottleneck.gradient / encoding / head_stats.

Memory: `forward_chunks` holds one batch of windows at a time on the device
(batch x T x V probabilities; the batch axis sharded over all devices with
NamedSharding, parameters replicated); `mean_probabilities` and
`token_nll` reduce on the fly, so their host memory is V and N floats
whatever the text length. `forward` concatenates everything (N x V floats:
use it for a few thousand tokens).
"""

from __future__ import annotations

import dataclasses
import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
from ml_collections import config_dict

from bottleneck import encoding, sharding
from bottleneck.io import gguf_file, hf
from train import data, llama, model as model_lib, neox

_FAMILIES = {model_lib.GPTConfig: model_lib.GPT, llama.LlamaConfig: llama.Llama,
             neox.NeoXConfig: neox.NeoX}


@dataclasses.dataclass
class Subject:
  params: dict
  cfg: model_lib.GPTConfig | llama.LlamaConfig | neox.NeoXConfig
  tokenizer: object
  name: str
  config: config_dict.ConfigDict | None = None  # Run config (workdir only).
  workdir: str | None = None

  @property
  def model(self):
    return _FAMILIES[type(self.cfg)](self.cfg)

  @property
  def is_gpt(self) -> bool:  # This project's GPT (or HF GPT-2).
    return isinstance(self.cfg, model_lib.GPTConfig)

  def input_embeddings(self) -> np.ndarray:
    """The input embedding table [V, D] (float64)."""
    table = self.params["params"]["wte" if self.is_gpt else "embed"]
    return np.asarray(table["embedding"], np.float64)

  def head(self):
    """(W [V, D], b [V] or None) as float64 numpy."""
    if not self.is_gpt:
      module = llama if isinstance(self.cfg, llama.LlamaConfig) else neox
      return np.asarray(module.head_matrix(self.params, self.cfg),
                        np.float64), None
    w = np.asarray(model_lib.head_matrix(self.params, self.cfg), np.float64)
    b = model_lib.head_bias(self.params, self.cfg)
    return w, (None if b is None else np.asarray(b, np.float64))


# Probe windows of a real (GGUF or HF Llama-family) model: long enough for
# real context, short enough that a batch of next-token distributions
# (T x V floats) stays small.
GGUF_WINDOW = 128


def load_subject(workdir: str | None = None, hf_dir: str | None = None,
                 model: str | None = None, dtype: str = "float32"):
  """A trained run, an HF folder, or `model` = smollm2 | gguf:PATH |
  run:WORKDIR | hf:DIR (the subject spec shared by the binaries). Real
  checkpoints are held in `dtype` (float32 | bfloat16), checked against
  this machine's memory before any tensor is read."""
  if model:
    kind, _, rest = model.partition(":")
    if kind in ("smollm2", "gguf"):
      if bool(workdir) or bool(hf_dir):
        raise ValueError("give one of `model`, `workdir` and `hf_dir`.")
      return _gguf_subject(gguf_file.smollm2_path() if kind == "smollm2"
                           else rest, dtype)
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
    if kind in hf_llama.MODEL_TYPES + neox.MODEL_TYPES:
      loader = hf_llama if kind in hf_llama.MODEL_TYPES else neox
      params, cfg = loader.load(hf_dir, dtype)
      params = jax.tree.map(jnp.asarray, params)
      cfg = dataclasses.replace(cfg, block_size=GGUF_WINDOW)
    elif kind == "gpt2":
      params, cfg = hf_gpt2.load(hf_dir)
    else:
      raise ValueError(f"`hf_dir` {hf_dir!r}: model_type={kind!r} is not "
                       "supported; allowed: "
                       f"{('gpt2',) + hf_llama.MODEL_TYPES + neox.MODEL_TYPES}.")
    return Subject(params, cfg, tokenizers.load("hf:" + hf_dir),
                   os.path.basename(os.path.normpath(hf_dir)))
  from train import completions  # pylint: disable=g-import-not-at-top
  params, _, cfg, tok, config = completions.load_run(workdir)
  return Subject(params, cfg, tok, os.path.basename(os.path.normpath(
      workdir)), config, workdir)


def _gguf_subject(path: str, dtype: str) -> Subject:
  from train import gguf_llama  # pylint: disable=g-import-not-at-top
  params, cfg, tok = gguf_llama.load(path, dtype)
  cfg = dataclasses.replace(cfg, block_size=GGUF_WINDOW)
  name = os.path.splitext(os.path.basename(path))[0]
  return Subject(jax.tree.map(jnp.asarray, params), cfg, tok, name)


def other_source(subject: Subject) -> str:
  """An out-of-domain text source for a subject (not the text probed by
  default: the run's own source, or Shakespeare for real LLMs)."""
  own = (subject.config.data.source if subject.config is not None
         else "shakespeare")
  return "synthetic_stories" if own == "shakespeare" else "shakespeare"


def data_config(spec: str, subject: Subject):
  """`--data`: synthetic_stories | shakespeare | tinystories:PATH | text:GLOB
  ('' = the run's own training source; the packaged Shakespeare for real
  LLMs and HF folders), read with the subject's tokenizer."""
  base = (subject.config.data.to_dict() if subject.config is not None
          else {"source": "shakespeare", "path": "", "online": False,
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
  read = lambda s: np.memmap(meta[s], dtype=meta["dtype"], mode="r")
  # A run of this project is probed on its held-out split; a real LLM was
  # not trained on these shards, so all of the text is used.
  tokens = (read(split) if subject.config is not None
            else np.concatenate([read("train"), read("val")]))
  t = min(length or subject.cfg.block_size, subject.cfg.block_size)
  loader = data.WindowLoader(tokens, t, n_windows, seed)
  return loader.batch(0)


@functools.partial(jax.jit, static_argnames="model")
def _forward(params, model, x_bt):
  h_btd = model.apply(params, x_bt, method=type(model).hidden)
  logits_btv = model.apply(params, h_btd, method=type(model).head)
  return h_btd.astype(jnp.float32), jax.nn.softmax(
      logits_btv.astype(jnp.float32), axis=-1)


@functools.partial(jax.jit, static_argnames="model")
def _nll(params, model, x_bt, y_bt):
  logits_btv = model.apply(params, x_bt).astype(jnp.float32)
  logp_btv = jax.nn.log_softmax(logits_btv, axis=-1)
  return -jnp.take_along_axis(logp_btv, y_bt[..., None], -1)[..., 0]


def _sharded_batches(subject: Subject, arrays, batch: int, mesh=None):
  """(n_real, device arrays) per batch of windows: the batch axis padded to
  a multiple of the device count and sharded over `mesh` (default: all
  devices), the parameters replicated once per subject and mesh."""
  mesh = mesh or sharding.batch_mesh()
  key = tuple(mesh.devices.flat)
  if getattr(subject, "_placed", (None,))[0] != key:
    subject._placed = (key, jax.device_put(  # pylint: disable=protected-access
        subject.params, sharding.replicated(mesh)))
  params = subject._placed[1]  # pylint: disable=protected-access
  n_dev = mesh.devices.size
  size = sharding.round_up(min(batch, len(arrays[0])), n_dev)
  for i in range(0, len(arrays[0]), size):
    parts = [np.asarray(a[i:i + size]) for a in arrays]
    n = len(parts[0])
    parts = [np.concatenate([p, np.zeros((size - n,) + p.shape[1:], p.dtype)])
             for p in parts]
    yield n, params, [jax.device_put(p, sharding.batch_sharded(mesh, p.ndim))
                      for p in parts]


def forward_chunks(subject: Subject, x, batch: int = 16, mesh=None):
  """Yields (H [n, D] float64, P [n, V] float32) for each batch of windows
  x [N, T], n = batch x T positions (memory: one batch at a time)."""
  for n, params, (xb,) in _sharded_batches(subject, [x], batch, mesh):
    h, p = _forward(params, subject.model, xb)
    yield (np.asarray(h[:n], np.float64).reshape(-1, h.shape[-1]),
           np.asarray(p[:n]).reshape(-1, p.shape[-1]))


def forward(subject: Subject, x, batch: int = 16, mesh=None):
  """Hidden states [N, D] (float64) and probabilities [N, V] (float32)."""
  hs, ps = zip(*forward_chunks(subject, x, batch, mesh))
  return np.concatenate(hs), np.concatenate(ps)


def mean_probabilities(subject: Subject, x, batch: int = 16, mesh=None):
  """alpha = the next-token distribution averaged over every position of x
  (seed 003's alpha), float64, accumulated batch by batch."""
  return encoding.average_distribution(
      p for _, p in forward_chunks(subject, x, batch, mesh))


def token_nll(subject: Subject, x, y, batch: int = 16, mesh=None):
  """-log p(y_t | x_<=t) per position [N] (float64), computed on device."""
  out = []
  for n, params, (xb, yb) in _sharded_batches(subject, [x, y], batch, mesh):
    out.append(np.asarray(_nll(params, subject.model, xb, yb)[:n],
                          np.float64).ravel())
  return np.concatenate(out)


def next_token_targets(subject: Subject, x, keep: int = 512) -> np.ndarray:
  """App. D: a trained model's next-token distributions, top `keep` kept."""
  _, p = forward(subject, x)
  return -np.sort(-p, axis=1)[:, :keep]
