"""One forward per subject and text: every probe reads the same `Pass`.

  pass_ = forward.run(subject, x, y)        # windows x, targets y [n, T]

runs the model once over the windows (batches sharded over all devices
with NamedSharding, parameters replicated) and, inside the same jitted
call, one pass over the logits (bottleneck.gradient.head_statistics,
`chunk` positions at a time): per position the NLL and top-1 hit, summed
the next-token distribution alpha (seed 003) and seed 002's gradient sums.
The hidden states H [n T, D] stay on the host (float32, 42 MB for 16384
positions at D = 640); the probes that need probabilities of single
positions recompute them from H and W for a capped subset (`position_cap`)
and say how many they used. The logits of one 1024-token window at
V = 262144 are 1 GiB in float32: they never exist at once.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import gradient, sharding
from train.probes.subjects import Subject

# Bytes of float32 logits (and as many for probabilities and gradients)
# one scan step of the head pass may hold (32 MiB: larger buffers are
# mmapped afresh by malloc at every step, and page faults then cost more
# than the products: Gemma 3, 4 windows x 16 positions, 30% slower).
HEAD_CHUNK_BYTES = 1 << 25
# The same for the Pass's statistics (gradient.head_statistics), whose scan
# over blocks of W keeps only the capped logits of a step (128 MiB was a
# third faster than 8 MiB on Gemma 3).
PASS_CHUNK_BYTES = 1 << 27


@dataclasses.dataclass
class Pass:
  """A subject's forward over one text (see the module docstring)."""
  subject: str
  text: str  # The text spec probed.
  x: np.ndarray  # Windows [n, T] (BOS first where the model uses one).
  y: np.ndarray  # Targets [n, T].
  h: np.ndarray  # Hidden states [n T, D] float32 (the head's input).
  nll: np.ndarray  # -log p(y) per position [n T] float64.
  top1: np.ndarray  # y is the most likely token [n T] bool.
  alpha: np.ndarray  # Mean next-token distribution over positions [V].
  gradient: dict  # Seed 002 sums: grad_sq, visible_sq, cos_sum.
  cos: np.ndarray | None  # cos(g, P_W g) per position [n T] (seed 002).
  seconds: dict  # forward (model + head pass), basis (QR of W).

  @property
  def tokens(self) -> int:
    return int(self.y.size)

  @property
  def targets(self) -> np.ndarray:
    return self.y.reshape(-1)

  def perplexity(self) -> float:
    return float(math.exp(self.nll.mean()))

  def describe(self) -> dict:
    return {"text": self.text or "default", "tokens": self.tokens,
            "windows": int(self.x.shape[0]), "window": int(self.x.shape[1]),
            "seconds": {k: round(v, 2) for k, v in self.seconds.items()}}


def position_cap(vocab: int, budget_bytes: int = 1 << 29) -> int:
  """How many positions' float32 distributions fit in `budget_bytes`
  (512 MiB: 512 positions at V = 262144, 2730 at V = 49152)."""
  return max(1, budget_bytes // (4 * vocab))


@functools.partial(jax.jit, static_argnames=("model", "chunk", "softcap"))
def _window_pass(params, model, x_bt, y_bt, valid_b, w_vxd, b_v, m_dxd,
                 chunk: int, softcap: float):
  h = model.apply(params, x_bt, method=type(model).hidden)
  stats = gradient.head_statistics(h, y_bt, w_vxd, b_v, m_dxd, chunk,
                                   softcap, valid_b)
  return h, stats


def _placed(subject: Subject, mesh):
  """Parameters and head replicated on `mesh`, once per subject and mesh."""
  key = tuple(mesh.devices.flat)
  cache = getattr(subject, "_placed", None)
  if cache is None or cache[0] != key:
    rep = sharding.replicated(mesh)
    w, b = subject.cfg.head_weights(subject.params)
    w = jnp.asarray(w, jnp.float32)
    subject._placed = (key, jax.device_put(subject.params, rep),  # pylint: disable=protected-access
                       jax.device_put(w, rep), None if b is None else
                       jax.device_put(jnp.asarray(b, jnp.float32), rep))
  return subject._placed[1:]  # pylint: disable=protected-access


def with_embeddings(subject: Subject, e_vxd, mesh=None) -> Subject:
  """The subject with its input embedding (a tied head's shared matrix)
  replaced by e_vxd, its other weights the subject's placed copies (no new
  copy of the model per variant)."""
  mesh = mesh or sharding.batch_mesh()
  params, _, b = _placed(subject, mesh)
  e = jax.device_put(jnp.asarray(e_vxd), sharding.replicated(mesh))
  sub = dataclasses.replace(subject, params=subject.cfg.replace_embeddings(
      subject.params, e_vxd), derived={})
  sub._placed = (tuple(mesh.devices.flat),  # pylint: disable=protected-access
                 subject.cfg.replace_embeddings(params, e),
                 jnp.asarray(e, jnp.float32), b)
  return sub


def device_head(subject: Subject, mesh=None):
  """The head W [V, D] and bias (or None) as float32 device arrays, the
  copies `run` reads (placed once per subject and mesh)."""
  _, w, b = _placed(subject, mesh or sharding.batch_mesh())
  return w, b


def head_whitener(subject: Subject, mesh=None):
  """gradient.head_whitener of the subject's head (D x D, replicated on
  the mesh), computed once per subject and mesh."""
  mesh = mesh or sharding.batch_mesh()
  key = tuple(mesh.devices.flat)
  cache = getattr(subject, "_whitener", None)
  if cache is None or cache[0] != key:
    m = gradient.head_whitener(device_head(subject, mesh)[0])
    subject._whitener = (key, jax.device_put(m, sharding.replicated(mesh)))  # pylint: disable=protected-access
  return subject._whitener[1]  # pylint: disable=protected-access


def sharded_batches(arrays, batch: int, mesh):
  """(n_real, device arrays) per batch of windows: the batch axis padded to
  a multiple of the device count and sharded over `mesh`."""
  n_dev = mesh.devices.size
  size = sharding.round_up(min(batch, len(arrays[0])), n_dev)
  for i in range(0, len(arrays[0]), size):
    parts = [np.asarray(a[i:i + size]) for a in arrays]
    n = len(parts[0])
    parts = [np.concatenate([p, np.zeros((size - n,) + p.shape[1:], p.dtype)])
             for p in parts]
    yield n, [jax.device_put(p, sharding.batch_sharded(mesh, p.ndim))
              for p in parts]


def run(subject: Subject, x, y, text: str = "", batch: int = 4,
        gradient_sums: bool = True, mesh=None, progress=None) -> Pass:
  """The Pass of `subject` over windows x with targets y ([n, T] each).

  gradient_sums: also seed 002's sums (through the D x D whitener of W).
  progress(done, total): called after each batch.
  """
  x, y = np.asarray(x, np.int32), np.asarray(y, np.int32)
  if x.ndim != 2 or x.shape != y.shape or x.size == 0:
    raise ValueError(f"`windows` must be [n, T] inputs and targets of one "
                     f"shape with n, T >= 1; got {x.shape} and {y.shape}.")
  mesh = mesh or sharding.batch_mesh()
  params, w, b = _placed(subject, mesh)
  start = time.perf_counter()
  whitener = head_whitener(subject, mesh) if gradient_sums else None
  basis_s = time.perf_counter() - start
  n_dev = mesh.devices.size
  per_batch = sharding.round_up(min(batch, len(x)), n_dev)
  chunk = min(x.shape[1], rows_per_step(w.shape[0], per_batch,
                                        PASS_CHUNK_BYTES))
  hs, nll, top1, cos, sums = [], [], [], [], {}
  start, done = time.perf_counter(), 0
  ones = np.ones(len(x), np.float32)  # Padding windows get 0.
  for n, (xb, yb, vb) in sharded_batches([x, y, ones], batch, mesh):
    h, stats = _window_pass(params, subject.model, xb, yb, vb, w, b, whitener,
                            chunk=chunk, softcap=float(
                                subject.cfg.logit_softcap))
    hs.append(np.asarray(h[:n], np.float32).reshape(-1, h.shape[-1]))
    nll.append(np.asarray(stats["nll"][:n], np.float64).ravel())
    top1.append(np.asarray(stats["top1"][:n]).ravel())
    if "cos" in stats:
      cos.append(np.asarray(stats["cos"][:n], np.float32).ravel())
    for k in ("alpha", "grad_sq", "visible_sq", "cos_sum"):
      if k in stats:
        sums[k] = sums.get(k, 0.0) + np.asarray(stats[k], np.float64)
    done += n
    if progress:
      progress(done, len(x))
  alpha, nll = sums.pop("alpha"), np.concatenate(nll)
  bad = int(nll.size - np.count_nonzero(np.isfinite(nll)))
  if bad:  # Never a silent NaN in a report (loaders validate the weights;
    raise ValueError(  # this is the last line of defence).
        f"`model` {subject.name}: the forward pass gave {bad} non-finite "
        f"log-likelihood(s) of {nll.size} (a broken checkpoint, or token "
        f"ids past its {w.shape[0]} embedding rows?).")
  return Pass(subject.name, text, x, y, np.concatenate(hs),
              nll, np.concatenate(top1), alpha / alpha.sum(),
              {k: float(v) for k, v in sums.items()},
              np.concatenate(cos) if cos else None,
              {"forward": time.perf_counter() - start, "basis": basis_s})


def rows_per_step(vocab: int, batch: int = 1,
                  budget: int = HEAD_CHUNK_BYTES,
                  positions: int | None = None) -> int:
  """Positions per step of a pass over the logits: the largest power of
  two with batch x rows x V float32 logits within `budget` bytes (XLA:CPU
  ran [4 x 12, V] x [V, D] products 3x slower than 4 x 8 or 4 x 16 rows),
  and no more than the power of two that holds all `positions` (a padded
  step over a small vocabulary was 1000x the work: V = 300, 64 positions
  in steps of 65536)."""
  rows = max(1, budget // (4 * vocab * batch))
  if positions is not None:
    rows = min(rows, 1 << max(0, int(positions) - 1).bit_length())
  return 1 << (rows.bit_length() - 1)


def probabilities(h_nxd, w_vxd, b_v=None, softcap: float = 0.0,
                  chunk: int | None = None):
  """softmax of the model's logits for rows of H: [n, V] float32 (small n:
  see position_cap), `chunk` rows at a time (default rows_per_step)."""
  chunk = chunk or rows_per_step(np.shape(w_vxd)[0])
  w = jnp.asarray(w_vxd, jnp.float32)
  b = None if b_v is None else jnp.asarray(b_v, jnp.float32)
  out = np.empty((len(h_nxd), w.shape[0]), np.float32)  # Filled in place:
  for i in range(0, len(h_nxd), chunk):  # no second copy at the end.
    out[i:i + chunk] = _softmax(jnp.asarray(h_nxd[i:i + chunk], jnp.float32),
                                w, b, float(softcap))
  return out


@functools.partial(jax.jit, static_argnames="softcap")
def _softmax(h, w, b, softcap):
  z = h @ w.T
  if b is not None:
    z = z + b[None, :]
  if softcap:
    z = softcap * jnp.tanh(z / softcap)
  return jax.nn.softmax(z, axis=-1)
