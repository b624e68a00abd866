"""Report section for seed 001's appendices on a trained head.

App. A (cumulative top-m mass), App. E (row statistics vs random, also
MiniLM), App. D (the LP with a trained model's next-token distributions).
"""

from __future__ import annotations

from bottleneck import topm
from bottleneck.io import cli, matrices, plots
from train.probes import head
from train.report import claim
from train.report.section import (Section, figure, probe_subject, table,
                                  text_pass)


def appendices(config, outdir: str) -> Section:
  """Seed 001 App. A (cumulative mass), E (row statistics), D (targets)."""
  c = config.probes
  subject = probe_subject(config, outdir)
  own = text_pass(subject, "", c.windows, config.seed)
  cum, f_cum = head.cumulative_probe(subject, own)
  row_tables, figs = [], [figure(
      f_cum["cumulative"], outdir, "appendix_a_cumulative.png",
      "Mean probability mass of the m most likely next tokens (App. A).")]
  for label, w in ((subject.name, subject.head()[0]),
                   ("minilm", matrices.load("minilm").array)):
    stats_, f = head.rowstats_probe(w, label, config.seed)
    row_tables += [{"matrix": label, "kind": k, **v}
                   for k, v in stats_.items()]
    figs.append(figure(f["rowstats"], outdir, f"appendix_e_{label}.png",
                       f"Row norms and pair cosines of {label}'s head "
                       "against a Gaussian matrix of its shape (App. E)."))
  targets = head.natural_targets(subject, own)
  a = matrices.random(c.lp_N, c.lp_d, config.seed)
  m_values = cli.parse_int_list("probes.lp_m", c.lp_m)
  curves = topm.sweeps(a, m_values, c.lp_trials, ("natural", "probs"),
                       config.seed, targets=targets, batch=32)
  trained, uniform = curves["natural"], curves["probs"]
  strip = lambda recs: [{k: v for k, v in r.items() if k != "trials_detail"}
                        for r in recs]
  cols = ["m", "trials", "feasible", "infeasible", "undecided", "fraction",
          "fraction_upper"]
  figs.append(figure(plots.topm_curves(
      {"trained-model targets": trained, "uniform targets": uniform},
      (c.lp_N, c.lp_d)), outdir, "appendix_d_trained.png",
      "The probe model's own next-token distributions as prescribed "
      "targets, against uniform ones (App. D)."))
  body = "\n\n".join([
      f"**App. A**: tokens needed for 0.9 of the next-token mass, mean "
      f"{cum['tokens_for_0.9_mean']:.0f}, median "
      f"{cum['tokens_for_0.9_median']:.0f} of V = {subject.cfg.vocab_size} "
      "(paper, GPT-2 on news: ~200 of 50257).",
      "**App. E**: row norms and cosines of random row pairs, trained vs a "
      "Gaussian matrix with the same mean row norm (paper: trained rows vary "
      "more in norm and have mostly positive cosines):", table(row_tables),
      f"**App. D**: the probe model's next-token distributions as the "
      f"prescribed targets of the LP on a random {c.lp_N}x{c.lp_d} matrix "
      "(top-m probabilities assigned to random tokens), against uniform "
      "U[0.1, 1.1] targets:", "*trained-model targets*",
      table(strip(trained), cols), "*uniform targets*",
      table(strip(uniform), cols), *figs])
  return Section("Seed 001 Appendices A, D, E on trained heads", body,
                 {"cumulative": cum, "rowstats": row_tables,
                  "lp_trained_targets": trained, "lp_uniform": uniform})


def read_appendix_a(s, cfg):
  """App. A / Fig. 4 on the probe model: tokens for 0.9 of the mass."""
  cum = s["cumulative"]
  for k in ("tokens_for_0.9_of_mean_curve", "tokens_for_0.9_median", "V",
            "positions"):
    claim.num(cum, k, at="cumulative")
  ours = (f"{cum['tokens_for_0.9_of_mean_curve']} tokens (mean curve "
          "reaches 0.9), per-position median "
          f"{cum['tokens_for_0.9_median']:.0f}; V = {cum['V']}, "
          f"{cum['positions']} positions")
  return ours, "the probe model (V = 4096, not GPT-2's 50257)", (
      f"{claim.CANNOT}: another vocabulary and text than the paper's")


CLAIMS = (
    claim.on("001", "App. A / Fig. 4", "~200 tokens for 0.9 of the mass "
             "(GPT-2, news)", "appendices", read_appendix_a),
)
