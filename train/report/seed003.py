"""Report section for seed 003 (Cho et al.): probability encoding.

Table 1, Fig. 3, Algorithm 1 editing (Tables 2/3), Fig. 6 dimension
removal and Fig. 7 frequency probe, on the report's trained probe model;
Fig. 7 also on a llama-like real-text run (the low-rank sweep's largest D).
"""

from __future__ import annotations

import math
import os

from train.probes import encoding, frequency, pruning, spec, subjects
from train.report.section import (Section, figure, probe_subject, table,
                                  text_pass)
from train.training import experiments


def encoding_section(config, outdir: str) -> Section:
  """Seed 003: Table 1, Fig. 3, Table 2/3 (editing), Fig. 6, Fig. 7."""
  c = config.probes
  subject = probe_subject(config, outdir)
  own = text_pass(subject, "", 2 * c.windows, config.seed)
  ood = text_pass(subject, subjects.other_source(subject), c.windows,
                  config.seed)
  enc, f_enc = encoding.encoding_probe(subject, own)
  edit, f_edit = encoding.edit_probe(subject, own, ood, tokens=c.edit_tokens,
                                     seed=config.seed)
  prune, f_prune = pruning.prune_probe(subject, own, ood)
  freq, f_freq = frequency.frequency_probe(subject)
  llama = subjects.load_subject(model="run:" + experiments.lowrank_top(
      config.lowrank, outdir)[1][0][0]["workdir"])
  freq_llama, f_llama = frequency.frequency_probe(llama)
  figs = [figure(f, outdir, f"{n}.png", _CAPTIONS[n]) for n, f in
          {**f_enc, **f_edit, **f_prune, **f_freq}.items()]
  sal, adv = prune["saliency"], prune["adversarial"]
  body = "\n\n".join([
      f"Subject: {subject.name} (V = {enc['V']}, D = {enc['D']}, untied "
      "head with bias; the bias enters the MLR as the h = 1 dimension).",
      "**Table 1** (adj. R^2 of -log alpha on the output embeddings; paper "
      "GPT-2 0.892):", table([{k: enc[k] for k in (
          "adj_r2", "adj_r2_without_bias", "random_adj_r2",
          "shuffled_adj_r2", "adj_r2_input_embeddings",
          "top_pc_abs_spearman", "median_dim_abs_spearman") if k in enc}]),
      f"**Algorithm 1** ({c.edit_tokens} tokens, scales "
      "1..20 up and down; e = |ln r - ln r_hat|; unedited error "
      f"{edit['unedited_error']:.2f}; paper GPT-2 b=2: e_local 0.19):",
      table(edit["table"]),
      _editing_reading(edit),
      f"**Dimension removal** (Fig. 6), KL at 30% / 50% removed: saliency "
      f"order {sal[3]:.3g} / {sal[5]:.3g}, adversarial {adv[3]:.3g} / "
      f"{adv[5]:.3g}. " + _removal_reading(sal, adv, enc["V"], enc["D"]),
      "**Frequency probe** (Fig. 7) on the probe model (thesis GPT): "
      + frequency_verdict(freq["rows"], enc["V"]), table(freq["rows"]),
      *figs,
      "**Frequency probe on a llama-like real-text run** (the low-rank "
      f"sweep's largest-D run, seed {config.lowrank.seeds[0]}: "
      f"{os.path.basename(freq_llama['run'])}): "
      + frequency_verdict(freq_llama["rows"], freq_llama["V"]),
      table(freq_llama["rows"]),
      figure(f_llama["frequency"], outdir, "frequency_llama.png",
             _CAPTIONS["frequency"])])
  return Section("Seed 003: probability encoding in output embeddings", body,
                 {"encoding": enc, "edit": edit, "prune": prune,
                  "frequency": freq, "frequency_llama": freq_llama})


PAPER_FREQUENCY = ("the paper: the output embedding encodes corpus "
                   "frequency (log-linearly) at very early steps, before an "
                   "obvious convergence trend")
ENCODED_R2 = 0.5  # adj. R^2 from which W is said to encode frequency.
CONVERGED_SHARE = 0.9  # Share of the loss's fall that says it converged.


def frequency_verdict(rows, v: int) -> str:
  """Seed 003 Fig. 7's claim read off a run's rows (`frequency_probe`):
  the step where adj. R^2 first reaches ENCODED_R2 against the first
  evaluated step where the validation loss has made CONVERGED_SHARE of its
  fall from ln V (the near-uniform initial prediction) to its final value.
  Earlier: agrees; later: disagrees; the same checkpoint, or never
  encoded: cannot tell."""
  first = next((r for r in rows if r["adj_r2"] >= ENCODED_R2), None)
  curve = [(r["step"], r["val_loss"]) for r in rows
           if r.get("val_loss") is not None]
  if first is None or not curve:
    best = max(r["adj_r2"] for r in rows)
    why = ("no validation loss was logged at its checkpoints" if not curve
           else f"adj. R^2 never reached {ENCODED_R2} (best {best:.2f})")
    return (f"**Cannot tell** (seed 003 Fig. 7; {PAPER_FREQUENCY}): {why}; "
            "a longer run would decide.")
  start, final = math.log(v), curve[-1][1]
  target = final + (1 - CONVERGED_SHARE) * (start - final)
  converged = next(s for s, loss in curve if loss <= target)
  said = (f"adj. R^2 of -log frequency first reaches {ENCODED_R2} at step "
          f"{first['step']} (head convergence rate {first['conv_head']:.2f}"
          f"); the validation loss has made {CONVERGED_SHARE:.0%} of its "
          f"fall from ln V = {start:.2f} to {final:.2f} at step {converged}")
  if first["step"] < converged:
    return f"**Agrees with seed 003 Fig. 7** ({PAPER_FREQUENCY}): {said}."
  if first["step"] > converged:
    return (f"**Disagrees with seed 003 Fig. 7** ({PAPER_FREQUENCY}): "
            f"{said}. Likely reason: a short run whose loss falls within "
            "its first checkpoints.")
  return (f"**Cannot tell** (seed 003 Fig. 7; {PAPER_FREQUENCY}): {said}, "
          "the same checkpoint; checkpoints closer together early would "
          "decide.")


_CAPTIONS = spec.captions(encoding.ENCODING, encoding.EDIT, pruning.PRUNE,
                          frequency.FREQUENCY)


def _removal_reading(sal, adv, v: int, d: int) -> str:
  """Seed 003 Fig. 6 says removing the most salient dimensions first hurts
  most; say so when this run disagrees, and why it may."""
  if adv[3] >= sal[3] and adv[5] >= sal[5]:
    return "As in seed 003, the adversarial order hurts more."
  return ("**Disagrees with seed 003 Fig. 6**: here the adversarial order "
          "costs less than the saliency order. Likely reason: a small, "
          f"briefly trained model (V = {v}, D = {d}) whose MLR slopes are "
          "noisy (the saliency ranks dimensions by them), measured on "
          "another text than the one they were fitted on.")


def _editing_reading(edit) -> str:
  """Whether Algorithm 1 reproduced, read off the b = 2 row: an edit that
  works removes most of the error of not editing at all."""
  row = next(r for r in edit["table"] if r["variant"] == "b=2")
  ratio = row["e_local"] / edit["unedited_error"]
  if ratio <= 0.5:
    return (f"Algorithm 1 **reproduces** here: b = 2 edits leave "
            f"e_local = {row['e_local']:.2f}, {ratio:.0%} of the unedited "
            "error.")
  return (f"Algorithm 1 **does not reproduce** here: b = 2 edits leave "
          f"e_local = {row['e_local']:.2f}, {ratio:.0%} of the unedited "
          "error. Editing needs eq. (2)'s approximations (concentrated "
          "logits, -log E[p] ~ E[-log p]); where they fail the MLR slopes "
          "are not -E[h]. The row 'A = -E[h]' (ours) uses eq. (1)'s "
          "direction directly.")
