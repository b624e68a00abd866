"""Report section for seed 003 (Cho et al.): probability encoding.

Table 1, Fig. 3, Algorithm 1 editing (Tables 2/3), Fig. 6 dimension
removal and Fig. 7 frequency probe, on the report's trained probe model;
Fig. 7 also on a llama-like real-text run (the low-rank sweep's largest D,
lowrank.py); and their ledger rows, on the probe model and on the real LLMs.
"""

from __future__ import annotations

import math
import os

from train.probes import encoding, frequency, pruning, spec, subjects
from train.report import claim, lowrank, seed003_rows
from train.report.claim import (CANNOT, DISAGREES, REPRODUCED, SMALLER,
                                Verdict, markdown, num, records)
from train.report.section import (Section, figure, probe_subject, table,
                                  text_pass)


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
  llama = subjects.load_subject(model="run:" + lowrank.largest_until_flat(
      config.lowrank, outdir)[1][0][0]["workdir"])
  freq_llama, f_llama = frequency.frequency_probe(llama)
  figs = [figure(f, outdir, f"{n}.png", _CAPTIONS[n]) for n, f in
          {**f_enc, **f_edit, **f_prune, **f_freq}.items()]
  sal, adv = prune["saliency"], prune["adversarial"]
  numbers = {"encoding": enc, "edit": edit, "prune": prune}
  body = "\n\n".join([
      f"Subject: {subject.name} (V = {enc['V']}, D = {enc['D']}, untied "
      "head with bias; the bias enters the MLR as the h = 1 dimension).",
      "**Table 1** (adj. R^2 of -log alpha on the output embeddings; paper "
      "GPT-2 0.892):", table([{k: enc[k] for k in (
          "adj_r2", "adj_r2_without_bias", "random_adj_r2",
          "shuffled_adj_r2", "adj_r2_input_embeddings",
          "top_pc_abs_spearman", "median_dim_abs_spearman") if k in enc}]),
      " ".join(said(fn, cite, enc, numbers, config) for fn, cite in (
          (seed003_rows.table1_row, "seed 003 Table 1"),
          (seed003_rows.input_row, "seed 003 Table 1 (input embeddings)"),
          (seed003_rows.sparsity_row, "seed 003 Fig. 3"))
               if fn != seed003_rows.input_row
               or "adj_r2_input_embeddings" in enc),
      f"**Algorithm 1** ({c.edit_tokens} tokens, scales "
      "1..20 up and down; e = |ln r - ln r_hat|; unedited error "
      f"{edit['unedited_error']:.2f}; paper GPT-2 b=2: e_local 0.19):",
      table(edit["table"], EDIT_COLUMNS),
      said(seed003_rows.edit_row, "seed 003 Algorithm 1", edit, numbers,
           config, reason=EDIT_REASON),
      said(seed003_rows.fig5_row, "seed 003 Fig. 5", edit, numbers, config),
      f"**Dimension removal** (Fig. 6), KL at 30% / 50% removed: saliency "
      f"order {sal[3]:.3g} / {sal[5]:.3g}, adversarial {adv[3]:.3g} / "
      f"{adv[5]:.3g}. "
      + said(seed003_rows.removal_row, "seed 003 Fig. 6", prune, numbers,
             config, reason=REMOVAL_REASON),
      "**Frequency probe** (Fig. 7) on the probe model (thesis GPT): "
      + markdown(frequency_verdict(freq["rows"], enc["V"])),
      table(freq["rows"]),
      *figs,
      "**Frequency probe on a llama-like real-text run** (the low-rank "
      f"sweep's largest-D run, seed {config.lowrank.seeds[0]}: "
      f"{os.path.basename(freq_llama['run'])}): "
      + markdown(frequency_verdict(freq_llama["rows"], freq_llama["V"])),
      table(freq_llama["rows"]),
      figure(f_llama["frequency"], outdir, "frequency_llama.png",
             _CAPTIONS["frequency"])])
  return Section("Seed 003: probability encoding in output embeddings", body,
                 {"encoding": enc, "edit": edit, "prune": prune,
                  "frequency": freq, "frequency_llama": freq_llama})


PAPER_FREQUENCY = ("the paper: the output embedding encodes corpus "
                   "frequency (log-linearly) at very early steps, before an "
                   "obvious convergence trend")
FIG7 = "seed 003 Fig. 7"  # The verdict's citation (its bold opening).
ENCODED_R2 = 0.5  # adj. R^2 from which W is said to encode frequency.
CONVERGED_SHARE = 0.9  # Share of the loss's fall that says it converged.


def frequency_verdict(rows, v: int) -> Verdict:
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
    return Verdict(CANNOT, f"{why}; a longer run would decide.",
                   PAPER_FREQUENCY, FIG7)
  start, final = math.log(v), curve[-1][1]
  target = final + (1 - CONVERGED_SHARE) * (start - final)
  converged = next(s for s, loss in curve if loss <= target)
  said = (f"adj. R^2 of -log frequency first reaches {ENCODED_R2} at step "
          f"{first['step']} (head convergence rate {first['conv_head']:.2f}"
          f"); the validation loss has made {CONVERGED_SHARE:.0%} of its "
          f"fall from ln V = {start:.2f} to {final:.2f} at step {converged}")
  if first["step"] < converged:
    return Verdict(SMALLER, f"{said}.", PAPER_FREQUENCY, FIG7)
  if first["step"] > converged:
    return Verdict(DISAGREES, f"{said}. Likely reason: a short run whose "
                   "loss falls within its first checkpoints.",
                   PAPER_FREQUENCY, FIG7)
  return Verdict(CANNOT, f"{said}, the same checkpoint; checkpoints closer "
                 "together early would decide.", PAPER_FREQUENCY, FIG7)


_CAPTIONS = spec.captions(encoding.ENCODING, encoding.EDIT, pruning.PRUNE,
                          frequency.FREQUENCY)


EDIT_COLUMNS = ("variant", "e_local", "e_id", "e_ood", "kl_unedited")


EDIT_REASON = ("Editing needs eq. (2)'s approximations (concentrated "
               "logits, -log E[p] ~ E[-log p]); where they fail the MLR "
               "slopes are not -E[h]. The row 'A = -E[h]' (ours) uses eq. "
               "(1)'s direction directly.")

REMOVAL_REASON = ("Likely reason: a small, briefly trained model whose MLR "
                  "slopes (the saliency ranks dimensions by them) are noisy, "
                  "measured on another text than the one they were fitted "
                  "on.")


def said(row_fn, cite: str, numbers: dict, whole: dict, config,
         name: str = "probe model", reason: str = "") -> str:
  """The section's sentence of one subject's ledger row (seed003_rows), so
  that section and ledger say the same: '**Agrees with cite**: ours (n;
  uncertainty).', 'Disagrees' likewise (then `reason`), or '**Cannot
  tell** (cite): ...' with the row's why."""
  try:
    cfg = config.to_dict() if hasattr(config, "to_dict") else config
    r = row_fn(name, numbers, whole, cfg)
  except (claim.Unread, KeyError) as e:
    return f"({cite}: no ledger row: {e})"
  detail = f"{r.ours} ({r.n}; {r.uncertainty})"
  if r.verdict == REPRODUCED:
    return f"**Agrees with {cite}**: {detail}."
  if r.verdict == DISAGREES:
    return f"**Disagrees with {cite}**: {detail}." + (
        f" {r.why[0].upper()}{r.why[1:]}." if r.why else "") + (
            f" {reason}" if reason else "")
  return f"**Cannot tell** ({cite}): {detail}; {r.why}."


# The claims ledger's rows (train/report/ledger.py): seed003_rows.py's and
# Fig. 7's.

PYTHIA_STEPS = 143_000  # Fig. 7: the Pythia suite's last checkpoint.


def read_frequency(s, cfg):
  """Fig. 7 on the llama-like run (`frequency_verdict`): the checkpoint
  spacing is its resolution (the same checkpoint: too small to speak)."""
  del cfg
  f = s["frequency_llama"]
  rows = records(f, "rows", need=("step", "adj_r2"), at="frequency_llama")
  num(f, "V", at="frequency_llama")
  for i, r in enumerate(rows):
    if r.get("val_loss") is not None:  # None: not logged at that step.
      num(r, "val_loss", at=f"frequency_llama.rows[{i}]")
    if "conv_head" in r:
      num(r, "conv_head", at=f"frequency_llama.rows[{i}]")
  steps = [r["step"] for r in rows]
  if steps[0] < 0 or any(b <= a for a, b in zip(steps, steps[1:])):
    raise ValueError("`frequency_llama.rows[*].step` must be non-negative "
                     f"and increasing; got {steps[:5]}")
  gaps = sorted({b - a for a, b in zip(steps, steps[1:])})
  last = steps[-1]
  return claim.row_of(
      frequency_verdict(rows, f["V"]),
      statistic=(f"first checkpoint with adj. R^2 of -log frequency >= "
                 f"{ENCODED_R2} against the first where the validation "
                 f"loss has made {CONVERGED_SHARE:.0%} of its fall from "
                 "ln V; reproduced when earlier"),
      n=f"{len(rows)} checkpoints to step {last}",
      uncertainty=(f"each step known to its checkpoint spacing ("
                   f"{gaps[0]}..{gaps[-1]} steps)" if gaps else
                   "one checkpoint"),
      deviations=(f"steps: {last} = {last / PYTHIA_STEPS:.2%} of Pythia's "
                  f"{PYTHIA_STEPS}", f"subject: a llama-like run with V = "
                  f"{f['V']} (the paper: the Pythia suite)",
                  "corpus: Shakespeare (the paper: the Pile)",
                  "one seed"))


CLAIMS = seed003_rows.CLAIMS + (
    claim.on("003", "Fig. 7 (§5)", "frequency encoded before the loss "
             "converges", "encoding", read_frequency),
)
