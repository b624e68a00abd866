"""Jitted decoding in a fixed buffer, and seed 004's story-completion table.

The buffer is [B, L] (L: the longest prompt plus the new tokens, rounded
up to 64, at most block_size); prompts sit left-aligned with their own
lengths. Each step runs the model on the whole buffer (causal attention makes
the unused tail irrelevant), reads the logits at each row's last position and
writes the sampled token after it. Shapes never change with the prompt, so
one compile serves every prompt (`lax.fori_loop`, no recompiles).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np


def _filter_logits(logits_bv, temperature, top_k, top_p):
  """Temperature, then top-k (k <= 0: off), then nucleus top-p (p >= 1: off)."""
  logits = logits_bv / jnp.maximum(temperature, 1e-6)
  v = logits.shape[-1]
  sorted_desc = -jnp.sort(-logits, axis=-1)
  kth = jnp.take(sorted_desc, jnp.clip(top_k - 1, 0, v - 1), axis=-1)
  logits = jnp.where((top_k > 0) & (logits < kth[:, None]), -jnp.inf, logits)
  sorted_desc = -jnp.sort(-logits, axis=-1)
  cum = jnp.cumsum(jax.nn.softmax(sorted_desc, axis=-1), axis=-1)
  # Smallest set whose mass reaches p: keep tokens at or above its last one.
  cutoff_index = jnp.sum(cum < top_p, axis=-1)
  cutoff = jnp.take_along_axis(sorted_desc, jnp.clip(
      cutoff_index, 0, v - 1)[:, None], axis=-1)
  return jnp.where((top_p < 1.0) & (logits < cutoff), -jnp.inf, logits)


@functools.partial(jax.jit, static_argnames=("model", "max_new"))
def decode(params, model, buffer_bt, lengths_b, key, max_new: int,
           temperature=0.0, top_k=0, top_p=1.0):
  """Appends `max_new` tokens after each row's `lengths_b` prompt tokens.

  temperature 0 is greedy. Returns the buffer and the new lengths.
  """
  rows = jnp.arange(buffer_bt.shape[0])

  def step(i, carry):
    buf, lengths = carry
    # The head on each row's last position only, and the filters (two sorts
    # of V) only when sampling, a third of greedy decoding's time before.
    h_bd = model.apply(params, buf, method=type(model).hidden)[
        rows, lengths - 1]
    logits = model.apply(params, h_bd, method=type(model).head)

    def sample():
      filtered = _filter_logits(logits, temperature, top_k, top_p)
      return jax.random.categorical(jax.random.fold_in(key, i), filtered)

    token = jax.lax.cond(temperature > 0, sample,
                         lambda: jnp.argmax(logits, axis=-1))
    return buf.at[rows, lengths].set(token.astype(buf.dtype)), lengths + 1

  return jax.lax.fori_loop(0, max_new, step, (buffer_bt, lengths_b))


@functools.partial(jax.jit, static_argnames=("model", "max_new"))
def sample_cached(params, model, prompts_bxp, key, max_new: int,
                  temperature=1.0, top_k=0, top_p=1.0):
  """Continuations of equal-length prompts [B, P] -> [B, P + max_new]
  through a KV cache (models with `hidden_step`: the llama-like
  Transformer): one token per row and step, so P + max_new - 1 steps of B
  tokens instead of `decode`'s whole buffer per step. temperature 0 is
  greedy (then equal to `decode`)."""
  b, p = prompts_bxp.shape
  total = p + max_new
  buf = jnp.zeros((b, total), prompts_bxp.dtype).at[:, :p].set(prompts_bxp)
  cache = model.apply(params, b, total, method=type(model).init_cache)

  def step(i, carry):
    buf, cache = carry
    h, cache = model.apply(params, buf[:, i], i, cache,
                           method=type(model).hidden_step)
    logits = model.apply(params, h, method=type(model).head)

    def sample():
      # The filters sort V twice per row: only when one is on (Gemma 3's
      # 262144 tokens made them most of a plain sampling step).
      filtered = jax.lax.cond(
          (top_k > 0) | (top_p < 1.0),
          lambda: _filter_logits(logits, temperature, top_k, top_p),
          lambda: logits / jnp.maximum(temperature, 1e-6))
      return jax.random.categorical(jax.random.fold_in(key, i), filtered)

    token = jax.lax.cond(temperature > 0, sample,
                         lambda: jnp.argmax(logits, axis=-1))
    nxt = jnp.where(i + 1 >= p, token.astype(buf.dtype), buf[:, i + 1])
    return buf.at[:, i + 1].set(nxt), cache

  return jax.lax.fori_loop(0, total - 1, step, (buf, cache))[0]


def buffer_length(longest_prompt: int, max_new: int, block_size: int) -> int:
  """The decode buffer: the prompt and the new tokens rounded up to 64 (one
  compile per size), at most block_size (prompts are cropped to fit)."""
  return min(block_size, -(-(longest_prompt + max_new) // 64) * 64)


def complete(params, model, cfg, prompts: list[list[int]], max_new: int,
             seed: int = 0, temperature: float = 0.0, top_k: int = 0,
             top_p: float = 1.0) -> list[list[int]]:
  """New tokens for each prompt (prompts cropped on the left to fit)."""
  if max_new < 1 or max_new >= cfg.block_size:
    raise ValueError(f"`tokens` must be in [1, block_size={cfg.block_size}); "
                     f"got {max_new}.")
  if not (temperature >= 0 and 0 < top_p <= 1 and top_k >= 0):  # NaN: no.
    raise ValueError("`temperature` must be >= 0, `top_p` in (0, 1], `top_k` "
                     f">= 0; got {temperature}, {top_p}, {top_k}.")
  size = buffer_length(max(len(p) for p in prompts), max_new, cfg.block_size)
  keep = size - max_new
  prompts = [list(p)[-keep:] or [0] for p in prompts]
  buf = np.zeros((len(prompts), size), np.int32)
  for i, p in enumerate(prompts):
    buf[i, :len(p)] = p
  lengths = np.array([len(p) for p in prompts], np.int32)
  out, _ = decode(params, model, jnp.asarray(buf), jnp.asarray(lengths),
                  jax.random.key(seed), max_new, temperature, top_k, top_p)
  out = np.asarray(out)
  return [out[i, lengths[i]:lengths[i] + max_new].tolist()
          for i in range(len(prompts))]


def split_stories(stories: list[str], tokenizer, n: int, new_tokens: int,
                  seed: int = 0, max_prompt: int | None = None):
  """Seed 004 §4.2: split n held-out stories at a random token position.

  Returns [(prompt_ids, original_ids)] with `new_tokens` original tokens.
  """
  if not isinstance(n, int) or n < 1:
    raise ValueError(f"`n` (stories to split) must be an integer >= 1; got "
                     f"{n!r}.")
  if not isinstance(new_tokens, int) or new_tokens < 1:
    raise ValueError(f"`new_tokens` (tokens to complete) must be an integer "
                     f">= 1; got {new_tokens!r}.")
  rng = np.random.default_rng(seed)
  out = []
  for i in rng.permutation(len(stories)):
    ids = tokenizer.encode(stories[i])
    if len(ids) < new_tokens + 4:
      continue
    cut = int(rng.integers(2, len(ids) - new_tokens))
    prompt = ids[:cut] if max_prompt is None else ids[:cut][-max_prompt:]
    out.append((prompt, ids[cut:cut + new_tokens]))
    if len(out) == n:
      break
  if len(out) < n:
    raise ValueError(f"`n` / `new_tokens`: only {len(out)} held-out "
                     f"stories are long enough to split for {new_tokens} new "
                     f"tokens; asked for {n} (fewer stories or fewer "
                     "tokens).")
  return out
