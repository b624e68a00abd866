"""One validation of a model before use, shared by the GGUF, HF-folder and
run loaders (train/models/loaders.py, train/training/runs.py).

In the order a loader meets them, each before anything larger is built:
  1. `layer_count`: the number of blocks the metadata claims against the
     blocks its tensor names hold (names only: a 27 KB file claiming 10^9
     blocks is refused before a block is traced);
  2. `config`: the family's config from the metadata, every field
     range-checked by the config itself; a field error names the file's
     own key (`GGUF_KEYS`, `HF_KEYS`) and its value;
  3. the memory estimate from the config (train/models/weights.py);
  4. `tokenizer`: its size and every special id within the embedding's rows;
  5. `finite`: every tensor as it is read (a GGUF's from its stored bytes
     by bottleneck/io/gguf_file.nonfinite_tensors, on a second thread).
Each failure is one ValueError naming the file, the field and its value.
"""

from __future__ import annotations

import re

import numpy as np

from bottleneck import checks

# Config field -> GGUF key (after '<architecture>.') / config.json key.
GGUF_KEYS = {"vocab_size": "vocab_size", "n_layer": "block_count",
             "n_head": "attention.head_count",
             "n_kv_head": "attention.head_count_kv",
             "n_embd": "embedding_length", "ffn_dim": "feed_forward_length",
             "head_dim": "attention.key_length",
             "rope_theta": "rope.freq_base",
             "rope_divisors": "rope.scaling.factor (or rope_freqs)",
             "norm_eps": "attention.layer_norm_rms_epsilon",
             "context_length": "context_length",
             "sliding_window": "attention.sliding_window",
             "attn_softcap": "attn_logit_softcapping",
             "final_softcap": "final_logit_softcapping"}
HF_KEYS = {"vocab_size": "vocab_size", "n_layer": "num_hidden_layers",
           "n_head": "num_attention_heads",
           "n_kv_head": "num_key_value_heads", "n_embd": "hidden_size",
           "ffn_dim": "intermediate_size", "head_dim": "head_dim",
           "rope_theta": "rope_theta", "rope_divisors": "rope_scaling",
           "rope_local_theta": "rope_local_base_freq",
           "norm_eps": "rms_norm_eps (layer_norm_eps)",
           "context_length": "max_position_embeddings",
           "sliding_window": "sliding_window",
           "query_scale": "query_pre_attn_scalar",
           "attn_softcap": "attn_logit_softcapping",
           "final_softcap": "final_logit_softcapping",
           "model.layer_norm_eps": "layer_norm_epsilon",
           "model.block_size": "n_positions"}
_BLOCK = re.compile(r"(?:^|\.)(?:blk|layers|h)\.(\d+)\.")


def layer_count(claimed, field: str, names, where: str) -> None:
  """The metadata's block count (`field` = `claimed`) against the blocks
  the tensor names hold (`blk.N.`, `layers.N.`, `h.N.`); `names`: the
  names, or a function returning them (called only for an integer claim)."""
  if isinstance(claimed, bool) or not isinstance(claimed, int):
    return  # Not an integer: the config's own check names it.
  names = names() if callable(names) else names
  held = sorted({int(m.group(1)) for n in names
                 for m in [_BLOCK.search(n)] if m})
  if len(held) == claimed and held == list(range(len(held))):
    return
  have = (f"{len(held)} block(s), numbered {held[0]}..{held[-1]}" if held
          else "no block tensors")
  raise ValueError(f"{where}: {field} = {claimed}, but the weights hold "
                   f"{have}.")


def config(build, keys: dict, prefix: str, where: str):
  """`build()` (a family's config reader), its errors in the file's terms:
  a field error names the file's key; a malformed value (a list where a
  number belongs, ...) is one line instead of a traceback."""
  try:
    return build()
  except checks.ArgumentError as e:
    key = keys.get(e.name, e.name)
    raise ValueError(f"{where}: {prefix}{key}: {e}") from None
  except (TypeError, AttributeError, KeyError, IndexError,
          ZeroDivisionError, OverflowError) as e:
    raise ValueError(f"{where}: a field of the model's metadata is "
                     f"malformed ({type(e).__name__}: {e}).") from None


def tokenizer(tok, cfg, where: str) -> None:
  """The tokenizer's size and special ids within the embedding's rows
  (JAX fills an out-of-range gather with NaN instead of failing)."""
  if tok is None:
    return
  rows = cfg.vocab_size
  if tok.vocab_size > rows:
    raise ValueError(f"{where}: the tokenizer has {tok.vocab_size} tokens, "
                     f"more than the embedding's {rows} rows.")
  for name, value in (("EOS / end-of-text id", tok.eot_id),
                      ("BOS id", tok.bos_id)):
    if value is not None and not 0 <= value < rows:
      raise ValueError(f"{where}: the tokenizer's {name} {value} is outside "
                       f"the embedding's rows [0, {rows - 1}].")


def finite(name: str, array, where: str) -> None:
  """Every entry finite (checks.nonfinite_count)."""
  arr = np.asarray(array)
  if arr.dtype.name == "bfloat16":  # ml_dtypes: not a numpy float kind.
    arr = arr.astype(np.float32)
  bad = checks.nonfinite_count(arr)
  if bad:
    raise ValueError(f"{where}: tensor {name} holds {bad} NaN/inf value(s) "
                     f"of {arr.size}.")
