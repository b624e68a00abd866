"""Every probe on several models, side by side (`python -m train.compare`).

For each model spec (subjects.SPECS): load it; one Pass over `text`
(windows of `window` tokens, seed 002's sums included) and one over
`ood_text`; every compared probe (registry.SPECS with a time share) reads
those passes and the head; the LPs of seed 001's Figure 1 run on the head
and on a Gaussian matrix of its shape; the model is freed before the next
one loads. `tables` turns the results into one table per result (a column
per model, the papers' number last) and `figures` overlays the models,
both from the probes' specs (train/probes/spec.py).
"""

from __future__ import annotations

import time

import numpy as np

from bottleneck import topm
from bottleneck.io import cli, matrices, plots as io_plots
from bottleneck.lp import admm
from train.probes import forward, head, registry, spec as probe_spec, subjects
from train.probes.registry import window_length
from train.probes.spec import Context, Figure, Row, Settings

__all__ = ["Settings", "run", "probe_model", "tables", "figures",
           "figure_names", "captions", "paper", "unique_name"]


def phase_share() -> dict[str, float]:
  """Each phase's share of one model's probe time (measured on the quick
  report, mostly Gemma 3's), in order: `fraction` callbacks report
  progress by it. The probes' shares are their specs'."""
  share = {"load": 0.02, "forward": 0.43,
           **{p.name: p.share for p in registry.compared()},
           "figure1 + appendix D LP": 0.19, "figure1 LP, Gaussian": 0.07}
  total = sum(share.values())  # Shares summing to 1, whatever is added.
  return {k: v / total for k, v in share.items()}


# Probe time relative to SmolLM2-135M's (the same report); other specs
# count as the mean.
MODEL_COST = {"smollm2": 1.0, "gemma3": 3.2}


def _share_before(phase: str) -> float:
  share = phase_share()
  names = list(share)
  return sum(share[n] for n in names[:names.index(phase)])


def probe_model(spec: str, s: Settings, progress=None,
                fraction=None) -> dict:
  """Every probe on one model (the numbers; figures are drawn later).
  `fraction`: called with the share of this model's probes done (0..1)."""
  say = progress or (lambda msg: None)
  fraction = fraction or (lambda f: None)
  start = time.perf_counter()
  subject = subjects.load_subject(model=spec, dtype=s.dtype)
  loaded = time.perf_counter() - start
  t = window_length(subject, s.window)
  say(f"{subject.name}: loaded in {loaded:.0f}s; forward over "
      f"{s.windows} x {t} tokens")
  x, y = subjects.windows(subject, s.text, s.windows, "val", s.seed, t)
  x_ood, y_ood = subjects.windows(subject, s.ood_text, s.ood_windows, "val",
                                  s.seed, t)
  own = forward.run(subject, x, y, s.text,
                    progress=_windows(say, subject, fraction))
  ood = forward.run(subject, x_ood, y_ood, s.ood_text, gradient_sums=False)
  out = {"subject": subject.describe(), "pass": own.describe(),
         "ood_pass": ood.describe(), "seconds": {"load": loaded}}
  timed = _timer(out["seconds"], say, subject.name, fraction)
  ctx = Context(subject, own, ood, s, spec)
  for probe in registry.compared():
    with timed(probe.name):
      out[probe.name] = _numbers(probe.run(ctx))
  w = np.asarray(subject.head()[0])
  targets = (head.natural_targets(subject, own, s.natural_positions)
             if s.lp_trials else None)
  out["seconds"]["forward"] = own.seconds["forward"] + ood.seconds["forward"]
  del subject, own, ood, ctx  # The LPs need only W: free the model (Gemma
  cli.release_memory()  # 3: peak RSS 5.9 GB with it held, the LP 2.7 GB).
  if s.lp_trials:
    with timed("figure1 + appendix D LP"):
      out["figure1"] = figure1(w, s, say, natural_targets=targets)
      out["appendix_d"] = out["figure1"].pop("natural")
    shape = w.shape
    del w  # Its Gaussian twin is drawn once the head is freed (Gemma 3:
    cli.release_memory()  # both held: 3.8 GiB peak, one: 2.5 GiB).
    with timed("figure1 LP, Gaussian"):
      out["figure1"].update(figure1(shape, s, say))
  out["seconds"]["total"] = time.perf_counter() - start
  return out


def _numbers(result) -> dict:
  """A probe's numbers; its single-model figures are closed (the
  comparison draws overlays from the numbers instead)."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  numbers, figs = result
  for fig in figs.values():
    plt.close(fig)
  return numbers


def figure1(w_or_shape, s: Settings, say=lambda msg: None,
            natural_targets=None) -> dict:
  """Seed 001 Figure 1 on a trained head: the fraction of random m-subsets
  the 'logits' LP certifies selectable, on W (given the head) or on a
  Gaussian matrix of W's shape (given the shape); the closed-form bound of
  that shape is drawn later. With `natural_targets` (rows of next-token
  distributions), App. D's 'natural' LPs at `s.natural_m` join the same
  stream (one preparation of W, one compile), returned under "natural"."""
  m_values = cli.parse_int_list("lp_m", s.lp_m)
  settings = admm.Settings(max_iters=s.lp_max_iters)
  label = "gaussian" if isinstance(w_or_shape, tuple) else "trained"
  start = time.perf_counter()
  a = (matrices.random(*w_or_shape, s.seed) if label == "gaussian" else
       w_or_shape)
  problems = {"logits": m_values}
  if natural_targets is not None:
    problems["natural"] = cli.parse_int_list("natural_m", s.natural_m)
  n = s.lp_trials * sum(len(v) for v in problems.values())
  records = topm.sweeps(a, problems, s.lp_trials, seed=s.seed,
                        targets=natural_targets, batch=s.lp_batch,
                        settings=settings, progress=(
                            f"figure 1{' + App. D' if len(problems) > 1 else ''}"
                            f", {label} {a.shape[0]}x{a.shape[1]}: LP "
                            "instances"))
  out = {"shape": list(a.shape), "m": m_values, "trials": s.lp_trials,
         label: [{k: v for k, v in r.items() if k != "trials_detail"}
                 for r in records["logits"]]}
  if "natural" in records:
    out["natural"] = records["natural"]
  out[f"{label}_seconds"] = time.perf_counter() - start
  out[f"{label}_instances"] = n
  say(f"figure 1 LP on the {label} {a.shape[0]}x{a.shape[1]} matrix: "
      f"{n} instances in {out[f'{label}_seconds']:.0f}s")
  return out


def _windows(say, subject, fraction):
  bar = {"last": 0.0}

  def update(done, total):
    fraction(_share_before("forward") + phase_share()["forward"] * done /
             total)
    now = time.perf_counter()
    if done == total or now - bar["last"] > 5.0:
      bar["last"] = now
      say(f"{subject.name}: forward {done}/{total} windows")
  return update


def _timer(seconds: dict, say, name: str, fraction):
  class Timed:
    def __init__(self, what):
      self.what = what

    def __enter__(self):
      say(f"{name}: {self.what} ... (peak RSS so far "
          f"{cli.peak_rss_gb():.1f} GB)")
      self.start = time.perf_counter()

    def __exit__(self, *exc):
      seconds[self.what] = time.perf_counter() - self.start
      fraction(_share_before(self.what) + phase_share()[self.what])
  return Timed


def run(models, s: Settings = Settings(), progress=None,
        fraction=None) -> dict:
  """{model name: probe_model numbers} for each spec, in order.
  `fraction`: called with the share of all models' probes done (0..1),
  the models weighted by MODEL_COST."""
  if not models:
    raise ValueError("`models` must name at least one model.")
  subjects.check_text_spec(s.text, "text")
  subjects.check_text_spec(s.ood_text, "ood_text")
  for spec in models:  # Every entry before the first is probed.
    try:
      subjects.check_spec(spec)
    except ValueError as e:
      raise ValueError(f"`models` entry {spec!r}: {e}") from None
  mean = sum(MODEL_COST.values()) / len(MODEL_COST)
  cost = [MODEL_COST.get(spec, mean) for spec in models]
  total = sum(cost)
  out = {}
  for k, spec in enumerate(models):
    done = sum(cost[:k])
    numbers = probe_model(spec, s, progress, fraction and (
        lambda f, done=done, k=k: fraction((done + f * cost[k]) / total)))
    name = unique_name(numbers["subject"]["name"], out)
    numbers["subject"].update(name=name, spec=spec)
    out[name] = numbers
    cli.release_memory()  # The next model starts from a trimmed heap.
  return out


def unique_name(name: str, taken) -> str:
  """`name`, or `name-2`, `name-3`, ... if a subject already has it (two
  runs both called `ref` stay two columns)."""
  k, out = 1, name
  while out in taken:
    k += 1
    out = f"{name}-{k}"
  return out


SUBJECT_ROWS = (
    Row("subject", "family / V / d / layers", "",
        lambda n: f"{n['subject']['family']} / {n['subject']['V']} / "
                  f"{n['subject']['d']} / {n['subject']['layers']}"),
    Row("subject", "probed: tokens (windows x window), forward s", "",
        lambda n: f"{n['pass']['tokens']} ({n['pass']['windows']} x "
                  f"{n['pass']['window']}), {n['seconds']['forward']:.0f} s"),
    Row("subject", "total time (s)", "",
        lambda n: f"{n['seconds']['total']:.0f}"))


def _m_all(n) -> str:
  f1 = n["figure1"]

  def largest(recs):
    ok = [r["m"] for r in recs if r["fraction"] == 1.0]
    return str(max(ok)) if ok else f"< {recs[0]['m']}"
  return (f"{largest(f1['trained'])} ({largest(f1['gaussian'])}), "
          f"{f1['trials']} subsets per m")


# Seed 001 Figure 1 on each head (the LPs `figure1` runs after the probes).
FIGURE1_ROW = Row(
    "seed001", "Figure 1: largest m with all subsets selectable, trained "
    "(Gaussian)", "trained GPT-2 head close to a random one of its size, "
    "all subsets selectable to m ~ 95 = d/8 (seed 001 Fig. 1)", _m_all)
FIGURE1_FIGURE = Figure(
    "figure1", "Seed 001 Figure 1 on each trained head: fraction of random "
    "m-subsets the LP certifies selectable, against a Gaussian matrix of the "
    "same shape and the closed-form bound.", lambda by: io_plots.topm_panels(
        {n: ({"trained head": f["trained"], "Gaussian, same shape":
              f["gaussian"]}, tuple(f["shape"])) for n, f in by.items()}))


def _rows() -> list[Row]:
  return [*SUBJECT_ROWS, *(r for p in registry.compared() for r in p.rows),
          FIGURE1_ROW]


def _overlays() -> list[tuple[str, Figure]]:
  """(result key, figure) of every figure the comparison overlays."""
  return [*((p.name, f) for p in registry.compared() for f in p.figures
            if f.overlay), ("figure1", FIGURE1_FIGURE)]


def figure_names() -> tuple[str, ...]:
  return tuple(f.name for _, f in _overlays())


def captions() -> dict[str, str]:
  """The caption of every overlay figure."""
  return {f.name: f.caption for _, f in _overlays()}


def paper() -> dict[str, str]:
  """The papers' numbers the tables quote, by row label."""
  return {r.label: r.paper for r in _rows() if r.paper}


def tables(results: dict) -> dict[str, list[dict]]:
  """One table per probe_spec.TABLES key: rows {result, <model>...,
  paper}."""
  out = {}
  for r in _rows():
    row = {"result": r.label}
    for name, numbers in results.items():
      try:
        row[name] = r.cell(numbers)
      except (KeyError, IndexError, StopIteration):
        row[name] = "-"
    row["paper"] = r.paper
    out.setdefault(r.table, []).append(row)
  return {k: out[k] for k in probe_spec.TABLES if k in out}


def figures(results: dict) -> dict:
  """Overlays of every model's curves, one figure per result."""
  out = {}
  for key, f in _overlays():
    by_model = {n: r[key] for n, r in results.items() if key in r}
    if by_model:
      out[f.name] = f.overlay(by_model)
  return out
