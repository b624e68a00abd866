"""A run's newest checkpoint as a Hugging Face folder: config.json,
model.safetensors and the tokenizer's files (`python -m train.export`).

  the thesis GPT (model.family=gpt)     -> model_type gpt2: HF's Conv1D
      weights are [in, out] like the Flax kernels; q/k/v biases of a run
      without them are written as zeros (the same model); an untied head is
      `tie_word_embeddings: false` + lm_head.weight, a logit bias
      lm_head.bias (said by `bottleneck_head.bias`: HF's GPT2LMHeadModel has
      no logit bias and would drop it).
  the llama-like Transformer (llama)    -> model_type llama: nn.Linear
      weights [out, in] (the kernels transposed), q/k rows already in HF's
      half-split RoPE layout.
  a low-rank head W = A B               -> its product, one [V, D]
      lm_head.weight: config.json says so in `bottleneck_head` ({"kind":
      "lowrank", "rank": D, "exported_as": "product"}).

The folder is checked before it is put in place: the config the project's
own loader (train/models/loaders.py, `hf:DIR`) reads back from it must be
the run's model (the head folded), field by field, or the export fails
naming the first field that differs (a llama run with a GeGLU MLP, a
Gemma architecture, ...). It is written into a temporary sibling and
renamed, so a failed export leaves nothing. Tokenizers: every BPE the
project builds (gpt2, bpe:N, and byte as a byte-level BPE without merges)
is written as tokenizer.json + tokenizer_config.json; an hf:DIR
tokenizer's files are copied; a GGUF's is not written (its encoder adds a
prefix tokenizer.json cannot say) and the summary says so.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil

import jax
import numpy as np

from train.models import build, gpt, loaders
from train.models.families import llamalike
from train.text import data, tokenizers
from train.training import runs

# Fields a folder need not carry: how the run computed, not what it is.
_IGNORED = ("dtype", "param_dtype", "remat", "dropout")
# Transformer fields an HF reader derives (block_size: min(context, 2048)).
_IGNORED_LLAMA = _IGNORED + ("block_size",)
_GPT2_ACTIVATIONS = {"gelu": "gelu_new", "gelu_exact": "gelu",
                     "relu": "relu"}
_LLAMA_NAMES = {path: module for module, path in llamalike.HF_LAYER.items()}


def _flat(tree, prefix: str = "") -> dict[str, np.ndarray]:
  """{'a/b/kernel': array} of a nested parameter dict, float32 numpy."""
  out = {}
  for key, value in tree.items():
    path = f"{prefix}{key}"
    if isinstance(value, dict):
      out.update(_flat(value, path + "/"))
    else:
      out[path] = np.asarray(jax.device_get(value), np.float32)
  return out


def _head_matrix(p: dict) -> np.ndarray:
  """lm_head.weight [V, D] of an untied or low-rank head (W = A B: logits
  = h B^T A^T with head_b/kernel = B^T [D, r], lm_head/kernel = A^T)."""
  if "head_b/kernel" in p:
    return np.ascontiguousarray((p.pop("head_b/kernel") @ p.pop(
        "lm_head/kernel")).T)
  return np.ascontiguousarray(p.pop("lm_head/kernel").T)


def _head_info(cfg) -> dict:
  info = {"kind": cfg.head, "bias": bool(cfg.head_bias)}
  if cfg.head == "lowrank":
    info.update(rank=cfg.head_rank, exported_as="product")
  return info


def gpt2_folder(params, cfg: gpt.GPTConfig) -> tuple[dict, dict]:
  """(config.json, tensors) of a thesis GPT as an HF GPT-2 folder."""
  p = _flat(params["params"] if "params" in params else params)
  tensors = {}
  if cfg.head != "tied":
    tensors["lm_head.weight"] = _head_matrix(p)
  for key in ("lm_head/bias", "head_bias"):
    if key in p:
      tensors["lm_head.bias"] = p.pop(key)
  for path, w in p.items():
    parts = path.split("/")
    if parts[0].startswith("h_"):
      parts[0] = "h." + parts[0][2:]
    leaf = {"kernel": "weight", "scale": "weight", "embedding": "weight",
            "bias": "bias"}.get(parts[-1])
    if leaf is None:
      raise ValueError(f"parameter {path!r} has no place in a GPT-2 folder.")
    tensors["transformer." + ".".join(parts[:-1] + [leaf])] = w
  if not cfg.qkv_bias:  # GPT-2 always has them: zeros are the same model.
    for i in range(cfg.n_layer):
      tensors[f"transformer.h.{i}.attn.c_attn.bias"] = np.zeros(
          3 * cfg.n_embd, np.float32)
  config = {
      "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
      "vocab_size": cfg.vocab_size, "n_positions": cfg.block_size,
      "n_ctx": cfg.block_size, "n_embd": cfg.n_embd, "n_layer": cfg.n_layer,
      "n_head": cfg.n_head, "n_inner": 4 * cfg.n_embd,
      "activation_function": _GPT2_ACTIVATIONS[cfg.activation],
      "layer_norm_epsilon": cfg.layer_norm_eps, "resid_pdrop": 0.0,
      "embd_pdrop": 0.0, "attn_pdrop": 0.0,
      "tie_word_embeddings": cfg.head == "tied",
      "bottleneck_head": _head_info(cfg)}
  return config, tensors


def llama_folder(params, cfg) -> tuple[dict, dict]:
  """(config.json, tensors) of a llama-like Transformer as an HF Llama
  folder (whether it is one is checked by `export`)."""
  p = _flat(params["params"] if "params" in params else params)
  tensors = {}
  if not cfg.tied:
    tensors["lm_head.weight"] = _head_matrix(p)
  for path, w in p.items():
    if path == "embed/embedding":
      tensors["model.embed_tokens.weight"] = w
      continue
    if path == "norm/scale":
      tensors["model.norm.weight"] = w
      continue
    layer, _, rest = path.partition("/")
    module, _, kind = rest.rpartition("/")
    if not layer.startswith("layer_") or module not in _LLAMA_NAMES:
      raise ValueError(f"parameter {path!r} has no place in a Llama folder.")
    name = f"model.layers.{layer[6:]}.{_LLAMA_NAMES[module]}"
    if kind == "kernel":
      tensors[name + ".weight"] = np.ascontiguousarray(w.T)
    else:  # A norm's scale, a dense layer's bias.
      tensors[name + (".weight" if kind == "scale" else ".bias")] = w
  config = {
      "model_type": "llama", "architectures": ["LlamaForCausalLM"],
      "vocab_size": cfg.vocab_size, "hidden_size": cfg.n_embd,
      "intermediate_size": cfg.ffn_dim, "num_hidden_layers": cfg.n_layer,
      "num_attention_heads": cfg.n_head,
      "num_key_value_heads": cfg.n_kv_head, "head_dim": cfg.head_dim,
      "hidden_act": "silu", "max_position_embeddings": cfg.context_length,
      "rms_norm_eps": cfg.norm_eps, "rope_theta": cfg.rope_theta,
      "attention_bias": cfg.qkv_bias, "mlp_bias": False,
      "tie_word_embeddings": cfg.tied, "bottleneck_head": _head_info(cfg)}
  return config, tensors


def _as_exported(cfg):
  """The model config the folder must load as: the head folded (a
  low-rank head is its product), GPT-2's q/k/v biases always on."""
  if isinstance(cfg, gpt.GPTConfig):
    head = "untied" if cfg.head == "lowrank" else cfg.head
    return dataclasses.replace(cfg, head=head, head_rank=0, qkv_bias=True)
  return dataclasses.replace(cfg, head_rank=0)


def _check_reads_back(folder: str, cfg) -> None:
  """The config the project's hf: loader reads from `folder` is `cfg`'s
  (folded), field by field; else one error naming the first field."""
  got = dataclasses.asdict(loaders.config_of("hf:" + folder))
  want = dataclasses.asdict(_as_exported(cfg))
  ignored = _IGNORED if isinstance(cfg, gpt.GPTConfig) else _IGNORED_LLAMA
  for key, value in want.items():
    if key not in ignored and got.get(key) != value:
      raise ValueError(
          f"the run's model cannot be written as an HF {cfg.family!r} "
          f"folder: its {key} is {value!r}, and the folder would load as "
          f"{got.get(key)!r} (model.{key}).")


def _bytes_to_unicode() -> dict[int, str]:
  """GPT-2's byte -> printable character map (byte-level BPEs use it)."""
  keep = (list(range(ord("!"), ord("~") + 1)) +
          list(range(ord("\xa1"), ord("\xac") + 1)) +
          list(range(ord("\xae"), ord("\xff") + 1)))
  chars, extra = dict(zip(keep, map(chr, keep))), 0
  for b in range(256):
    if b not in chars:
      chars[b] = chr(256 + extra)
      extra += 1
  return chars


def _byte_tokenizer_json() -> str:
  """The `byte` tokenizer (id = the UTF-8 byte, <|endoftext|> = 256) as a
  byte-level BPE without merges."""
  from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # pylint: disable=g-import-not-at-top
  vocab = {c: b for b, c in _bytes_to_unicode().items()}
  tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
  tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False,
                                               use_regex=False)
  tok.decoder = decoders.ByteLevel()
  tok.add_special_tokens([tokenizers.EOT])
  return tok.to_str()


def write_tokenizer(config, folder: str) -> str:
  """The run's tokenizer files in `folder`; what was written (or why
  not), for the summary."""
  name = config.data.tokenizer
  if name.startswith("hf:"):  # Its own files, special tokens and all.
    tokenizers.load(name)  # Loads (else the error names data.tokenizer).
    source = name[3:]
    copied = sorted(f for f in os.listdir(source)
                    if f in tokenizers._HF_DEFINITION_FILES)  # pylint: disable=protected-access
    for f in copied:
      shutil.copy(os.path.join(source, f), folder)
    return f"{', '.join(copied)} copied from {source}"
  if name == "byte":
    definition = _byte_tokenizer_json()
  else:
    kind, _, definition = data.tokenizer_for(
        config.data).definition().partition("|")
    if kind not in ("gpt2", "file"):
      return (f"not written: the {name!r} tokenizer (a GGUF file's) has no "
              "tokenizer.json form; load this folder with that tokenizer")
  with open(os.path.join(folder, "tokenizer.json"), "w",
            encoding="utf-8") as f:
    f.write(definition)
  with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
    json.dump({"tokenizer_class": "PreTrainedTokenizerFast",
               "eos_token": tokenizers.EOT,
               "model_max_length": int(config.model.block_size),
               "clean_up_tokenization_spaces": False}, f, indent=1)
  return f"tokenizer.json + tokenizer_config.json ({name})"


def _eot_id(config) -> int | None:
  """The run's end-of-text id (its tokenizer's eot_id; a SpamLang or
  synthetic run without one: None)."""
  if config.data.source == "spamlang":
    return None
  try:
    return int(data.tokenizer_for(config.data).eot_id)
  except (ValueError, OSError, AttributeError):
    return None


def _check_outdir(outdir: str) -> None:
  if os.path.isdir(outdir):
    if os.listdir(outdir):
      raise ValueError(f"`outdir` {outdir!r} exists and is not empty: give "
                       "a new folder (an export never overwrites).")
  elif os.path.exists(outdir):
    raise ValueError(f"`outdir` {outdir!r} exists and is not a folder.")


def export(workdir: str, outdir: str) -> dict:
  """The newest checkpoint of the run in `workdir` as an HF folder
  `outdir` (new or empty); returns a summary of what was written."""
  if not os.path.isdir(workdir):
    raise ValueError(f"`workdir` {workdir!r} is not a folder" + (
        " (train.export reads local run folders only: copy the run down "
        "first)." if "://" in workdir else "."))
  _check_outdir(outdir)
  config = runs.read_config(workdir)
  cfg = build.model_config(config.model)
  params, step = runs.restore_params(workdir, config, cfg=cfg)
  if isinstance(cfg, gpt.GPTConfig):
    hf_config, tensors = gpt2_folder(params, cfg)
  else:
    hf_config, tensors = llama_folder(params, cfg)
  hf_config.update(torch_dtype="float32", bottleneck_run={
      "workdir": os.path.abspath(workdir), "step": int(step)})
  eot = _eot_id(config)
  if eot is not None:  # Else transformers' defaults (50256; Llama's 1, 2).
    hf_config.update(bos_token_id=eot, eos_token_id=eot)
  tmp = f"{outdir.rstrip(os.sep)}.tmp{os.getpid()}"
  try:
    os.makedirs(tmp)
  except OSError as e:
    raise ValueError(f"`outdir` {outdir!r} cannot be created "
                     f"({e.strerror or e}).") from None
  try:
    with open(os.path.join(tmp, "config.json"), "w") as f:
      json.dump(hf_config, f, indent=1)
    _check_reads_back(tmp, cfg)
    from safetensors.numpy import save_file  # pylint: disable=g-import-not-at-top
    save_file(tensors, os.path.join(tmp, "model.safetensors"),
              metadata={"format": "pt"})
    tokenizer = write_tokenizer(config, tmp)
    if os.path.isdir(outdir):
      os.rmdir(outdir)  # Empty (checked): the rename puts the folder there.
    os.replace(tmp, outdir)
  except BaseException:
    shutil.rmtree(tmp, ignore_errors=True)
    raise
  summary = {"outdir": outdir, "model_type": hf_config["model_type"],
             "head": hf_config["bottleneck_head"], "step": int(step),
             "tensors": len(tensors), "tokenizer": tokenizer}
  if cfg.head_bias:
    summary["note"] = ("lm_head.bias is read by this project's hf: loader; "
                       "transformers' GPT2LMHeadModel has no logit bias "
                       "and drops it")
  return summary
