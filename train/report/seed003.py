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
from train.report import claim, lowrank
from train.report.claim import (CANNOT, DISAGREES, NOT_RUN, REPRODUCED,
                                SMALLER, Unread, Verdict, finite, mapping,
                                markdown, num, per_subject, records)
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


# The claims ledger's rows (train/report/ledger.py).


def read_encoding(s, cfg):
  """Table 1: adj. R^2 of -log p on W, the probe model."""
  r2 = num(s, "encoding", "adj_r2")
  return (f"adj. R^2 {r2:.3f} (probe model, V = {s['encoding']['V']})",
          "a small trained GPT", SMALLER if r2 >= 0.8 else
          f"{DISAGREES}: below 0.8 on a small, briefly trained model")


def read_frequency(s, cfg):
  """Fig. 7 on the llama-like run (`frequency_verdict`)."""
  f = s["frequency_llama"]
  rows = records(f, "rows", need=("step", "adj_r2"), at="frequency_llama")
  num(f, "V", at="frequency_llama")
  for i, r in enumerate(rows):
    if r.get("val_loss") is not None:  # None: not logged at that step.
      num(r, "val_loss", at=f"frequency_llama.rows[{i}]")
  return claim.reading(frequency_verdict(f["rows"], f["V"]),
                       f"llama-like run, V = {f['V']}, "
                       f"{f['rows'][-1]['step']} steps")


def read_sparsity(named):
  """Fig. 3: W's dimensions poorly correlated with log p."""
  for n, e in named:
    num(e, "median_dim_abs_spearman", at=n)
  ours = "; ".join(f"{n}: median |Spearman| {e['median_dim_abs_spearman']:.2f}"
                   for n, e in named)
  return ours, "probe GPT and real LLMs; poorly = median below 0.2", \
      per_subject({n: DISAGREES if e["median_dim_abs_spearman"] > 0.2
                    else REPRODUCED for n, e in named})


def read_input_embeddings(named):
  """Table 1 on the input embeddings of untied models."""
  named = [(n, e) for n, e in named if "adj_r2_input_embeddings" in e]
  if not named:
    return "-", "untied heads only", f"{NOT_RUN}: no untied subject"
  for n, e in named:
    num(e, "adj_r2_input_embeddings", at=n)
  ours = "; ".join(f"{n}: {e['adj_r2_input_embeddings']:.2f}"
                   for n, e in named)
  return ours, "untied heads only; below 0.5 disagrees", per_subject(
      {n: DISAGREES if e["adj_r2_input_embeddings"] < 0.5 else REPRODUCED
       for n, e in named})


def _numbers_at(p, key, name, indices) -> list:
  """p[key], a list with finite numbers at `indices`."""
  values = p[key]
  if not isinstance(values, list):
    raise TypeError(f"`{name}.{key}` is a {type(values).__name__}, not a "
                    "list")
  for i in indices:
    finite(values[i], f"{name}.{key}[{i}]")
  return values


def read_removal(named):
  """Fig. 6: KL after removing 30 % / 50 % of the dimensions, saliency
  order vs adversarial; within 10 % of each other: cannot tell."""
  parts, verdicts = [], {}
  for n, p in named:
    ratios = mapping(p, n)["ratios"]
    if not isinstance(ratios, list) or not {0.3, 0.5} <= set(ratios):
      raise Unread(f"`{n}.ratios` lacks 0.3 or 0.5")
    i30, i50 = ratios.index(0.3), ratios.index(0.5)
    sal, adv = (_numbers_at(p, k, n, (i30, i50))
                for k in ("saliency", "adversarial"))
    parts.append(f"{n}: saliency {sal[i30]:.3g} / {sal[i50]:.3g}, "
                 f"adversarial {adv[i30]:.3g} / {adv[i50]:.3g}")
    ratio = min(adv[i30] / max(sal[i30], 1e-12),
                adv[i50] / max(sal[i50], 1e-12))
    verdicts[n] = (REPRODUCED if ratio > 1.1 else CANNOT if ratio > 0.9
                   else DISAGREES)
  return "; ".join(parts), ("KL at 30 % / 50 % removed; within 10 %: "
                            "cannot tell"), per_subject(verdicts)


CLAIMS = (
    claim.on("003", "Table 1", "adj. R^2 of -log p on W: 0.892 (GPT-2)",
             "encoding", read_encoding),
    claim.on("003", "Fig. 7 (§5)", "frequency encoded before the loss "
             "converges", "encoding", read_frequency),
    claim.on_every_subject(
        "003", "Fig. 3", "the overwhelming majority of W's dimensions "
        "poorly correlated with log p", "encoding", read_sparsity),
    claim.on_every_subject(
        "003", "Table 1 (input embeddings)", "adj. R^2 0.66-0.81 on the "
        "input embeddings of untied models", "encoding",
        read_input_embeddings),
    claim.on_every_subject(
        "003", "Fig. 6", "removing the least salient dimensions first costs "
        "less than the most salient first", "prune", read_removal),
)
