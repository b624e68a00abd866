"""The expressivity control: a rank-D head on free or frozen contexts.

Seed 002 (Godey & Artzi) §2.1 assumes "fully expressive representations":
each distinct context c gets any vector h_c, so training is a minimisation
over {h_c} and W of eq. (3), -1/T <N, log softmax(H W^T)>. Issue 78: a loss
that rises with V at small D (§3.1 Fig. 1, §3.2 Fig. 14) is expected from
bounded-norm expressivity as much as from the gradient bottleneck, and
this setting is the control that separates them. Here the same head is
trained with no backbone, under the trainer's optimiser:

  free contexts (`fit_free_contexts`)   C [n, width] trained with the head:
      the ceiling the head allows at this V, D, optimiser, weight decay and
      budget; SpamLang (`spamlang_ceiling`): n = V contexts, y_i = i.
  frozen features (`fit_frozen_features`)   C fixed: given hidden states
      (the low-rank sweep's largest-D run), the rank-D head's best held-out
      loss on them. One code path: C is a parameter or an input.

Mirrored from the model (train/models/transformer.py, the llama-like
family of configs/lowrank.py and spamlang.py): rank D in [1, width] is W =
A B as head_b [width, D], lm_head [D, V] (D = width too); D = 0 the full
lm_head [width, V]; both N(0, 0.02^2); no bias (head_bias False). The
optimiser is train/training/optim.py's from the `train` block's fields
(`Settings.from_train`): clipping, Adam, decoupled decay on ndim >= 2
leaves (so on A, B, W), lr(step) read on the host. Our choice for C: no
decay, entries N(0, context_scale^2 = 1): the model's head input is its
final RMSNorm's output, unit RMS at init and scaled by a gain the trainer
never decays; the paper's h_c are unconstrained. C is stored flat [n *
width] so the trainer's own mask leaves it undecayed (Adam and clipping
act per element and globally: nothing else changes); `decay_contexts`
stores it [n, width]. A step draws `batch_size` pairs uniformly with
replacement: for SpamLang the model's batch of sequences (each sequence
one context, its token, whose copies all predict the same token).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import checks
from train.training import optim

INIT_STD = 0.02  # The model's head init (transformer.INIT, gpt.py's).
TRAIN_FIELDS = ("steps", "batch_size", "lr", "warmup", "schedule",
                "decay_fraction", "min_lr_ratio", "weight_decay", "b1", "b2",
                "eps", "grad_clip")
_INF = float("inf")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
  """The `train` block's fields (defaults: configs/spamlang.py's CPU model)
  plus the control's own; optim.optimizer / learning_rates read it."""
  steps: int = 600  # Optimizer steps.
  batch_size: int = 256  # (context, target) pairs per step.
  lr: float = 3e-3  # Peak learning rate.
  warmup: int = 60  # Linear warm-up steps.
  schedule: str = "cosine"  # cosine | wsd | constant (optim.SCHEDULES).
  decay_fraction: float = 0.1  # wsd: share of steps in the final decay.
  min_lr_ratio: float = 0.1  # Final lr / peak lr.
  weight_decay: float = 0.01  # AdamW decay (A, B, a full W; C see above).
  b1: float = 0.9
  b2: float = 0.999
  eps: float = 1e-8
  grad_clip: float = 1.0  # Global-norm clipping (0 = off).
  eval_every: int = 100  # Steps between evaluations (and the last step).
  eval_chunk: int = 1024  # Contexts per chunk of an evaluation's logits.
  decay_contexts: bool = False  # Weight decay on the free contexts C too.
  context_scale: float = 1.0  # Std of C's initial entries (unit RMS).
  dtype: str = "float32"  # float32 | float64 (needs jax_enable_x64).

  def __post_init__(self):
    for name in ("steps", "batch_size", "eval_every", "eval_chunk"):
      checks.positive_int(name, getattr(self, name))
    checks.number_in("b1", self.b1, 0.0, 1.0, lo_closed=True)
    checks.number_in("b2", self.b2, 0.0, 1.0)
    for name in ("eps", "context_scale"):
      checks.number_in(name, getattr(self, name), 0.0, _INF)
    for name in ("weight_decay", "grad_clip"):
      checks.number_in(name, getattr(self, name), 0.0, _INF, lo_closed=True)
    checks.one_of("dtype", self.dtype, ("float32", "float64"))
    optim.schedule(self)  # lr, warm-up and schedule, as the trainer checks.

  @classmethod
  def from_train(cls, train, **overrides) -> "Settings":
    """Settings from a config's `train` block (the same optimiser), with
    `overrides` on top. Its batch_size counts sequences: SpamLang's pairs
    (one context per sequence) match; frozen features (one pair per token)
    want batch_size = sequences x block_size, the model's tokens a step."""
    return cls(**({k: getattr(train, k) for k in TRAIN_FIELDS} | overrides))


class Data(NamedTuple):
  """The T (context, next token) pairs the loop reads: eq. (3)'s N as a
  list. `features` None: the n contexts are parameters."""
  features: Any  # [T, width] fixed contexts, or None (free: params).
  targets: jax.Array  # [T] int32 next token of each pair.
  context_ids: Any  # [T] int32 free context of each pair (None: pair i, i).
  eval_features: Any  # [m, width] held-out contexts, or None (the pairs).
  eval_targets: jax.Array  # [m] int32.


class State(NamedTuple):
  step: jax.Array  # int32: steps taken.
  params: dict  # contexts? [n*width | n, width], head_b? [w, D], lm_head.
  opt_state: Any  # optim.optimizer's state.
  key: jax.Array  # Key of the batches (step t: fold_in(key, t)).


class Fit(NamedTuple):
  """A run's numbers (a leading seed axis where several seeds ran)."""
  loss: jax.Array  # Eval loss after the last step.
  best_loss: jax.Array  # Lowest eval loss over the evaluations.
  accuracy: jax.Array  # Eval top-1 accuracy after the last step.
  eval_steps: jax.Array  # [E] steps after which each evaluation ran.
  eval_losses: jax.Array  # [E]
  accuracies: jax.Array  # [E]
  train_losses: jax.Array  # [E] mean batch loss of the steps before each.


def init(seed, *, n: int, width: int, vocab: int, rank: int, s: Settings,
         free: bool) -> State:
  """Initial state: the head as the model's (module docstring), C ~
  N(0, context_scale^2) when `free`; the init and batch keys from seed."""
  k_init, k_data = jax.random.split(jax.random.key(seed))
  k_c, k_b, k_a = jax.random.split(k_init, 3)
  normal = lambda k, shape, std: std * jax.random.normal(k, shape, s.dtype)
  params = ({"head_b": normal(k_b, (width, rank), INIT_STD),
             "lm_head": normal(k_a, (rank, vocab), INIT_STD)} if rank else
            {"lm_head": normal(k_a, (width, vocab), INIT_STD)})
  if free:
    c = normal(k_c, (n, width), s.context_scale)
    params["contexts"] = c if s.decay_contexts else c.reshape(-1)
  return State(jnp.zeros((), jnp.int32), params,
               optim.optimizer(s).init(params), k_data)


def logits(params, h_bxw):
  """h B^T A^T (head_b, lm_head kernels: h @ head_b @ lm_head) or h W^T."""
  h = h_bxw @ params["head_b"] if "head_b" in params else h_bxw
  return h @ params["lm_head"]


def _contexts(params, data: Data, idx=None):
  """The context vectors of pairs `idx` (None: of every pair)."""
  if data.features is not None:
    return data.features if idx is None else data.features[idx]
  width = (params["head_b"] if "head_b" in params else params["lm_head"]
           ).shape[0]
  c = params["contexts"].reshape(-1, width)
  rows = idx if data.context_ids is None else (
      data.context_ids if idx is None else data.context_ids[idx])
  return c if rows is None else c[rows]


def _nll(params, h_bxw, y_b):
  z = logits(params, h_bxw)
  gold = jnp.take_along_axis(z, y_b[:, None], axis=1)[:, 0]
  return jax.nn.logsumexp(z, axis=1) - gold, jnp.argmax(z, axis=1) == y_b


def batch_indices(key, step, n: int, batch: int):
  """The contexts of step `step`: `batch` draws from U{0..n-1}."""
  return jax.random.randint(jax.random.fold_in(key, step), (batch,), 0, n)


def update(state: State, data: Data, lrs, s: Settings):
  """One step: (state after it, the batch's mean cross-entropy before it):
  params - lr(step) * optimizer direction, as trainer.train_step."""
  idx = batch_indices(state.key, state.step, data.targets.shape[0],
                      s.batch_size)

  def loss_fn(params):
    h = _contexts(params, data, idx)
    return jnp.mean(_nll(params, h, data.targets[idx])[0])

  loss, grads = jax.value_and_grad(loss_fn)(state.params)
  direction, opt_state = optim.optimizer(s).update(grads, state.opt_state,
                                                   state.params)
  params = optim.apply(state.params, direction, lrs[state.step])
  return State(state.step + 1, params, opt_state, state.key), loss


def evaluate(params, data: Data, s: Settings):
  """(mean cross-entropy, top-1 accuracy) on the eval contexts (the free
  pairs themselves, or the held-out features), in chunks."""
  h = (_contexts(params, data) if data.eval_features is None
       else data.eval_features)
  nll, hit = jax.lax.map(lambda hy: _nll(params, hy[0][None], hy[1][None]),
                         (h, data.eval_targets),
                         batch_size=min(s.eval_chunk, h.shape[0]))
  return jnp.mean(nll), jnp.mean(hit.astype(h.dtype))


def run(state: State, data: Data, lrs, s: Settings):
  """All s.steps steps from `state` (step 0), evaluating after every
  s.eval_every-th and the last: (final state, Fit). Pure; jit it (`_fit`)."""
  every = s.eval_every

  def chunk(state, k):
    start, stop = k * every, jnp.minimum((k + 1) * every, s.steps)

    def body(_, carry):
      state, total = carry
      state, loss = update(state, data, lrs, s)
      return state, total + loss

    state, total = jax.lax.fori_loop(start, stop, body,
                                     (state, jnp.zeros((), s.dtype)))
    loss, acc = evaluate(state.params, data, s)
    return state, (stop, total / (stop - start), loss, acc)

  state, (steps, train, losses, accs) = jax.lax.scan(
      chunk, state, jnp.arange(-(-s.steps // every)))
  return state, Fit(losses[-1], jnp.min(losses), accs[-1], steps, losses,
                    accs, train)


@functools.partial(jax.jit, static_argnames=("s", "shape"))
def _fit(seeds, data: Data, lrs, *, s: Settings, shape: tuple):
  n, width, vocab, rank = shape
  free = data.features is None

  def one(seed):
    state = init(seed, n=n, width=width, vocab=vocab, rank=rank, s=s,
                 free=free)
    return run(state, data, lrs, s)[1]

  return one(seeds) if seeds.ndim == 0 else jax.vmap(one)(seeds)


def _checked(s: Settings, vocab, width, rank, targets, name: str):
  if jax.dtypes.canonicalize_dtype(s.dtype) != np.dtype(s.dtype):
    raise ValueError(f"`dtype` {s.dtype} needs jax_enable_x64.")
  vocab = checks.int_in_range("vocab", vocab, 2, 2**31 - 1, "V")
  width = checks.positive_int("width", width)
  rank = checks.int_in_range("rank", rank, 0, width,
                             "D; 0 = the full [V, width] head")
  y = np.asarray(targets)
  if y.ndim != 1 or not len(y) or not np.issubdtype(y.dtype, np.integer) \
      or y.min() < 0 or y.max() >= vocab:
    raise ValueError(f"`{name}` must be a non-empty 1-D integer array with "
                     f"entries in [0, vocab = {vocab}); got shape {y.shape}, "
                     f"dtype {y.dtype}.")
  return vocab, width, rank, jnp.asarray(y, jnp.int32)


def _seeds(seed):
  seeds = np.asarray(seed)
  if not np.issubdtype(seeds.dtype, np.integer) or seeds.ndim > 1:
    raise ValueError(f"`seed` must be an integer or a 1-D sequence of "
                     f"integers; got {seed!r}.")
  return jnp.asarray(seeds, jnp.uint32)


def fit_free_contexts(targets_t, *, vocab: int, width: int, rank: int,
                      settings: Settings, contexts_t=None, seed=0) -> Fit:
  """The head on free contexts (§2.1's fully expressive representations,
  eq. (3)): pair i is (context contexts_t[i], next token targets_t[i]),
  one free vector per context (contexts_t None: context i for pair i);
  evaluated on all T pairs. `seed` an int, or a sequence (vmapped: Fit
  with a seed axis)."""
  s = settings
  vocab, width, rank, y = _checked(s, vocab, width, rank, targets_t,
                                   "targets_t")
  ids, n = None, len(y)
  if contexts_t is not None:
    ids = np.asarray(contexts_t)
    if ids.shape != y.shape or not np.issubdtype(ids.dtype, np.integer) \
        or ids.min() < 0:
      raise ValueError(f"`contexts_t` must be integers >= 0, one per entry "
                       f"of `targets_t` ({len(y)}); got shape {ids.shape}.")
    ids, n = jnp.asarray(ids, jnp.int32), int(ids.max()) + 1
  return _fit(_seeds(seed), Data(None, y, ids, None, y),
              optim.learning_rates(s), s=s, shape=(n, width, vocab, rank))


def fit_frozen_features(features_nxw, targets_n, rank: int, *, vocab: int,
                        settings: Settings, heldout=None,
                        heldout_fraction: float = 0.1, seed=0) -> Fit:
  """The rank-D head alone on fixed features (the low-rank sweep's control:
  the largest-D run's final hidden states and next tokens), trained on the
  train rows and read on `heldout` = (features, targets), or else on the
  last `heldout_fraction` of the rows (a tail, as the corpora's split)."""
  s, x, y = settings, np.asarray(features_nxw), np.asarray(targets_n)
  if x.ndim != 2 or not np.all(np.isfinite(x)):
    raise ValueError(f"`features_nxw` must be a finite [n, width] array; "
                     f"got shape {x.shape}.")
  if y.shape != x.shape[:1]:
    raise ValueError(f"`targets_n` must have one entry per row of "
                     f"`features_nxw` ({len(x)}); got shape {y.shape}.")
  if heldout is None:
    frac = checks.number_in("heldout_fraction", heldout_fraction, 0.0, 1.0)
    cut = len(x) - max(1, round(frac * len(x)))
    if cut < 1:
      raise ValueError(f"`heldout_fraction` {frac} leaves no training rows "
                       f"of {len(x)}.")
    x, y, heldout = x[:cut], y[:cut], (x[cut:], y[cut:])
  hx, hy = np.asarray(heldout[0]), np.asarray(heldout[1])
  if hx.shape[1:] != x.shape[1:] or hy.shape != hx.shape[:1] or not np.all(
      np.isfinite(hx)):
    raise ValueError(f"`heldout` must be finite (features [m, {x.shape[1]}],"
                     f" targets [m]); got shapes {hx.shape}, {hy.shape}.")
  vocab, width, rank, y = _checked(s, vocab, x.shape[1], rank, y,
                                   "targets_n")
  hy = _checked(s, vocab, width, rank, hy, "heldout targets")[3]
  data = Data(jnp.asarray(x, s.dtype), y, None, jnp.asarray(hx, s.dtype), hy)
  return _fit(_seeds(seed), data, optim.learning_rates(s), s=s,
              shape=(len(y), width, vocab, rank))


def spamlang_ceiling(vocab: int, rank: int, width: int,
                     settings: Settings | None = None, *, steps=None,
                     batch=None, seed: int = 0) -> dict:
  """SpamLang's control (§3.2, Fig. 14): V free contexts, context i (the
  sequence's token) predicting i, under `settings` (configs/spamlang.py's
  CPU optimiser by default; `steps`, `batch` override it). Prop. 2.4: rank
  D >= 2 can make every token its own argmax; what this cannot reach at
  (V, D, budget) is expressivity under the optimiser, not the backbone."""
  s = settings or Settings()
  over = {k: v for k, v in (("steps", steps), ("batch_size", batch))
          if v is not None}
  s = dataclasses.replace(s, **over)
  checks.int_in_range("vocab", vocab, 2, 2**31 - 1, "V")
  fit = fit_free_contexts(np.arange(vocab), vocab=vocab, width=width,
                          rank=rank, settings=s, seed=seed)
  return {"V": vocab, "D": rank or width, "full_rank": not rank,
          "width": width, "seed": seed, "steps": s.steps,
          "batch": s.batch_size, "lr": s.lr, "b2": s.b2,
          "weight_decay": s.weight_decay, "final_loss": float(fit.loss),
          "best_loss": float(fit.best_loss),
          "accuracy": float(fit.accuracy)}
