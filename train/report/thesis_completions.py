"""Seed 004's completions (Tables 5.1 / 5.2) scored against the held-out
originals, the same (prompt, original) pairs the completion tables show
(generate.split_stories): each model's mean per-token loss on the
original continuation given the prompt (teacher forcing), the unigram's
on the same tokens (the best context-free predictor, fit on the run's
training tokens: thesis_eval.unigram_window_losses), and how much of the
greedy completion is the original's text (the share of positions whose
token is the original's; the common prefix in tokens).

The thesis judges its completions by eye, on three examples a table; it
states no number to test, so these scores are a description and no
ledger row. A model whose loss on the originals is not below the
unigram's has learned no use of context: its completions are not a test
of anything the thesis says about them, and the section says so first.
"""

from __future__ import annotations

import numpy as np

from train.models import generate
from train.report import thesis_eval
from train.training import completions

UNTRAINED = "too little trained to produce text"


def _ids(name: str, tokens) -> list[int]:
  """`tokens` as a list of integer ids, else a ValueError naming it."""
  try:
    ids = [int(t) for t in tokens]
  except (TypeError, ValueError):
    ids = None
  if ids is None or any(i != t for i, t in zip(ids, tokens)):
    raise ValueError(f"`{name}` must be a sequence of integer token ids; "
                     f"got {tokens!r:.80}.")
  return ids


def overlap(greedy, original) -> dict:
  """{'exact_match': the share of the original's positions whose greedy
  token is the original's, 'common_prefix': the tokens both start with}.
  A greedy completion shorter than the original misses the rest; tokens
  past the original's end are not scored."""
  original, greedy = _ids("original", original), _ids("greedy", greedy)
  if not original:
    raise ValueError("`original` must hold at least one token.")
  same = [g == o for g, o in zip(greedy, original)]
  prefix = same.index(False) if False in same else len(same)
  return {"exact_match": sum(same) / len(original), "common_prefix": prefix}


def pair_scores(losses_p, unigram_p, greedy_pxn, original_pxn,
                tokens: int) -> dict:
  """One completion length's scores as plain data: per pair the model's
  and the unigram's mean loss on the original (nats per token), the exact
  match share and the common prefix; and their means over the pairs."""
  p = len(original_pxn)
  if not p or not len(losses_p) == len(unigram_p) == len(greedy_pxn) == p:
    raise ValueError(
        "`losses_p`, `unigram_p`, `greedy_pxn` and `original_pxn` must hold "
        f"one entry per pair, at least one; got {len(losses_p)}, "
        f"{len(unigram_p)}, {len(greedy_pxn)}, {p}.")
  if any(len(o) != tokens for o in original_pxn):
    raise ValueError(f"`original_pxn`: every original must hold `tokens` = "
                     f"{tokens} tokens; got {[len(o) for o in original_pxn]}.")
  both = [overlap(g, o) for g, o in zip(greedy_pxn, original_pxn)]
  out = {"tokens": int(tokens),
         "loss": [float(v) for v in losses_p],
         "unigram": [float(v) for v in unigram_p],
         "exact_match": [b["exact_match"] for b in both],
         "common_prefix": [b["common_prefix"] for b in both]}
  for key in ("loss", "unigram", "exact_match", "common_prefix"):
    out[f"mean_{key}"] = float(np.mean(out[key]))
  return out


def unigram_pair_losses(workdir: str, originals_by_length) -> list[list[float]]:
  """Each original's mean loss (nats per token) under the unigram of the
  run's training tokens (thesis_eval.unigram_window_losses, one call for
  every length: each token its own window); `originals_by_length`: per
  completion length, the originals' ids [P, n]."""
  try:
    arrays = [np.asarray(o, np.int64) for o in originals_by_length]
  except (TypeError, ValueError):  # Ragged, or not ids.
    arrays = [np.zeros(0)]
  shapes = [a.shape for a in arrays]
  if not arrays or any(a.ndim != 2 or not a.size or a.min() < 0
                       for a in arrays):
    raise ValueError("`originals_by_length`: each entry must be a non-empty "
                     "[pairs, tokens] array of token ids >= 0; got shapes "
                     f"{shapes}.")
  y = np.concatenate([a.ravel() for a in arrays])
  per_token = np.asarray(thesis_eval.unigram_window_losses(workdir,
                                                           y[:, None]))
  ends = np.cumsum([0] + [p * t for p, t in shapes])
  return [per_token[a:b].reshape(s).mean(1).tolist()
          for a, b, s in zip(ends[:-1], ends[1:], shapes)]


def measure(workdirs: dict, n: int, token_counts, seed: int = 0
            ) -> tuple[dict, str]:
  """({run: [pair_scores of each completion length]}, the completion
  tables' markdown (completions.story_markdown)) of the runs `workdirs`
  (label -> workdir): n held-out stories split for each length, completed
  greedily, and scored against their originals."""
  if not workdirs:
    raise ValueError("`workdirs` must name at least one run.")
  loaded = [completions.load_run(wd) for wd in workdirs.values()]
  stories, tok = completions.held_out_stories(loaded), loaded[0][3]
  splits = [generate.split_stories(stories, tok, n, count, seed)
            for count in token_counts]
  originals = [[o for _, o in pairs] for pairs in splits]
  scores, columns = {}, [{} for _ in splits]
  for (label, wd), (params, model, cfg, _, config) in zip(workdirs.items(),
                                                          loaded):
    unigram = unigram_pair_losses(wd, originals)
    scores[label] = []
    for j, (count, pairs) in enumerate(zip(token_counts, splits)):
      greedy = generate.complete(params, model, cfg, [p for p, _ in pairs],
                                 count, seed)
      losses = completions.continuation_losses(
          params, model, cfg, pairs, config.train.loss_chunk)
      scores[label].append(pair_scores(losses, unigram[j], greedy,
                                       originals[j], count))
      columns[j][label] = greedy
  tables = [completions.story_markdown(tok, count, pairs, cols)
            for count, pairs, cols in zip(token_counts, splits, columns)]
  return scores, "\n\n".join(tables)


def untrained(runs) -> str:
  """The section's first sentence when a model's per-token loss on the
  originals is not below the unigram's at some completion length ('' when
  every model's is below): it names those models, whose completions are
  then no test. `runs`: the section's rows ('run', 'completion_scores')."""
  names, why = [], []
  for r in runs:
    worst = [s for s in r["completion_scores"]
             if not s["mean_loss"] < s["mean_unigram"]]  # NaN: not below.
    if worst:
      s = worst[0]
      names.append(r["run"])
      why.append(f"{r['run']} {s['mean_loss']:.3f} against "
                 f"{s['mean_unigram']:.3f} nats at {s['tokens']} tokens")
  if not names:
    return ""
  who = (names[0] + " is" if len(names) == 1 else
         ", ".join(names[:-1]) + f" and {names[-1]} are")
  return (f"**{who} {UNTRAINED}: {'its' if len(names) == 1 else 'their'} "
          "completions are not a test** (per-token loss on the held-out "
          f"originals not below the unigram's: {'; '.join(why)}).")


def table(runs) -> str:
  """Markdown: a row per model and completion length, from the numbers."""
  lines = ["| model | tokens | loss on originals | unigram's | "
           "exact-match share | mean common prefix |", "|" + "---|" * 6]
  for r in runs:
    for s in r["completion_scores"]:
      lines.append(f"| {r['run']} | {s['tokens']} | {s['mean_loss']:.3f} | "
                   f"{s['mean_unigram']:.3f} | {s['mean_exact_match']:.3f} "
                   f"| {s['mean_common_prefix']:.2f} |")
  return "\n".join(lines)
