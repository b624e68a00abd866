"""Report section: every probe on real LLMs side by side (default SmolLM2-
135M and Gemma 3 270M, both offline), the papers' numbers beside ours.

The comparison itself is train/probes/compare.py (also the binary
`python -m train.compare`); this section turns its numbers into tables,
captioned overlay figures and sentences computed from the numbers, which
say where we disagree with a paper and why that may be.
"""

from __future__ import annotations

from train.probes import compare, spec
from train.report import real_llm_rows, seed003, seed003_rows
from train.report import section as section_lib
from train.report.section import Section, figure, table

def settings_from(config) -> compare.Settings:
  c = config.real_llm
  fields = {f: c[f] for f in compare.Settings.__dataclass_fields__
            if f in c and f != "seed"}
  return compare.Settings(seed=config.seed, **fields)


def real_llm(config, outdir: str) -> Section:
  """Seeds 001 / 002 / 003 on each model of config.real_llm.models."""
  from bottleneck.io import cli  # pylint: disable=g-import-not-at-top
  settings = settings_from(config)
  results = compare.run(list(config.real_llm.models), settings, cli.say,
                        fraction=section_lib.progress)
  names = list(results)
  body = [f"Models: {', '.join(names)}. Each is probed by one forward over "
          f"{settings.windows} windows of up to {settings.window} tokens of "
          f"`{settings.text or 'shakespeare'}` plus {settings.ood_windows} "
          f"of `{settings.ood_text}` (modern technical English); every "
          "number below comes from this run."]
  for key, rows in compare.tables(results).items():
    body += [f"**{spec.TABLES[key]}**", table(rows)]
  body += [_reading(n, r, settings) for n, r in results.items()]
  body.append(_lp_budget(results, settings))
  captions = compare.captions()
  for name, fig in compare.figures(results).items():
    body.append(figure(fig, outdir, f"real_llm_{name}.png", captions[name]))
  return Section(f"Real LLMs: {' vs '.join(names)}", "\n\n".join(body),
                 {"models": results, "paper": compare.paper()})


def _reading(name: str, r: dict, s) -> str:
  """Sentences computed from one model's numbers; disagreements with the
  papers are said, with their likely reason."""
  out = [f"*{name}*: perplexity {r['sanity']['perplexity_ood']:.1f} on "
         f"modern technical prose and {r['sanity']['perplexity']:.1f} on "
         f"the probed text ({r['pass']['tokens']} tokens); greedy "
         f"\"{s.prompt}\" -> \"{r['sanity']['continuation'].strip()}\"."]
  out.append(real_llm_rows.gradient_sentence(r["gradient"])
             + real_llm_rows.twin_sentence(r["gradient"].get("random_head")))
  out.append(seed003.said(seed003_rows.edit_row, "seed 003 Algorithm 1",
                          r["edit"], r, {}, name, reason=seed003.EDIT_REASON))
  out.append(seed003.said(seed003_rows.fig5_row, "seed 003 Fig. 5",
                          r["edit"], r, {}, name))
  out.append(seed003.said(
      seed003_rows.removal_row, "seed 003 Fig. 6", r["prune"], r, {}, name,
      reason=f"The MLR saliency is fitted on {r['pass']['tokens']} "
      "positions of one text and measured on another."))
  if r.get("shared", {}).get("applicable"):
    out.append(seed003.said(seed003_rows.shared_removal_row,
                            "seed 003 §4 on the shared matrix", r["shared"],
                            r, {}, name))
    out.append(seed003.said(seed003_rows.shared_edit_row,
                            "seed 003 Table 2 on the shared matrix",
                            r["shared"], r, {}, name))
  if "mauve" in r:
    for fn, cite in ((seed003_rows.mauve_removal_row, "seed 003 Fig. 6 "
                      "(MAUVE)"), (seed003_rows.mauve_edit_row,
                                   "seed 003 Table 2 (MAUVE)")):
      out.append(seed003.said(fn, cite, r["mauve"], r, {}, name))
  if "figure1" in r:
    f1 = r["figure1"]
    gap = max(((a["m"], a["fraction"] - b["fraction"]) for a, b in
               zip(f1["trained"], f1["gaussian"])), key=lambda t: abs(t[1]))
    und = sum(x["undecided"] for x in f1["trained"] + f1["gaussian"])
    out.append(f"Figure 1: the trained head's selectable fraction differs "
               f"from the Gaussian's by at most {gap[1]:+.2f} (at m = "
               f"{gap[0]}), {f1['trials']} subsets per m, {und} undecided; "
               f"LP time {f1['trained_seconds'] + f1['gaussian_seconds']:.0f}"
               " s (App. D's LPs included).")
    out.append(seed003.said(
        lambda n, x, w, c: real_llm_rows.figure1_row(n, x, w),
        "seed 001 Fig. 1 (trained heads select like random ones)", f1, r,
        {}, name))
  return " ".join(out)


FIGURE1_SUBSETS = 20  # Subsets per m a cross-model Figure 1 should have.


def _lp_budget(results: dict, s) -> str:
  """Says how many subsets Figure 1 used, with the measured LP time, when
  that is fewer than FIGURE1_SUBSETS (never silently)."""
  if not s.lp_trials:
    return ("Figure 1 and App. D were skipped (`lp_trials` = 0).")
  if s.lp_trials >= FIGURE1_SUBSETS:
    return f"Figure 1: {s.lp_trials} subsets per m on every matrix."
  parts = []
  for name, r in results.items():
    f1 = r.get("figure1")
    if f1:
      n = f1["trained_instances"] + f1["gaussian_instances"]
      seconds = f1["trained_seconds"] + f1["gaussian_seconds"]
      parts.append(f"{name} {seconds:.0f} s for {n} instances, App. D's "
                   f"included ({seconds / n:.1f} s each)")
  return (f"**Fewer subsets than a comparison needs**: Figure 1 uses "
          f"{s.lp_trials} subsets per m (not {FIGURE1_SUBSETS}) to fit this "
          f"scale's time budget; measured LP time here: {'; '.join(parts)}. "
          "Each fraction is therefore a multiple of "
          f"1/{s.lp_trials}; `--scale=paper` runs 100 per m.")


# The claims ledger's rows on real LLMs: real_llm_rows.py's.
CLAIMS = real_llm_rows.CLAIMS
