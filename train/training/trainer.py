"""The training loop: one jitted step, explicit shardings, exact resume.

  state, metrics = step_fn(state, x, y, lr)   # jit, donate state

lr is the schedule's value at this step, read on the host
(`Trainer.learning_rates`): the compiled step depends on the model, batch and
mesh only, so runs that differ in lr, warm-up or length share it (and in
seed, for models without dropout; the init takes its key as an input).

The batch axis is sharded over every device (data parallel, multi-host
through `jax.make_array_from_process_local_data`); parameters and optimizer
state are replicated, or sharded along their largest divisible axis with
`train.fsdp` (ZeRO-3 style). Dropout keys are fold_in(key(seed), step) and
batches a pure function of step (train/text/data.py), so a run resumed from the
checkpoint of step k reproduces the uninterrupted losses after k.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding, PartitionSpec as P

from bottleneck import sharding
from train.training import checkpoint, init as init_lib, loss as loss_lib
from train.training import interrupt, paths, runs, state as state_lib
from train.training.config_checks import check_config  # Re-exported.
from train.training.metrics import MetricsLog
from train.training.state import (TrainState, abstract_state,
                                  state_from as _state_from, state_shardings)
from train.training import optim
from train.text import data
from train.models import build

# Dense bf16 / fp32 peak FLOP/s per device, for the MFU estimate.
PEAK_FLOPS = {"h100": (989e12, 67e12), "h200": (989e12, 67e12),
              "a100": (312e12, 19.5e12), "v5 lite": (197e12, 197e12),
              "v5p": (459e12, 459e12), "v4": (275e12, 275e12),
              "v6": (918e12, 918e12)}


def loss_fn(params, model, x, y, rng, deterministic: bool, chunk: int = 0):
  """Mean next-token cross entropy: hidden states for the whole batch, the
  head's logits (and their gradient) a chunk of tokens at a time
  (training/loss.py)."""
  h = model.apply(params, x, deterministic=deterministic,
                  rngs={"dropout": rng}, method="hidden")
  return loss_lib.model_xent(model.cfg, params, h.reshape(-1, h.shape[-1]),
                             y.reshape(-1), chunk)


def train_step(state: TrainState, x_abt, y_abt, lr, *, model, tx, seed: int,
               deterministic: bool, chunk: int = 0):
  """One optimizer step on micro-batches x[a] (a = gradient accumulation):
  params - lr * optimizer direction (lr a float32 scalar)."""
  # No dropout: no key (the seed would be one more constant of the program).
  rng = (jax.random.key(0) if deterministic else
         jax.random.fold_in(jax.random.key(seed), state.step))
  grad_fn = jax.value_and_grad(loss_fn)

  def micro(carry, xy):
    loss_sum, grads = carry
    i, (x, y) = xy
    loss, g = grad_fn(state.params, model, x, y, jax.random.fold_in(rng, i),
                      deterministic, chunk)
    return (loss_sum + loss, jax.tree.map(jnp.add, grads, g)), None

  zeros = jax.tree.map(jnp.zeros_like, state.params)
  n = x_abt.shape[0]
  (loss, grads), _ = jax.lax.scan(micro, (jnp.zeros(()), zeros),
                                  (jnp.arange(n), (x_abt, y_abt)))
  grads = jax.tree.map(lambda g: g / n, grads)
  direction, opt_state = tx.update(grads, state.opt_state, state.params)
  params = optim.apply(state.params, direction, lr)
  grad_norm = optax.tree.norm(grads)
  # One flag the loop checks every step: a non-finite loss, gradient or
  # update stops the run before anything non-finite is saved.
  finite = (jnp.isfinite(loss) & jnp.isfinite(grad_norm) &
            jnp.isfinite(optax.tree.norm(params)))
  metrics = {"loss": loss / n, "grad_norm": grad_norm, "finite": finite}
  return TrainState(state.step + 1, params, opt_state), metrics


def all_finite(tree) -> jax.Array:
  """True iff every leaf of `tree` is finite (one fused reduction)."""
  return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x))
                            for x in jax.tree.leaves(tree)]))


def eval_loss(params, x, y, *, model, chunk: int = 0):
  return loss_fn(params, model, x, y, jax.random.key(0), True, chunk)


@dataclasses.dataclass
class Trainer:
  """Everything built once from a config: model, optimizer, jitted fns."""
  config: Any
  devices: Any = None  # Devices of the data mesh (default: all).
  # The config's model config when the caller built it (check_config
  # returns it); None: built here.
  model_cfg: Any = None

  def __post_init__(self):
    c = self.config
    if self.model_cfg is None:
      self.model_cfg = build.model_config(c.model)
    self.model = self.model_cfg.module()
    self.tx = optim.optimizer(c.train)
    self.mesh = sharding.batch_mesh(self.devices)
    if c.train.batch_size % (c.train.grad_accum * self.mesh.devices.size):
      raise ValueError(
          f"`train.batch_size` ({c.train.batch_size}) must be a multiple of "
          f"grad_accum x devices ({c.train.grad_accum} x "
          f"{self.mesh.devices.size}).")
    self.abstract_state = abstract_state(c, self.model_cfg)
    self.state_sh = state_shardings(self.abstract_state, self.mesh,
                                    c.train.fsdp)
    self.batch_sh = NamedSharding(self.mesh, P(None, sharding.BATCH_AXIS))
    rep = sharding.replicated(self.mesh)
    step = functools.partial(
        train_step, model=self.model, tx=self.tx, seed=c.seed,
        deterministic=getattr(self.model_cfg, "dropout", 0.0) == 0.0,
        chunk=c.train.loss_chunk)
    self.step_fn = jax.jit(step, in_shardings=(self.state_sh, self.batch_sh,
                                               self.batch_sh, rep),
                           out_shardings=(self.state_sh, rep),
                           donate_argnums=0)
    self.learning_rates = optim.learning_rates(c.train)  # [steps] float32
    flat_sh = NamedSharding(self.mesh, P(sharding.BATCH_AXIS))
    self.eval_fn = jax.jit(functools.partial(eval_loss, model=self.model,
                                             chunk=c.train.loss_chunk),
                           in_shardings=(self.state_sh.params, flat_sh,
                                         flat_sh), out_shardings=rep)
    self.state_from = jax.jit(functools.partial(_state_from, tx=self.tx),
                              out_shardings=self.state_sh)
    self.init_fn = lambda: self.state_from(self.init_params())
    self.flat_sh = flat_sh
    self.n_params = int(sum(np.prod(x.shape) for x in jax.tree.leaves(
        self.abstract_state.params)))

  def init_params(self) -> dict:
    """The model's initial parameters (key `seed`), on the host.

    Op by op rather than one jitted program: each random initializer is
    then compiled once per shape, not once per parameter (one program
    unrolls a threefry per parameter, 227 of them for a 30-layer llama,
    and compiling them took most of its init). `init_fn` places them with
    the state's shardings and adds the optimizer state in one jit.
    """
    x = jnp.zeros((1, self.model_cfg.block_size), jnp.int32)
    return jax.device_get(self.model.init(jax.random.key(self.config.seed),
                                          x))

  def global_batch(self, x_local, y_local, accum: bool = True):
    """Host rows of this process -> global sharded arrays [a, b, T]."""
    a = self.config.train.grad_accum if accum else 1
    sh = self.batch_sh if accum else self.flat_sh
    shape = lambda v: v.reshape(a, -1, v.shape[-1]) if accum else v
    return tuple(jax.make_array_from_process_local_data(sh, shape(v))
                 for v in (x_local, y_local))

  def evaluate(self, params, loader) -> float:
    losses = [self.eval_fn(params, *self.global_batch(*loader.batch(i),
                                                      accum=False))
              for i in range(self.config.eval_batches)]
    return float(np.mean(jax.device_get(losses)))

  def restore_target(self):
    """Shapes, dtypes and shardings of the state, for checkpoint restore."""
    return state_lib.restore_target(self.abstract_state, self.state_sh)

  def peak_flops(self) -> float | None:
    if self.config.peak_flops:
      return self.config.peak_flops * jax.device_count()
    kind = jax.devices()[0].device_kind.lower()
    for key, (bf16, fp32) in PEAK_FLOPS.items():
      if key in kind:
        per = bf16 if self.model_cfg.dtype == "bfloat16" else fp32
        return per * jax.device_count()
    return None


# A training-time hook: (name, every, fn(params, x, y) -> {metric: scalar}),
# called after the optimizer step of every `every`-th step on that step's
# batch; it reads the parameters and changes nothing. `hooks` below is a
# function (model, GPTConfig) -> [Hook] (train/probes/hooks.py builds them
# from config.probes; the trainer never imports the probes).
Hook = tuple[str, int, Callable[..., dict]]


def train_and_evaluate(config, workdir: str,
                       hooks: Callable[..., list[Hook]] | None = None
                       ) -> dict:
  """Trains (or resumes) the run in `workdir`; returns a summary dict.

  The config is checked here, once (check_config), and its model config
  built once and passed on. One trainer per workdir (a lock file);
  config.json is written with the first checkpoint of the run; a
  non-finite loss, gradient or update stops the run (FloatingPointError)
  before anything non-finite is saved.
  """
  model_cfg = check_config(config)
  if config.probes and hooks is None:
    raise ValueError(f"`probes` is {config.probes!r} but no hooks were "
                     "given: pass hooks=train.probes.hooks.factory(config."
                     "probes) (python -m train.main does).")
  lead = jax.process_index() == 0
  paths.resolve(workdir)  # On every process: a bad workdir is one line.
  if not lead:
    return _train(config, model_cfg, workdir, lead, hooks)
  checkpoint.check_workdir(workdir, config.to_dict())
  with checkpoint.workdir_lock(workdir):
    return _train(config, model_cfg, workdir, lead, hooks)


def _train(config, model_cfg, workdir: str, lead: bool, hooks) -> dict:
  tr = Trainer(config, model_cfg=model_cfg)
  train_loader, val_loader, tok = data.make_loaders(
      config, jax.process_index(), jax.process_count())
  if tok is not None and tok.vocab_size > tr.model_cfg.vocab_size:
    raise ValueError(f"the tokenizer `data.tokenizer` {tok.name!r} has "
                     f"{tok.vocab_size} tokens, more than the model's V = "
                     f"{tr.model_cfg.vocab_size} (model.vocab_size).")
  streams = ({"train": train_loader.tokens, "val": val_loader.tokens}
             if isinstance(train_loader, data.WindowLoader) else None)
  ckpt = checkpoint.Checkpointer(workdir, config.keep_checkpoints,
                                 config.async_checkpoint)
  if lead and ckpt.latest_step():
    checkpoint.check_tokens(workdir, streams)
  restored = ckpt.restore_newest(
      tr.restore_target(), lambda s: bool(jax.jit(all_finite)(s)))
  if restored:
    state, _, start = restored
  elif config.train.init:  # Continued pretraining: its weights, step 0.
    fresh = tr.init_params()
    state = tr.state_from(init_lib.params(config.train, tr.model_cfg, fresh))
    start = 0
  else:
    state, start = tr.init_fn(), 0
  staging = paths.Staging(ckpt.path)  # metrics.jsonl, curves.png.
  if lead:
    staging.fetch()
  log = MetricsLog(staging.path("metrics.jsonl"), start, lead,
                   tensorboard=config.get("tensorboard", False))
  probes = [(name, every, jax.jit(fn)) for name, every, fn in
            (hooks(tr.model, tr.model_cfg) if hooks else [])]
  steps, tokens = config.train.steps, config.train.batch_size * \
      config.model.block_size
  flops = build.flops_per_token(tr.model_cfg, tr.n_params) * tokens
  peak = tr.peak_flops()
  eval_at = set(config.get("eval_at", ()))

  def stop_if_diverged(done: int, metrics) -> None:
    if not bool(metrics["finite"]):
      ckpt.close()
      raise FloatingPointError(
          f"training diverged at step {done}: the loss, gradients or "
          f"parameters are not finite (loss {float(metrics['loss'])}, "
          f"grad_norm {float(metrics['grad_norm'])}, lr "
          f"{tr.learning_rates[done - 1]:.3g}). Nothing non-finite was saved; "
          f"the newest checkpoint in {workdir!r} is step "
          f"{ckpt.kept()}. Lower train.lr or check the data.")

  wrote_config, last_saved = False, start

  def save(done: int, state) -> None:
    nonlocal wrote_config, last_saved
    if lead and not wrote_config:  # Before the first step folder.
      checkpoint.write_config(ckpt.path, config.to_dict(), streams)
      wrote_config = True
    ckpt.save(done, state, train_loader.position(done))
    last_saved = done
    if lead:
      staging.push()

  stop = interrupt.Interrupt(lambda: ckpt.kept_line(
      "interrupted again: quitting without waiting for a save"),
                             ckpt.reached_preemption)
  # Ctrl-C: the loop stops between steps, what was saved stays; SIGTERM (a
  # preemption): it saves this step first; multi-process: all at one step.
  with stop:
    t_last, last_done, steps_timed, t_total = None, start, 0, 0.0
    unread = None  # (done, metrics) of the step whose finite flag is unread.
    for step in range(start, steps):
      how = stop.check(step)  # (exit status, save first?, word) or None.
      if how:
        if how[1] and step > last_saved:
          if unread:
            stop_if_diverged(*unread)
          save(step, state)
        ckpt.stop(how[2], how[0])
      xb, yb = tr.global_batch(*train_loader.batch(step))
      state, metrics = tr.step_fn(state, xb, yb, tr.learning_rates[step])
      done = step + 1
      last = done == steps
      logged = last or done % config.log_every == 0
      evaluated = last or done % config.eval_every == 0 or done in eval_at
      saved = last or done % config.checkpoint_every == 0
      probed = [(name, fn) for name, every, fn in probes if done % every == 0]
      # The previous step's flag is read while this step runs, so the host
      # never waits for the device between two quiet steps; a step whose
      # state is logged, probed, evaluated or saved is checked first.
      if unread:
        stop_if_diverged(*unread)
      unread = (done, metrics)
      if logged or evaluated or saved or probed:
        stop_if_diverged(*unread)
        unread = None
      row = {"step": done}
      if logged:
        metrics = jax.device_get(metrics)
        now = time.perf_counter()
        if t_last is not None:
          t_total += now - t_last
          steps_timed += done - last_done
        t_last, last_done = now, done
        # The first interval includes compilation: no rate until the second.
        sec = t_total / steps_timed if steps_timed else None
        row.update(loss=float(metrics["loss"]),
                   grad_norm=float(metrics["grad_norm"]),
                   lr=float(tr.learning_rates[step]),
                   tokens_per_s=tokens / sec if sec else None,
                   mfu=flops / sec / peak if sec and peak else None)
        if lead:
          rate = f"{row['tokens_per_s']:.0f}" if sec else "n/a"
          mfu = "n/a" if row["mfu"] is None else f"{row['mfu']:.1%}"
          eta = f"{sec * (steps - done):.0f}s" if sec else "n/a"
          print(f"step {done}/{steps} loss {row['loss']:.4f} {rate} tok/s "
                f"mfu {mfu} eta {eta}", file=sys.stderr, flush=True)
      for name, fn in probed:
        row.update({f"{name}/{k}": float(v) for k, v in jax.device_get(
            fn(state.params, xb[0], yb[0])).items()})
      if evaluated:
        row["val_loss"] = tr.evaluate(state.params, val_loader)
      if len(row) > 1:
        log.write(row)
      if saved:
        save(done, state)
    ckpt.close()
  log.close()
  summary = {"params": tr.n_params, "steps": steps, "resumed_from": start,
             "workdir": workdir}
  if lead:
    rows = log.rows()
    summary["final_val_loss"] = next((r["val_loss"] for r in rows[::-1]
                                      if "val_loss" in r), None)
    from train.training import plots as train_plots  # pylint: disable=g-import-not-at-top
    train_plots.save_curves(rows, staging.path("curves.png"))
    staging.push()
  return summary


def load_params(workdir: str, config=None):
  """(params, model config, step) of the newest checkpoint in a workdir
  (read-only; `config`: the run's, default its config.json): the model
  config built once, the parameters read by runs.restore_params."""
  config = runs.read_config(workdir) if config is None else config
  cfg = build.model_config(config.model)
  params, step = runs.restore_params(workdir, config, cfg=cfg)
  return params, cfg, step
