"""Report sections for seed 002 (Godey & Artzi): the gradient bottleneck.

eq. (10) and Figs. 2, 7, 8 on trained heads; §3.1 low-rank heads (Fig. 1);
§3.2 SpamLang (Fig. 14). The models come from train/experiments.py.
"""

from __future__ import annotations

from train.probes import gradient, subjects
from train.report.section import (Section, figure, probe_subject, table,
                                  text_pass)
from train.training import experiments
from train.training import plots as train_plots


def _subjects(config, outdir):
  out = [probe_subject(config, outdir)]
  if config.probes.hf_dir:
    out.append(subjects.load_subject(hf_dir=config.probes.hf_dir))
  return out


def gradient_bottleneck(config, outdir: str) -> Section:
  """Seed 002: eq. (10), App. D cosine, Figs. 2, 7, 8 on trained heads."""
  c = config.probes
  rows, figs, numbers = [], [], {}
  for subject in _subjects(config, outdir):
    out, figures = gradient.gradient_probe(subject, text_pass(
        subject, "", c.windows, config.seed, gradient_sums=True))
    numbers[subject.name] = out
    rows.append({"model": subject.name, "V": subject.cfg.vocab_size,
                 "D": subject.cfg.n_embd, "D_over_V": out["D_over_V"],
                 "tokens": out["tokens"], "norm_ratio": out["norm_ratio"],
                 "squared_ratio": out["squared_ratio"],
                 "mean_cosine": out["mean_cosine"]})
    for name, fig in figures.items():
      figs.append(figure(fig, outdir, f"{name}_{subject.name}.png",
                         f"{subject.name}: {_CAPTIONS[name]}"))
  eff = numbers[rows[0]["model"]]["efficiency"]
  body = "\n\n".join([
      "Fraction of the logit-gradient norm in ker(W^T), destroyed before "
      "it reaches the backbone (eq. 10). `norm_ratio` is eq. 10 itself, "
      "|P_ker G|_F / |G|_F: **the paper's 95-99% is this norm ratio**; "
      "`squared_ratio` is its square (the share of squared norm). "
      "`mean_cosine`: average cos(g_t, P_W g_t) (paper App. D: 0.1-0.2).",
      table(rows),
      f"Update efficiency (Fig. 8), loss change after moving the logits by "
      f"1% of their norm: along the logit gradient "
      f"{eff['logit_gradient'][2] - eff['loss0']:+.4f}, along grad_H W^T "
      f"{eff['hidden_gradient'][2] - eff['loss0']:+.4f}.", *figs])
  return Section("Seed 002: the LM head destroys most of the gradient", body,
                 numbers)


def lowrank_sweep(config, outdir: str) -> Section:
  """Seed 002 §3.1 / Fig. 1: one backbone, heads of rank D."""
  c = config.lowrank
  rows_by_d = experiments.lowrank_runs(c.ranks, c.steps, outdir)
  curves = {d: experiments.val_curve(rows) for d, rows in rows_by_d.items()}
  smallest = min(c.ranks)
  target = curves[smallest][-1][1]
  rows = []
  for d in c.ranks:
    reach = experiments.steps_to(curves[d], target)
    rows.append({"D": d, "final_val_loss": curves[d][-1][1],
                 "steps_to_smallest_D_final": reach,
                 "speedup": (c.steps / reach) if reach else None})
  body = "\n\n".join([
      f"Same backbone (width 64, 2 layers), LM head W = A B of rank D, "
      f"byte-level generated stories (V = 257), {c.steps} steps each. "
      f"`speedup`: steps the D = {smallest} run took to its final val loss, "
      "over the steps each D needs to reach it (the paper: x16 at 2B "
      "scale between D = 32 and 4096).", table(rows),
      figure(train_plots.curves_figure(
          {f"D={d}": rows_by_d[d] for d in c.ranks}, "Low-rank heads"),
             outdir, "lowrank_curves.png", "Training and validation loss "
             "of one backbone with heads of rank D: lower D trains slower.")])
  return Section("Seed 002 Fig. 1: low-rank LM heads (D sweep)", body,
                 {"rows": rows})


def spamlang_sweep(config, outdir: str) -> Section:
  """Seed 002 §3.2 / Fig. 14: SpamLang final loss and accuracy vs V."""
  c = config.spamlang
  rows = experiments.spamlang_runs(c.vocabs, c.ranks, c.steps, outdir)
  body = "\n\n".join([
      "SpamLang: every sequence repeats its first token (uniform over V), "
      "so the next token is always the current one, trivially expressible "
      f"at any D >= 2 (Prop. 2.4). Tiny model (2 layers, width 64), "
      f"{c.steps} steps per (V, D); D = 64 is the full-rank head. The paper "
      "finds the loss rising with V for small D (Fig. 14).", table(rows),
      figure(_spamlang_figure(rows), outdir, "spamlang.png", "SpamLang "
             "loss and accuracy against V for a rank-2 and a full-rank "
             "head."), _spamlang_reading(rows, c.steps)])
  return Section("Seed 002 Fig. 14: SpamLang vs vocabulary size", body,
                 {"rows": rows})


_CAPTIONS = {
    "gradient_destroyed": "per-token share of the logit gradient that W^T "
                          "destroys, against sqrt(1 - D/V).",
    "gradient_profiles": "full vs projected gradient coefficients, sorted "
                         "(Fig. 7): the backbone sees a flattened gradient.",
    "gradient_rank": "rank of the logit gradient against tokens (Fig. 2).",
    "gradient_efficiency": "loss after an update of equal norm along the "
                           "logit gradient or through H (Fig. 8).",
}


def _spamlang_reading(rows, steps: int) -> str:
  """Whether the run can speak to the paper's claim: the full-rank head
  must have learned the task, else the run is undertrained."""
  full = max(r["D"] for r in rows)
  worst = min((r for r in rows if r["D"] == full), key=lambda r: r[
      "accuracy"])
  if worst["accuracy"] < 0.9:
    return (f"**Caveat: undertrained.** The full-rank head (D = {full}) "
            f"itself reaches only {worst['accuracy']:.2f} accuracy at V = "
            f"{worst['V']} after {steps} steps, so this run cannot tell "
            "the bottleneck apart from too little training: it neither "
            "confirms nor refutes seed 002's Fig. 14 (more steps: "
            "--scale=paper).")
  small = [r for r in rows if r["D"] < full]
  gap = max((r["final_val_loss"] - next(q["final_val_loss"] for q in rows
                                         if q["D"] == full and
                                         q["V"] == r["V"]) for r in small),
            default=0.0)
  return (f"The full-rank head learns the task at every V (accuracy >= "
          f"{worst['accuracy']:.2f}); the low-rank heads' loss exceeds it "
          f"by up to {gap:.3f} nats" + (" (as in the paper)." if gap > 0.05
                                        else ": **unlike the paper**, no "
                                        "clear gap at this size."))


def _spamlang_figure(rows):
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
  for d in sorted({r["D"] for r in rows}):
    rs = [r for r in rows if r["D"] == d]
    for ax, key in zip(axes, ("final_val_loss", "accuracy")):
      ax.plot([r["V"] for r in rs], [r[key] for r in rs], "o-",
              label=f"D={d}")
      ax.set_xscale("log")
      ax.set_xlabel("vocabulary size V")
  axes[0].set_ylabel("final validation loss (nats)")
  axes[1].set_ylabel("next-token accuracy")
  axes[0].set_title("SpamLang: loss vs V")
  axes[1].set_title("SpamLang: accuracy vs V")
  for ax in axes:
    ax.legend(fontsize=7)
  return fig
