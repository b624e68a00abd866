"""Seed 002's SpamLang claims on the sweep's arms (train/report/spamlang.py
runs them; spamlang_rows.py reads the project's control-based row): which
settings make the task "increasingly harder" to learn as V grows (each
head against its own variant's loss floor, `effects`), whether Adam's
beta2 alone decides it, and Fig. 14's caption on tied against untied
heads (`tied_row`).
"""

from __future__ import annotations

import numpy as np

from configs import spamlang as spamlang_config
from train.report import claim, intervals
from train.report.claim import DISAGREES, REPRODUCED, TOO_SMALL, Row

GAP = 0.1  # Nats: "rises with V" / "a strong effect" (our reading).
TABLE3_B2 = 0.95  # Table 3's Adam beta2.


def label(r) -> str:
  """A row's arm as the section names it ('base' for the lr-swept one)."""
  return r.get("arm") or "base"


def shared_lrs(rows) -> set:
  """The learning rates the rows ran at every one of their V (a sweep
  whose rates past the first stop at a V, spamlang.lr_grid_vocab, shares
  only the first): comparisons across V pick among these alone, so no V's
  loss is tuned over more rates than another's."""
  per_v = [{r["lr"] for r in rows if r["V"] == v}
           for v in {r["V"] for r in rows}]
  return set.intersection(*per_v) if per_v else set()


def lr_grid_said(rows) -> str | None:
  """A deviation where some V ran more learning rates than another: which
  ran where, and that comparisons across V use the shared ones."""
  shared = shared_lrs(rows)
  extra = sorted({r["V"] for r in rows if r["lr"] not in shared})
  if not extra:
    return None
  alone = sorted({r["V"] for r in rows} - set(extra))
  fmt = lambda xs: ", ".join(f"{x:g}" for x in sorted(xs))
  return (f"learning rates {fmt({r['lr'] for r in rows})} at V = "
          f"{', '.join(map(str, extra))}, {fmt(shared)} alone at V = "
          f"{', '.join(map(str, alone))} (spamlang.lr_grid_vocab): "
          "comparisons across V use the rates run at every V")


def best_lr(rows, among=None) -> float:
  """The learning rate whose rows' mean final validation loss is lowest
  (seeds averaged), among `among` where given (shared_lrs): how the main
  row, the tied row and the controls pick a head's lr at one V (`effects`
  picks one lr for every V instead: the lowest excess at the largest V,
  each seed's longest run)."""
  lrs = sorted({r["lr"] for r in rows} & (set(among) if among is not None
                                          else {r["lr"] for r in rows}))
  return min(lrs, key=lambda lr: np.mean([r["final_val_loss"] for r in rows
                                          if r["lr"] == lr]))


def model_said(rows, cpu: bool = True) -> str | None:
  """The deviation of the rows' model from Table 3's (SmolLM2-135M: 30
  layers of width 576, sequences of 64, batch 128, bfloat16; None where
  they match): read from the rows' `layers`, `block`, `batch`, `dtype`
  and the full rank's width; a field a report did not save yet:
  configs/spamlang.py's at its scale (`cpu`, the report config's
  spamlang.cpu)."""
  paper = spamlang_config.get_config("")
  ran = spamlang_config.get_config("cpu" if cpu else "")
  widths = [r["D"] for r in rows if r["full_rank"]]
  got = {"layers": ran.model.n_layer, "width": ran.model.n_embd,
         "block": ran.model.block_size, "batch": ran.train.batch_size,
         "dtype": ran.model.dtype}
  for key in ("layers", "block", "batch", "dtype"):
    seen = {r[key] for r in rows if key in r}
    if len(seen) > 1:
      raise claim.Unread(f"the rows ran several `{key}`: {sorted(seen)}")
    got[key] = seen.pop() if seen else got[key]
  got["width"] = max(widths) if widths else got["width"]
  want = {"layers": paper.model.n_layer, "width": paper.model.n_embd,
          "block": paper.model.block_size, "batch": paper.train.batch_size,
          "dtype": paper.model.dtype}
  if got == want:
    return None
  said = lambda m: (f"{m['layers']} llama-like layers of width {m['width']}"
                    f", sequences of {m['block']}, batch {m['batch']}, "
                    f"{m['dtype']}")
  return f"model: {said(got)} (Table 3 / Fig. 14: {said(want)})"


def b2_deviation(b2s) -> str | None:
  """Adam's beta2 of a set of runs against Table 3's (None: Table 3's)."""
  b2s = sorted(set(b2s))
  if b2s == [TABLE3_B2]:
    return None
  return (f"Adam beta2 {', '.join(f'{b:g}' for b in b2s)} (Table 3: "
          f"{TABLE3_B2})")


def head_name(r) -> str:
  if r.get("tied"):
    return "tied (full rank)"
  return "full rank" if r["full_rank"] else f"D = {r['D']}"


def _excess(rs) -> dict:
  """{seed: final loss - the variant's floor} of one head's runs at one V
  and lr (a seed's several step counts: its longest)."""
  out = {}
  for r in sorted(rs, key=lambda r: r["steps"]):
    out[r["seed"]] = r["final_val_loss"] - r.get("floor", 0.0)
  return out


def effects(rows, gap: float = GAP) -> list[dict]:
  """Per (arm, head): the loss above the variant's floor at each V (seeds
  averaged) at the learning rate whose largest-V excess is lowest, its
  rise from the smallest to the largest V, each seed's rise, and whether
  the task gets harder as V grows there: every seed's rise > `gap` nats
  ('harder'), every seed's <= `gap` ('not harder'), else 'mixed'."""
  out = []
  keys = sorted({(label(r), head_name(r)) for r in rows})
  for arm, head in keys:
    rs = [r for r in rows if label(r) == arm and head_name(r) == head]
    vocabs = sorted({r["V"] for r in rs})
    if len(vocabs) < 2:
      continue
    best = None
    for lr in sorted({r["lr"] for r in rs}):
      per_v = {v: _excess([r for r in rs if r["V"] == v and r["lr"] == lr])
               for v in vocabs}
      if not all(per_v.values()):
        continue
      top = float(np.mean(list(per_v[vocabs[-1]].values())))
      if best is None or top < best[0]:
        best = (top, lr, per_v)
    if best is None:
      continue
    _, lr, per_v = best
    seeds = sorted(set(per_v[vocabs[0]]) & set(per_v[vocabs[-1]]))
    rises = [per_v[vocabs[-1]][s] - per_v[vocabs[0]][s] for s in seeds]
    word = ("harder" if all(x > gap for x in rises) else
            "not harder" if all(x <= gap for x in rises) else "mixed")
    r0 = rs[0]
    out.append({"arm": arm, "head": head, "lr": lr, "b2": r0["b2"],
                "variant": r0.get("variant", "repeat"), "vocabs": vocabs,
                "excess": [float(np.mean(list(per_v[v].values())))
                           for v in vocabs],
                "seed_rises": rises, "effect": word})
  return out


def effects_said(rows, gap: float = GAP) -> str:
  """The computed sentence: which settings make SpamLang harder as V
  grows (each head at one lr for every V), and whether Adam's beta2 alone decides
  it for a head: a beta2 arm against the base at the arm's own lr."""
  effs = effects(rows, gap)
  if not effs:
    return "No setting ran at two or more V: nothing to say on V."
  said = lambda e: (f"{e['head']} in arm {e['arm']} (variant "
                    f"{e['variant']}, beta2 {e['b2']:g}, lr {e['lr']:g}: "
                    f"{e['excess'][0]:+.3f} -> {e['excess'][-1]:+.3f} nats "
                    "above the floor)")
  parts = []
  for word in ("harder", "not harder", "mixed"):
    hit = [said(e) for e in effs if e["effect"] == word]
    if hit:
      parts.append({"harder": f"Harder as V grows (every seed's rise > "
                               f"{gap} nats): ",
                    "not harder": f"Not harder (every seed's rise <= {gap}):"
                                  " ",
                    "mixed": "Seeds disagree: "}[word] + "; ".join(hit) + ".")
  for arm in (e for e in effs if e["arm"].startswith("b2=")):
    matched = [e for e in effects([r for r in rows if r["lr"] == arm["lr"]
                                   and label(r) == "base"], gap)
               if e["head"] == arm["head"] and e["variant"] == arm["variant"]]
    words = {arm["effect"]} | {e["effect"] for e in matched}
    if matched and len(words) == 2 and "mixed" not in words:
      base = matched[0]
      parts.append(f"**Adam's beta2 alone decides** whether the "
                   f"{arm['head']} head's task gets harder with V (variant "
                   f"{arm['variant']}, lr {arm['lr']:g} in both): beta2 "
                   f"{base['b2']:g}: {base['effect']}, beta2 {arm['b2']:g}: "
                   f"{arm['effect']}.")
  return " ".join(parts)


PAPER_TIED = ("seed 002 Fig. 14's caption: tied and untied heads, 'no strong "
              "effect from this hyper-parameter choice'")


def _vocab_range(largest: int) -> str | None:
  """The V range as a deviation, where it stops short of paper scale's."""
  if largest >= 131072:
    return None
  return (f"V up to {largest}, where --scale=paper runs to 131072 (Fig. "
          "14's own range of V is not in our copy's text; an effect growing "
          "with V may pass a threshold past it)")


def tied_row(rows, gap: float = GAP, cpu: bool = True) -> Row:
  """Fig. 14's caption: per V, the tied head's final loss minus the untied
  full-rank head's (each at its best learning rate, seed by seed at that
  rate), a Student's t interval over seeds; 'no strong effect' read as
  |difference| <= `gap` nats (our threshold: the caption gives none).
  Every V's interval inside +-gap: reproduced; some V's clear of it:
  disagrees; else too small to speak."""
  pick = lambda tied: [r for r in rows if bool(r.get("tied")) == tied and
                       r["full_rank"] and label(r) in ("base", "tied")]
  tied, untied = pick(True), pick(False)
  if not tied or not untied:
    raise claim.Unread("no tied and untied full-rank runs to compare")
  vocabs = sorted({r["V"] for r in tied} & {r["V"] for r in untied})
  if not vocabs:
    raise claim.Unread("the tied and untied runs share no V")

  shared = shared_lrs(tied + untied)

  def at_best(rs, v):
    at_v = [r for r in rs if r["V"] == v]
    lr = best_lr(at_v, among=shared)
    return lr, {r["seed"]: r["final_val_loss"] for r in at_v
                if r["lr"] == lr}

  parts, sides = [], []
  for v in vocabs:
    (lr_t, t), (lr_u, u) = at_best(tied, v), at_best(untied, v)
    diffs = [t[s] - u[s] for s in sorted(set(t) & set(u))]
    if len(diffs) >= 2:
      mean, lo, hi = intervals.t_interval(diffs)
      inside, outside = -gap <= lo and hi <= gap, hi < -gap or lo > gap
      sides.append(REPRODUCED if inside else DISAGREES if outside
                   else TOO_SMALL)
      parts.append(f"V = {v}: {mean:+.3f} ({lo:+.3f} .. {hi:+.3f}; lr "
                   f"{lr_t:g} tied, {lr_u:g} untied)")
    else:
      sides.append(TOO_SMALL)
      parts.append(f"V = {v}: {np.mean(diffs) if diffs else float('nan'):+.3f}"
                   " (one seed: no interval)")
  seeds = len({r["seed"] for r in tied})
  ours = "tied minus untied final loss: " + "; ".join(parts)
  stat = (f"per V, the tied head's final loss minus the untied full-rank "
          f"head's (each at its best lr among those run at every V); 'no "
          f"strong effect': within +-{gap} "
          "nats (our threshold)")
  n = f"{seeds} seed(s) per head; V = {', '.join(map(str, vocabs))}"
  unc = "95 % t interval over seeds (paired by seed) per V"
  devs = tuple(x for x in (
      "SpamLang's definition inferred (configs/spamlang.py)",
      model_said(tied + untied, cpu),
      _vocab_range(vocabs[-1]),
      b2_deviation(r["b2"] for r in tied + untied),
      lr_grid_said(tied + untied),
      f"threshold +-{gap} nats inferred: the caption gives no number") if x)
  word = (DISAGREES if DISAGREES in sides else
          REPRODUCED if all(x == REPRODUCED for x in sides) else TOO_SMALL)
  why = "" if word != TOO_SMALL else (
      "one seed per head, or an interval straddling +-"
      f"{gap}: more seeds (spamlang.seeds) would decide")
  return Row(word, ours, stat, n, unc, why=why, deviations=devs)


def effects_row(rows, gap: float = GAP, cpu: bool = True) -> Row:
  """Seed 002's contribution ('a trivial synthetic language ... for which
  the gradient bottleneck makes it increasingly harder for the model to
  learn correctly'), on the width-W head of the base arm: its loss above
  the floor, largest V against smallest, with a Student's t interval over
  seeds: above `gap` (our threshold) reproduced, at or under it disagrees,
  straddling it (or one seed) too small to speak; other arms' effects are
  in `ours`."""
  base = [e for e in effects(rows, gap) if e["arm"] == "base" and
          e["head"] == "full rank"]
  if not base:
    raise claim.Unread("the base arm's full-rank head ran at fewer than two "
                       "V")
  e = base[0]
  rises = e["seed_rises"]
  ours = effects_said(rows, gap)
  stat = ("the width-W untied head's final loss above the variant's floor, "
          f"largest V against smallest (one lr for every V, the lowest excess "
          f"at the largest V): harder when the rise's "
          f"interval lies above {gap} nats (our threshold)")
  n = f"{len(rises)} seed(s); V = {e['vocabs'][0]} .. {e['vocabs'][-1]}"
  said = ", ".join(f"{x:+.3f}" for x in rises)
  devs = tuple(x for x in (
      "SpamLang's definition inferred (configs/spamlang.py); variant "
      f"{e['variant']}",
      model_said(rows, cpu),
      _vocab_range(e["vocabs"][-1]),
      b2_deviation([e["b2"]]),
      lr_grid_said(rows),
      steps_said(rows)) if x)
  if len(rises) < 2:
    return Row(TOO_SMALL, ours, stat, n, f"one seed's rise: {said}", why=(
        "one seed: more seeds (spamlang.seeds) would decide"),
        deviations=devs)
  mean, lo, hi = intervals.t_interval(rises)
  unc = (f"95 % t interval over seeds of the rise {mean:+.3f} .. "
         f"({lo:+.3f} .. {hi:+.3f}); each seed's: {said}")
  word = REPRODUCED if lo > gap else DISAGREES if hi <= gap else TOO_SMALL
  why = "" if word != TOO_SMALL else (
      f"the interval straddles {gap}: more seeds (spamlang.seeds) would "
      "decide")
  return Row(word, ours, stat, n, unc, why=why, deviations=devs)


def steps_said(rows) -> str:
  """The steps each V ran in the base arm and the sequences per token
  they gave (Table 3: 5000 steps of 128 at every V)."""
  per_v = {}
  for r in rows:
    if not r.get("arm") and r["full_rank"]:
      per_v.setdefault(r["V"], set()).add(r["steps"])
  said = ", ".join(f"V = {v}: {'/'.join(map(str, sorted(st)))}"
                   for v, st in sorted(per_v.items()))
  batch = {r.get("batch", 256) for r in rows}.pop()
  seen = [max(st) * batch / v for v, st in sorted(per_v.items())]
  return (f"steps per V in the base arm: {said} (sequences per token "
          f"{seen[0]:.3g} at the smallest V, {seen[-1]:.3g} at the largest); "
          "Table 3 runs 5000 steps at every V, so its sequences per token "
          "fall as 1/V too")
