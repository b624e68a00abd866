"""The claims ledger: one row per paper claim the report tests, computed from
a report's results.json (the numbers its sections saved), never typed in.

  python -m train.report.ledger --outdir=report      # print it as markdown

The report opens with it (train/report/runner.py). A row: paper, where in
it, the paper's number, ours (read from the section's numbers), our scale,
and a verdict: reproduced | reproduced at a smaller scale | disagrees |
cannot tell | not run. A claim is one entry of CLAIMS: its section and a
function of that section's numbers (and the report's config).
"""

from __future__ import annotations

import math
import re
from typing import Callable, NamedTuple

from absl import flags
import numpy as np

from bottleneck import bounds, stats

RESULTS_VERSION = 2  # results.json's "version": 2 = sections + the ledger.
REPRODUCED, SMALLER = "reproduced", "reproduced at a smaller scale"
DISAGREES, CANNOT, NOT_RUN = "disagrees", "cannot tell", "not run"


class Claim(NamedTuple):
  paper: str  # seed 001 .. 004
  where: str  # Figure / table / section of the paper.
  says: str  # The paper's number, as it states it.
  section: str  # The report section whose numbers decide it.
  read: Callable[[dict, dict], tuple[str, str, str]]  # -> ours, scale, verdict


def _from_sentence(sentence: str, scale: str) -> tuple[str, str, str]:
  """A section's verdict sentence ('**Agrees ...', '**Disagrees ...',
  '**Cannot tell** ...') as (ours: the sentence after its bold opening,
  scale, verdict); CPU runs are smaller than the papers', so agreement is
  'reproduced at a smaller scale'."""
  ours = sentence.split("**", 2)[-1].lstrip(" :")
  ours = re.sub(r"^\((?:[^()]|\([^()]*\))*\):?\s*", "", ours)  # The paper's.
  ours = ours if len(ours) < 400 else ours[:397] + "..."
  verdict = (SMALLER if sentence.startswith("**Agrees") else DISAGREES
             if sentence.startswith("**Disagrees") else CANNOT)
  return ours, scale, verdict


def _table1(s, cfg):
  n, total = s["rows_matching_paper"]["gumbel"], len(s["rows"])
  return (f"{n}/{total} rows equal (Gumbel form)", "the paper's 22 models",
          REPRODUCED if n == total else f"{DISAGREES}: {total - n} rows "
          "differ")


def _figure5(s, cfg):
  sim, closed = s["m_star_simulation"], s["m_star_closed_form"]["gumbel"]
  ours = (f"simulation m* = {sim}; closed form {closed}, row-space exact "
          f"law {s['m_star_closed_form']['rowspace_exact']}")
  scale = f"{s['N']}x{s['d']}, {s['records'][0]['trials']} trials per m"
  if not 0 <= sim - closed <= 5:
    return ours, scale, (f"{DISAGREES}: the bound is not slightly below the "
                         "simulation")
  return ours, scale, (REPRODUCED + " (the paper's caption says 27, its "
                       "Table 1 26; ours agrees with 26)")


def _signrank(s, cfg):
  exh = s["exhaustive"]
  n_cert, n = sum(r["certified"] for r in exh), sum(r["subsets"] for r in exh)
  worst = min(r["worst_exact_log10_margin"]
              for r in s["random_subsets"] + s["exact_only"])
  ours = (f"float64 certified {n_cert}/{n} subsets of the exhaustive "
          f"cases; exact normalised margins down to 10^{worst:.0f}")
  scale = ", ".join(f"N = {r['N']}, m = {r['m']}" for r in exh)
  return ours, scale, (REPRODUCED if n_cert == n else
                       f"{DISAGREES}: {n - n_cert} subsets not certified")


def _lp_m(records, threshold):
  return bounds.empirical_m_star([r["m"] for r in records],
                                 [r["fraction"] for r in records], threshold)


def _figure1(s, cfg):
  c, t = cfg["figure1"], cfg["threshold"]
  got = {p: _lp_m(s[p], t) for p in ("logits", "probs") if p in s}
  ours = ", ".join(f"{p} m* = {m}" for p, m in got.items())
  paper_size = (c["N"], c["d"]) == (50257, 768)
  scale = f"{c['N']}x{c['d']}, {c['trials']} subsets per m"
  if not paper_size:
    return ours, scale, f"{CANNOT}: not the paper's 50257 x 768"
  far = {p: m for p, m in got.items()
         if abs(m - {"logits": 95, "probs": 85}[p]) > 10}
  if far:
    return ours, scale, f"{DISAGREES}: " + ", ".join(
        f"{p} off by more than 10" for p in far)
  return ours, scale, (REPRODUCED if c["trials"] >= 100 else SMALLER)


PAPER_WIDE = {"32000x2048": 400, "32000x4096": 1070}  # Fig. 1, bottom.


def _figure1_wide(s, cfg):
  wide = {k: v for k, v in s.get("wide", {}).items() if k in PAPER_WIDE}
  if not wide:
    return "-", "-", (f"{NOT_RUN}: the wider panels run at --scale=paper "
                      "(figure1.wide)")
  t = cfg["threshold"]
  got = {k: _lp_m(v["records"], t) for k, v in wide.items()}
  ours = "; ".join(f"{k}: m* = {m} ({wide[k]['seconds_per_instance']:.1f} s "
                   "per instance)" for k, m in got.items())
  far = [k for k, m in got.items()
         if abs(m - PAPER_WIDE[k]) > 0.1 * PAPER_WIDE[k]]
  trials = next(iter(wide.values()))["records"][0]["trials"]
  return ours, f"{trials} subsets per m", (
      f"{DISAGREES}: more than 10 % off for {', '.join(far)}" if far else
      REPRODUCED if trials >= 100 else SMALLER)


def _figure3(s, cfg):
  rows = s["by_d"]
  regime = [r for r in rows if r["N_over_d"] >= 15]  # Paper: N/d >= 15.6.
  ours = f"line through 0 over every d: m* = {s['slope']:.3f} d"
  scale = (f"N = {rows[0]['N']}, d = {rows[0]['d']}..{rows[-1]['d']} "
           f"(N/d down to {min(r['N_over_d'] for r in rows):.1f})")
  if len(regime) < 2:
    return ours, scale, (f"{CANNOT}: fewer than 2 widths with d << N "
                         "(N/d >= 15, the paper's regime)")
  d = np.array([r["d"] for r in regime], float)
  m = np.array([r["m_star_lp"] for r in regime], float)
  slope = stats.slope_through_zero(d, m)
  lo, hi = stats.bootstrap_slope(d, m, seed=cfg.get("seed", 0))
  ratio = m / d
  trend = ("rising" if np.all(np.diff(ratio) > 0) else "falling" if
           np.all(np.diff(ratio) < 0) else "not monotone")
  ours += (f"; over N/d >= 15 only: {slope:.3f} d (90 % bootstrap "
           f"{lo:.3f} .. {hi:.3f}), m*/d {ratio[0]:.3f} "
           f"(d = {d[0]:.0f}) .. {ratio[-1]:.3f} (d = {d[-1]:.0f}), "
           f"{trend}")
  if lo <= 0.2 <= hi:
    return ours, scale, SMALLER + " (0.2 inside the interval)"
  return ours, scale, (
      f"{DISAGREES}: {slope:.3f} d where N/d >= 15 (0.2 outside "
      f"{lo:.3f} .. {hi:.3f}), m*/d {trend} with d "
      f"(N = {rows[0]['N']}; the paper: N = 32000, d to 2048; a d/5 line "
      "fitted through 0 over its range weighs its largest d most)")


def _natural(s, cfg):
  from train.report import seed001_lp  # pylint: disable=g-import-not-at-top
  c = cfg["natural"]
  return _from_sentence(seed001_lp.natural_verdict(
      s["natural"], s["uniform"], s["spread"], c["eps"]),
                        f"{c['N']}x{c['d']}, Shakespeare bigrams")


def _trained(s, cfg):
  from train.report import seed001_lp  # pylint: disable=g-import-not-at-top
  curves = {k: v for k, v in s.items()
            if isinstance(v, list) and not k.endswith("t*")}
  if len(curves) < 2:
    return "-", "-", f"{NOT_RUN}: no trained matrix"
  first = next(iter(curves.values()))
  return _from_sentence(seed001_lp.trained_verdict(curves),
                        f"{first[0]['trials']} subsets per m")


def _destroyed(named) -> tuple[str, str]:
  """(ours, verdict) of eq. (10)'s norm ratio for (name, numbers) pairs,
  each beside sqrt(1 - D/V): the share of a random direction's norm that
  a D-dimensional row space misses; where the probe ran Gaussian twins
  of the head (`random_head`), the comparison is on the same gradients
  and within their spread."""
  parts, sides = [], []
  for name, r in named:
    counted = math.sqrt(1 - r["D_over_V"])
    parts.append(f"{name}: {r['norm_ratio']:.4f} (sqrt(1 - D/V) = "
                 f"{counted:.4f})")
    twin = r.get("random_head")
    if twin:
      gap, noise = twin["trained"] - twin["random"], max(
          3 * twin["random_std"], 1e-4)
      side = ("more" if gap > noise else "less" if gap < -noise
              else "no more")
      sides.append(f"{name} {side} than its Gaussian twins ({gap:+.4f})")
    else:
      sides.append(f"{name} {r['norm_ratio'] - counted:+.4f} (no twin)")
  low = [n for (n, r) in named if r["norm_ratio"] < 0.95]
  if low:
    return "; ".join(parts), f"{DISAGREES}: under 95 % for {', '.join(low)}"
  return "; ".join(parts), (f"{SMALLER}; against dimension counting: "
                            + ", ".join(sides))


def _gradient(s, cfg):
  ours, verdict = _destroyed([(n, r) for n, r in s.items()
                              if isinstance(r, dict) and "norm_ratio" in r])
  return ours, "the report's probe model", verdict


def _long_rank(s, cfg):
  rows = [(n, r) for n, r in s.items() if isinstance(r, dict)
          and r.get("rank_vs_tokens_long")]
  if not rows:
    return "-", "-", f"{NOT_RUN}: probes.rank_tokens = 0 at this scale"
  name, r = rows[0]
  last, v = r["rank_vs_tokens_long"][-1], r["V"]
  ours = ", ".join(f"T = {x['tokens']}: {x['rank']}"
                   for x in r["rank_vs_tokens_long"])
  scale = f"{name}, V = {v}" + (", T < V" if last["tokens"] < v else "")
  share = last["rank"] / min(last["tokens"], v)
  return ours, scale, (SMALLER if share >= 0.99 else
                       f"{DISAGREES}: {share:.1%} of min(T, V) at T = "
                       f"{last['tokens']}")


def _real(s, key):
  """(name, numbers[key]) of every real LLM of the real_llm section."""
  return [(n, m[key]) for n, m in s["models"].items() if key in m]


def _gradient_real(s, cfg):
  ours, verdict = _destroyed(_real(s, "gradient"))
  return ours, ", ".join(s["models"]), verdict


def _encoding_real(s, cfg):
  named = _real(s, "encoding")
  ours = "; ".join(f"{n}: {e['adj_r2']:.3f}" for n, e in named)
  low = [n for n, e in named if e["adj_r2"] < 0.8]
  return ours, ", ".join(s["models"]), (
      f"{DISAGREES}: below 0.8 for {', '.join(low)}" if low else REPRODUCED)


def _rowstats_real(s, cfg):
  """App. E: trained rows vary more in norm than a Gaussian's, with what
  Q8_0 storage can add to the spread (head.quantisation)."""
  parts, verdicts = [], {}
  for n, r in _real(s, "rowstats"):
    t, g = r["trained"], r["random"]
    spread, gauss = t["norm_std"] / t["norm_mean"], g["norm_std"] / g[
        "norm_mean"]
    q = r.get("quantisation")
    parts.append(f"{n}: {spread:.4f} (Gaussian {gauss:.4f})" + (
        f", of which Q8_0 rounding ~{q['noise_rel_rms']:.4f}" if q else ""))
    verdicts[n] = REPRODUCED if spread > gauss else DISAGREES
  return "; ".join(parts), "row-norm std / mean", _per_subject(verdicts)


def _appendix_a_real(s, cfg):
  named = _real(s, "cumulative")
  ours = "; ".join(f"{n}: {c['tokens_for_0.9_of_mean_curve']} (V = "
                   f"{c['V']}; per-position median "
                   f"{c['tokens_for_0.9_median']:.0f})" for n, c in named)
  near = [n for n, c in named
          if 100 <= c["tokens_for_0.9_of_mean_curve"] <= 400]
  return ours, "the packaged Shakespeare, not news", (
      REPRODUCED + " (within a factor 2)" if len(near) == len(named) else
      f"{DISAGREES}: off ~200 by more than a factor 2; another text (plays, "
      "not news) and other models than GPT-2")


def _lowrank(s, cfg):
  from train.report import seed002  # pylint: disable=g-import-not-at-top
  r = s["rows"]
  return _from_sentence(seed002.lowrank_verdict(r, cfg["lowrank"]["flat"]),
                        f"V = {r[0]['V']}, D = {min(x['D'] for x in r)}.."
                        f"{max(x['D'] for x in r)}, {r[0]['steps']} steps")


def _spamlang(s, cfg):
  from train.report import seed002  # pylint: disable=g-import-not-at-top
  r = s["rows"]
  return _from_sentence(
      seed002.spamlang_verdict(r, cfg["spamlang"]["learned"]),
      f"V up to {max(x['V'] for x in r)}, "
      f"{'CPU model' if cfg['spamlang']['cpu'] else 'Table 3 model'}")


def _thesis(s, cfg):
  from train.report import seed004  # pylint: disable=g-import-not-at-top
  r = s["runs"]
  return _from_sentence(seed004.thesis_verdict(r), ", ".join(
      x["run"] for x in r) + f"; {r[0].get('tokens', '?')} tokens each")


def _frequency(s, cfg):
  from train.report import seed003  # pylint: disable=g-import-not-at-top
  f = s["frequency_llama"]
  return _from_sentence(seed003.frequency_verdict(f["rows"], f["V"]),
                        f"llama-like run, V = {f['V']}, "
                        f"{f['rows'][-1]['step']} steps")


def _encoding(s, cfg):
  r2 = s["encoding"]["adj_r2"]
  return (f"adj. R^2 {r2:.3f} (probe model, V = {s['encoding']['V']})",
          "a small trained GPT", SMALLER if r2 >= 0.8 else
          f"{DISAGREES}: below 0.8 on a small, briefly trained model")


def _probe_and_real(sections, key):
  """(name, numbers) of the probe model (encoding section) and of every
  real LLM (real_llm section) for one of seed 003's probes."""
  out = []
  if "encoding" in sections:
    out.append(("probe model", sections["encoding"][key]))
  if "real_llm" in sections:
    out += _real(sections["real_llm"], key)
  return out


def _per_subject(verdicts: dict) -> str:
  """'reproduced on a, b; disagrees on c' from {name: verdict word}; the
  worst verdict first."""
  order = (DISAGREES, CANNOT, REPRODUCED)
  groups = [(v, [n for n, x in verdicts.items() if x == v]) for v in order]
  return "; ".join(f"{v} on {', '.join(ns)}" for v, ns in groups if ns)


def _sparsity(named):
  ours = "; ".join(f"{n}: median |Spearman| {e['median_dim_abs_spearman']:.2f}"
                   for n, e in named)
  return ours, "probe GPT and real LLMs; poorly = median below 0.2", \
      _per_subject({n: DISAGREES if e["median_dim_abs_spearman"] > 0.2
                    else REPRODUCED for n, e in named})


def _input_embeddings(named):
  named = [(n, e) for n, e in named if "adj_r2_input_embeddings" in e]
  if not named:
    return "-", "untied heads only", f"{NOT_RUN}: no untied subject"
  ours = "; ".join(f"{n}: {e['adj_r2_input_embeddings']:.2f}"
                   for n, e in named)
  return ours, "untied heads only; below 0.5 disagrees", _per_subject(
      {n: DISAGREES if e["adj_r2_input_embeddings"] < 0.5 else REPRODUCED
       for n, e in named})


def _removal(named):
  """Fig. 6: KL after removing 30 % / 50 % of the dimensions, saliency
  order vs adversarial; within 10 % of each other: cannot tell."""
  parts, verdicts = [], {}
  for n, p in named:
    i30, i50 = p["ratios"].index(0.3), p["ratios"].index(0.5)
    sal, adv = p["saliency"], p["adversarial"]
    parts.append(f"{n}: saliency {sal[i30]:.3g} / {sal[i50]:.3g}, "
                 f"adversarial {adv[i30]:.3g} / {adv[i50]:.3g}")
    ratio = min(adv[i30] / max(sal[i30], 1e-12),
                adv[i50] / max(sal[i50], 1e-12))
    verdicts[n] = (REPRODUCED if ratio > 1.1 else CANNOT if ratio > 0.9
                   else DISAGREES)
  return "; ".join(parts), ("KL at 30 % / 50 % removed; within 10 %: "
                            "cannot tell"), _per_subject(verdicts)


def _appendix_a(s, cfg):
  cum = s["cumulative"]
  ours = (f"{cum['tokens_for_0.9_of_mean_curve']} tokens (mean curve "
          "reaches 0.9), per-position median "
          f"{cum['tokens_for_0.9_median']:.0f}; V = {cum['V']}, "
          f"{cum['positions']} positions")
  return ours, "the probe model (V = 4096, not GPT-2's 50257)", (
      f"{CANNOT}: another vocabulary and text than the paper's")


CLAIMS = (
    Claim("001", "Table 1", "m* for 22 models (closed forms)", "table1",
          _table1),
    Claim("001", "Fig. 5 / App. B", "bound 0.99 at m = 26 (Table 1; caption "
          "27), slightly under the simulation", "figure5", _figure5),
    Claim("001", "Cor. 3", "every m-subset of N tokens selectable at d = "
          "2m + 1 (sign-rank construction)", "signrank", _signrank),
    Claim("001", "Fig. 1 (top)", "random 50257x768: all subsets up to "
          "m ~ 95 (logits), ~85 (probs)", "figure1", _figure1),
    Claim("001", "Fig. 1 (bottom)", "random TinyLlama- and Llama-2-size "
          "heads (32000 x 2048, x 4096): all subsets up to m ~ 400, ~1070",
          "figure1", _figure1_wide),
    Claim("001", "Fig. 3", "m ~ d/5 for d << N (N = 32000)", "figure3",
          _figure3),
    Claim("001", "App. D / Fig. 6", "natural and uniform targets: little "
          "difference", "natural", _natural),
    Claim("001", "Fig. 1 (solid vs dotted)", "trained heads select like "
          "random ones of their size", "trained", _trained),
    Claim("001", "App. A / Fig. 4", "~200 tokens for 0.9 of the mass "
          "(GPT-2, news)", "appendices", _appendix_a),
    Claim("001", "App. A on real LLMs", "~200 tokens for 0.9 (GPT-2)",
          "real_llm", _appendix_a_real),
    Claim("001", "App. E on real LLMs", "trained rows vary more in norm "
          "than a random matrix's", "real_llm", _rowstats_real),
    Claim("002", "Fig. 6, eq. (10)", "95-99 % of the logit gradient's norm "
          "destroyed", "gradient", _gradient),
    Claim("002", "Fig. 6 on real LLMs", "95-99 %", "real_llm",
          _gradient_real),
    Claim("002", "Fig. 2", "logit gradients near full rank, min(T, V), "
          "while the head passes rank D", "gradient", _long_rank),
    Claim("002", "Fig. 1 (§3.1)", "D = 4096 reaches D = 32's final loss "
          "in 16x fewer tokens", "lowrank", _lowrank),
    Claim("002", "Fig. 14 (§3.2)", "SpamLang: low-rank loss rises with V, "
          "full rank learns", "spamlang", _spamlang),
    Claim("003", "Table 1", "adj. R^2 of -log p on W: 0.892 (GPT-2)",
          "encoding", _encoding),
    Claim("003", "Table 1 on real LLMs", "0.86-0.89 (GPT-2 0.892)",
          "real_llm", _encoding_real),
    Claim("003", "Fig. 7 (§5)", "frequency encoded before the loss "
          "converges", "encoding", _frequency),
    Claim("004", "Fig. 5.1", "Model 8 < Model 7 < Models 1-6 in loss at "
          "equal steps", "training", _thesis),
)


# Claims read from several sections: (paper, where, says, sections, read
# of the list of (name, numbers)), numbers under `key` of each.
MULTI = (
    ("003", "Fig. 3", "the overwhelming majority of W's dimensions poorly "
     "correlated with log p", "encoding", _sparsity),
    ("003", "Table 1 (input embeddings)", "adj. R^2 0.66-0.81 on the input "
     "embeddings of untied models", "encoding", _input_embeddings),
    ("003", "Fig. 6", "removing the least salient dimensions first costs "
     "less than the most salient first", "prune", _removal),
)


def rows(sections: dict, config: dict) -> list[dict]:
  """The ledger of a report's sections (results.json's 'sections') under
  its config (results.json's 'config')."""
  out = []
  for c in CLAIMS:
    row = {"paper": f"seed {c.paper}", "where": c.where, "paper_says": c.says}
    if c.section not in sections:
      row.update(ours="-", scale="-", verdict=f"{NOT_RUN} (section "
                 f"`{c.section}` not in this report)")
    else:
      try:
        ours, scale, verdict = c.read(sections[c.section], config)
      except (KeyError, IndexError, TypeError) as e:
        ours, scale, verdict = "-", "-", (
            f"{NOT_RUN}: section `{c.section}` lacks {e} (older version)")
      row.update(ours=ours, scale=scale, verdict=verdict)
    out.append(row)
  for paper, where, says, key, read in MULTI:
    row = {"paper": f"seed {paper}", "where": where, "paper_says": says}
    try:
      named = _probe_and_real(sections, key)
      ours, scale, verdict = read(named) if named else (
          "-", "-", f"{NOT_RUN} (sections `encoding`, `real_llm` not in "
          "this report)")
    except (KeyError, IndexError, TypeError, ValueError) as e:
      ours, scale, verdict = "-", "-", f"{NOT_RUN}: lacks {e} (older version)"
    out.append(dict(row, ours=ours, scale=scale, verdict=verdict))
  return out


def markdown(ledger_rows: list[dict], scale: str) -> str:
  """The ledger as the report's opening table."""
  from train.report.section import table  # pylint: disable=g-import-not-at-top
  counts = {}
  for r in ledger_rows:
    key = re.split(r"[:;(]| on ", r["verdict"])[0].strip()
    counts[key] = counts.get(key, 0) + 1
  return ("## Claims ledger\n\nEvery row computed from this report's numbers "
          f"(scale `{scale}`): " + ", ".join(f"{v} {k}" for k, v in
                                              counts.items()) + ".\n\n"
          + table(ledger_rows, ["paper", "where", "paper_says", "ours",
                                "scale", "verdict"]))


def from_folder(outdir: str) -> tuple[list[dict], str]:
  """(rows, scale) of the report in `outdir`; a folder without a report's
  results.json, or one written before the ledger, is one error naming the
  folder and what is missing."""
  import os  # pylint: disable=g-import-not-at-top
  from bottleneck.io import hf  # pylint: disable=g-import-not-at-top
  path = os.path.join(outdir, "results.json")
  if not os.path.isfile(path):
    raise ValueError(f"`outdir` {outdir!r} holds no results.json (run "
                     "python -m train.report --outdir=... first).")
  saved = hf.read_json(path, "outdir")
  if not isinstance(saved, dict) or not isinstance(saved.get("sections"),
                                                   dict):
    raise ValueError(f"`outdir` {path!r} is not a report's results.json "
                     "(no 'sections' object).")
  if saved.get("version", 1) < RESULTS_VERSION:
    raise ValueError(f"`outdir` {path!r} was written by an older version "
                     f"(no 'version' >= {RESULTS_VERSION}): its sections "
                     "predate the ledger; run the report again.")
  config = saved.get("config") or {}
  return rows(saved["sections"], config), config.get("scale", "?")


def main(argv):
  """Prints the ledger of --outdir's report."""
  del argv
  ledger_rows, scale = from_folder(flags.FLAGS.outdir)
  print(markdown(ledger_rows, scale))


if __name__ == "__main__":
  from bottleneck.io import cli  # pylint: disable=g-import-not-at-top
  cli.run_binary(main, lambda: flags.DEFINE_string(
      "outdir", "report", "A report folder (its results.json)."))
