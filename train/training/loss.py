"""Next-token cross-entropy that never holds the [B, T, V] logits.

  loss = mean_n [ logsumexp(z_n) - z_n[y_n] ],  z_n = head(h_n)  (float32)

`chunked_xent` scans over chunks of `chunk` tokens; each chunk's logits are
formed, reduced to its summed loss and dropped, and `jax.checkpoint` makes
the backward pass form them again chunk by chunk instead of keeping them
(the head's gradient accumulates across the scan). Peak memory is one
chunk's [chunk, V] logits and their cotangent instead of the whole batch's
(SpamLang at seed 002 Table 3's batch, 128 x 64 tokens, and V = 131072:
4.3 GB of float32 logits before the gradient). `head` is the model's own
(soft-capping, a low-rank W = A B, a tied embedding, a bias included), its
logits taken to float32 before the log-sum-exp.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

LOGIT_BYTES = 64 << 20  # Float32 logits one chunk may hold (chunk = 0).


def chunk_tokens(vocab: int, n_tokens: int, chunk: int = 0) -> int:
  """Tokens per chunk: `chunk`, or as many as LOGIT_BYTES of float32
  logits hold; at most n_tokens."""
  if chunk < 0:
    raise ValueError(f"`train.loss_chunk` must be >= 0; got {chunk}.")
  chunk = chunk or max(1, LOGIT_BYTES // (4 * vocab))
  return max(1, min(chunk, n_tokens))


def _summed(head, h_cxd, y_c, w_c):
  """Sum over a chunk of w * (logsumexp(z) - z[y]), z = head(h) in f32."""
  z = head(h_cxd).astype(jnp.float32)
  lse = jax.nn.logsumexp(z, axis=-1)
  z_y = jnp.take_along_axis(z, y_c[:, None], axis=-1)[:, 0]
  return jnp.sum(w_c * (lse - z_y))


def chunked_xent(head, h_nxd, y_n, chunk: int = 0):
  """Mean cross-entropy of labels y [N] under logits head(h) [N, V]: the
  logits formed `chunk` tokens at a time, forward and backward. `head`
  maps hidden states [C, D] to logits [C, V]."""
  n, d = h_nxd.shape
  vocab = jax.eval_shape(head, jax.ShapeDtypeStruct((1, d), h_nxd.dtype)
                         ).shape[-1]
  c = chunk_tokens(vocab, n, chunk)
  k = -(-n // c)
  pad = k * c - n  # Padded tokens weigh 0.
  h = jnp.pad(h_nxd, ((0, pad), (0, 0))).reshape(k, c, d)
  y = jnp.pad(y_n, (0, pad)).reshape(k, c)
  w = jnp.pad(jnp.ones((n,), jnp.float32), (0, pad)).reshape(k, c)
  piece = jax.checkpoint(lambda hc, yc, wc: _summed(head, hc, yc, wc))

  def body(total, xs):
    return total + piece(*xs), None

  total, _ = jax.lax.scan(body, jnp.zeros((), jnp.float32), (h, y, w))
  return total / n


def naive_xent(head, h_nxd, y_n):
  """The same loss with every logit formed at once (the reference)."""
  return _summed(head, h_nxd, y_n, jnp.ones(y_n.shape, jnp.float32)) / (
      y_n.shape[0])
