"""Completions from run folders (seed 004, Tables 5.1 / 5.2), and the
model's loss on the held-out originals they are compared against."""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np

from train.models import generate
from train.text import data
from train.training import loss as loss_lib
from train.training import runs


def load_run(workdir: str):
  """(params, model, GPTConfig, tokenizer, config) of a run folder."""
  params, cfg, tok, config = runs.load(workdir)
  return params, cfg.module(), cfg, tok, config


def continue_text(workdir: str, prompt: str, tokens: int, **sampling) -> str:
  params, model, cfg, tok, _ = load_run(workdir)
  out = generate.complete(params, model, cfg, [tok.encode(prompt)], tokens,
                          **sampling)
  return tok.decode(out[0])


def _cell(text: str) -> str:
  return text.replace("|", "\\|").replace("\n", " ").strip()


def held_out_stories(loaded) -> list[str]:
  """The first loaded run's held-out documents (data.heldout_documents),
  which generate.split_stories splits into seed 004 §4.2's (prompt,
  original) pairs; every run must share its tokenizer."""
  tok0, config0 = loaded[0][3], loaded[0][4]
  for run in loaded[1:]:
    if run[3].name != tok0.name:
      raise ValueError("`workdir` runs must share one tokenizer; got "
                       f"{tok0.name} and {run[3].name}.")
  return data.heldout_documents(config0.data, tok0)


def story_markdown(tok, count: int, pairs, columns: dict) -> str:
  """One completion table: prompt, original, a column per model
  (`columns`: label -> each pair's completion ids)."""
  head = ["prompt", "original"] + list(columns)
  lines = [f"**Story completions ({count} tokens)**", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
  for i, (prompt, original) in enumerate(pairs):
    cells = [tok.decode(prompt)[-300:], tok.decode(original)]
    cells += [tok.decode(col[i]) for col in columns.values()]
    lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
  return "\n".join(lines)


def story_table(workdirs, n: int, token_counts, seed: int = 0,
                labels=None, **sampling) -> str:
  """Markdown: one table per completion length, a column per model
  (`labels`: the columns' names; default the workdirs' folder names)."""
  labels = labels or [os.path.basename(os.path.normpath(wd))
                      for wd in workdirs]
  loaded = [load_run(wd) for wd in workdirs]
  stories, tok = held_out_stories(loaded), loaded[0][3]
  parts = []
  for count in token_counts:
    pairs = generate.split_stories(stories, tok, n, count, seed)
    columns = {label: generate.complete(
        params, model, cfg, [p for p, _ in pairs], count, seed, **sampling)
               for label, (params, model, cfg, _, _) in zip(labels, loaded)}
    parts.append(story_markdown(tok, count, pairs, columns))
  return "\n\n".join(parts)


@functools.partial(jax.jit, static_argnames=("model", "chunk"))
def _pair_losses(params, model, x_bxl, starts_b, y_bxn, chunk: int):
  """Each row's mean cross-entropy of y [B, n] read from the hidden states
  at positions starts_b .. starts_b + n - 1 of one forward over x."""
  h_bxlxd = model.apply(params, x_bxl, deterministic=True, method="hidden")
  pos_bxn = starts_b[:, None] + jnp.arange(y_bxn.shape[1])[None, :]
  h_bxnxd = jnp.take_along_axis(h_bxlxd, pos_bxn[:, :, None], axis=1)
  return jax.lax.map(lambda hy: loss_lib.model_xent(
      model.cfg, params, hy[0], hy[1], chunk), (h_bxnxd, y_bxn))


def continuation_losses(params, model, cfg, pairs, chunk: int = 0
                        ) -> list[float]:
  """Each (prompt ids, original ids) pair's mean cross-entropy (nats per
  token) of the original given the prompt: teacher forcing, one forward
  over prompt + original, the trainer's loss (training/loss.py
  model_xent). A prompt is cropped on the left to block_size - n tokens,
  as generate.complete crops it, so the loss and the greedy completion
  see the same context."""
  if not pairs:
    raise ValueError("`pairs` must hold at least one (prompt, original).")
  n = len(pairs[0][1])
  vocab = cfg.vocab_size
  for i, (prompt, original) in enumerate(pairs):
    if len(original) != n or not 1 <= n < cfg.block_size:
      raise ValueError(
          f"`pairs`: every original must have the same length n in [1, "
          f"block_size={cfg.block_size}); pair {i} has {len(original)} "
          f"tokens, pair 0 {n}.")
    if not prompt:
      raise ValueError(f"`pairs`: pair {i}'s prompt is empty (a "
                       "continuation needs at least one token before it).")
    ids = np.asarray(list(prompt) + list(original))
    if ids.min() < 0 or ids.max() >= vocab:
      raise ValueError(f"`pairs`: pair {i} holds token ids outside [0, "
                       f"V={vocab}).")
  prompts = [list(p)[-(cfg.block_size - n):] for p, _ in pairs]
  size = generate.buffer_length(max(map(len, prompts)), n - 1,
                                cfg.block_size)
  x = np.zeros((len(pairs), size), np.int32)
  for i, (p, (_, original)) in enumerate(zip(prompts, pairs)):
    seq = p + list(original)[:-1]
    x[i, :len(seq)] = seq
  starts = np.array([len(p) - 1 for p in prompts], np.int32)
  y = np.array([list(o) for _, o in pairs], np.int32)
  out = _pair_losses(params, model, jnp.asarray(x), jnp.asarray(starts),
                     jnp.asarray(y), int(chunk))
  return [float(v) for v in np.asarray(jax.device_get(out))]
