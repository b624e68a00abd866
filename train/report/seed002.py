"""Report section for seed 002 (Godey & Artzi): the gradient bottleneck.

eq. (10), App. D's cosine and Figs. 2, 7, 8 on the report's probe model (and
an HF folder, probes.hf_dir), and their ledger rows. §3.1's low-rank heads
(Fig. 1) are lowrank.py, §3.2's SpamLang (Fig. 14) spamlang.py.
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from bottleneck import gradient as bottleneck_gradient
from bottleneck import logit_gradients
from train.probes import forward, gradient, spec, subjects
from train.report import claim, intervals
from train.report.claim import (DISAGREES, REPRODUCED, TOO_SMALL, Row,
                                Unread, num, records)
from train.report.section import (Section, figure, probe_subject, table,
                                  text_pass)

PAPER_DESTROYED = 0.95  # eq. (10) / Fig. 6: 95-99 % of the norm destroyed.
# App. D: "most values are comprised between 0.1 and 0.3" (§3.3's summary
# says 0.1-0.2; App. D's own band is the one tested).
PAPER_COSINE = (0.1, 0.3)
FIG8_BATCH = 1024  # Fig. 8: batches of 1,024 tokens.
FIG8_FRACTION = 0.01  # The logit move read: 1 % of the logits' norm.
FIG8_ORDERS = 10.0  # "Orders of magnitude" read as at least x10.
NEAR_FULL = 0.99  # Fig. 2: rank >= 0.99 min(T, V) at the largest T.
TWIN_DRAWS = inspect.signature(
    logit_gradients.subspace_ratios).parameters["draws"].default
DEVIATIONS = ("subject: the report's probe model (a width-64 GPT trained on "
              "Shakespeare, V = 4096), not the paper's GPT-2 / Pythia / "
              "Llama 3 / Qwen3", "text: Shakespeare, not FineWeb")


def _subjects(config, outdir):
  out = [probe_subject(config, outdir)]
  if config.probes.hf_dir:
    out.append(subjects.load_subject(hf_dir=config.probes.hf_dir))
  return out


def batch_efficiency(subject, pass_, batch: int = FIG8_BATCH,
                     fraction: float = FIG8_FRACTION, seed: int = 0) -> dict:
  """Fig. 8 per batch of `batch` tokens of a Pass (a quarter of its tokens
  where fewer than two batches fit): the loss decrease after moving the
  logits by `fraction` of their norm along the logit gradient and along
  grad_H W^T (bottleneck.gradient.update_efficiency); the same with a
  Gaussian head of W's shape on the same hidden states (`twin_*`)."""
  tokens = pass_.tokens
  batch = batch if tokens >= 2 * batch else max(1, tokens // 4)
  w, b = forward.device_head(subject)
  twin = gaussian_twin(np.asarray(w), seed)
  out = {"tokens_per_batch": batch, "fraction": fraction}
  for key, head, bias in (("", w, b), ("twin_", twin, None)):
    logit, hidden = [], []
    for i in range(tokens // batch):
      cut = slice(i * batch, (i + 1) * batch)
      eff = bottleneck_gradient.update_efficiency(
          pass_.h[cut], head, bias, pass_.targets[cut], [fraction])
      logit.append(eff["loss0"] - eff["logit_gradient"][0])
      hidden.append(eff["loss0"] - eff["hidden_gradient"][0])
    out.update({f"{key}logit_decrease": logit,
                f"{key}hidden_decrease": hidden})
  return out


def gaussian_twin(w_vxd, seed: int = 0) -> np.ndarray:
  """A Gaussian head of W's shape and Frobenius norm (no bias): Fig. 8's
  control, the ratio a head of that rank gives without training."""
  g = np.random.default_rng(seed).standard_normal(w_vxd.shape,
                                                 dtype=np.float32)
  g *= np.float32(np.linalg.norm(w_vxd) / np.linalg.norm(g))
  return g


def gradient_bottleneck(config, outdir: str) -> Section:
  """Seed 002: eq. (10), App. D cosine, Figs. 2, 7, 8 on trained heads."""
  c = config.probes
  rows, figs, numbers = [], [], {}
  for subject in _subjects(config, outdir):
    pass_ = text_pass(subject, "", c.windows, config.seed, gradient_sums=True)
    out, figures = gradient.gradient_probe(subject, pass_,
                                           rank_tokens=c.rank_tokens)
    out.update(efficiency_batches=batch_efficiency(subject, pass_,
                                                   seed=config.seed))
    numbers[subject.name] = out
    rows.append({"model": subject.name, "V": subject.cfg.vocab_size,
                 "D": out["D"], "D_over_V": out["D_over_V"],
                 "tokens": out["tokens"], "norm_ratio": out["norm_ratio"],
                 "squared_ratio": out["squared_ratio"],
                 "mean_cosine": out["mean_cosine"]})
    for name, fig in figures.items():
      figs.append(figure(fig, outdir, f"{name}_{subject.name}.png",
                         f"{subject.name}: {_CAPTIONS[name]}"))
  eff = numbers[rows[0]["model"]]["efficiency"]
  body = "\n\n".join([
      opening(numbers),
      "Fraction of the logit-gradient norm in ker(W^T), destroyed before "
      "it reaches the backbone (eq. 10). `norm_ratio` is eq. 10 itself, "
      "|P_ker G|_F / |G|_F: **the paper's 95-99% is this norm ratio**; "
      "`squared_ratio` is its square (the share of squared norm). "
      "`mean_cosine`: average cos(g_t, P_W g_t) (paper App. D: most values "
      "0.1-0.3; §3.3: 0.1-0.2).",
      table(rows),
      "**Against dimension counting**: " + " ".join(
          f"{name}: {gradient.destroyed_reading(out)}"
          for name, out in numbers.items()),
      *[f"**Fig. 2 past T = V** ({name}): " + gradient.long_rank_reading(
          out["rank_vs_tokens_long"], out["V"])
        for name, out in numbers.items() if "rank_vs_tokens_long" in out],
      f"Update efficiency (Fig. 8), loss change after moving the logits by "
      f"1% of their norm: along the logit gradient "
      f"{eff['logit_gradient'][2] - eff['loss0']:+.4f}, along grad_H W^T "
      f"{eff['hidden_gradient'][2] - eff['loss0']:+.4f}.", *figs])
  return Section("Seed 002: the LM head destroys most of the gradient", body,
                 numbers)


_CAPTIONS = spec.captions(gradient.GRADIENT)


def opening(numbers) -> str:
  """The section's first lines: its ledger rows' verdicts (the readers
  below, on the same numbers), so that the two cannot differ."""
  lines = []
  for c in CLAIMS:
    try:
      got = c.read({"gradient": numbers}, {})
    except (Unread, KeyError, TypeError, ValueError) as e:
      lines.append(f"- **{c.where}**: not run ({e})")
      continue
    for r in got if isinstance(got, list) else [got]:
      who = f" ({r.subject})" if r.subject else ""
      check = " (a consistency check)" if r.can_disagree is False else ""
      said = r.why if r.verdict == claim.NOT_RUN else r.ours
      lines.append(f"- **{c.where}**{who}: {r.verdict}{check}: {said}")
  return "**The ledger's rows of this section**:\n\n" + "\n".join(lines)


# The claims ledger's rows (train/report/ledger.py).


def _values(obj, key: str) -> list[float]:
  """obj[key] as a non-empty list of finite numbers (claim.finite each)."""
  out = claim.get(obj, key)
  if not isinstance(out, list):
    raise TypeError(f"`{key}` is a {type(out).__name__}, not a list")
  if not out:
    raise Unread(f"`{key}` is empty")
  return [claim.finite(x, f"{key}[{i}]") for i, x in enumerate(out)]


def _as(name: str, row: Row) -> Row:
  """`row` of subject `name`: a head other than the probe model's
  (probes.hf_dir) has its own subject deviation."""
  if name != "probe model":
    row = row._replace(deviations=(
        f"subject: {name} (probes.hf_dir), not the paper's models",)
                       + row.deviations[1:])
  return row._replace(subject=name)


def _named(s) -> list[tuple[str, dict]]:
  """(subject label, numbers) of every probed head: the report's probe
  model is 'probe model', another (probes.hf_dir) keeps its name."""
  out = [(("probe model" if n.startswith("probe_") else n), r)
         for n, r in s.items() if isinstance(r, dict) and "norm_ratio" in r]
  if not out:
    raise Unread("no subject has `norm_ratio`")
  return out


def twin_interval(twin: dict, draws: int = TWIN_DRAWS) -> tuple[float, float]:
  """(gap, half): the trained head's eq. (10) ratio minus its Gaussian
  twins' mean on the same gradients, and the half-width of the twins' 95 %
  prediction interval for one more Gaussian head (Student's t with draws -
  1 degrees of freedom, sd sqrt(1 + 1 / draws))."""
  from scipy import stats  # pylint: disable=g-import-not-at-top
  for k in ("trained", "random", "random_std"):
    num(twin, k, at="random_head")
  half = (stats.t.ppf(0.975, draws - 1) * twin["random_std"]
          * math.sqrt(1 + 1 / draws))
  return twin["trained"] - twin["random"], half


def ratio_interval(r: dict) -> tuple[float, float, str] | None:
  """(lo, hi, what) of eq. (10)'s ratio: a 95 % Student's t interval over
  the text windows where the numbers have per-window ratios
  (`ratio_windows`, two or more); else the ratio +- its Gaussian twins'
  95 % prediction half-width (`twin_interval`: how far one Gaussian head's
  ratio moves between draws on the same gradients); else None."""
  ratio = num(r, "norm_ratio")
  if len(r.get("ratio_windows") or ()) >= 2:
    _, lo, hi = intervals.t_interval(_values(r, "ratio_windows"))
    return lo, hi, "95 % t interval over windows"
  if r.get("random_head"):
    half = twin_interval(r["random_head"])[1]
    return (ratio - half, ratio + half,
            "the ratio +- its Gaussian twins' 95 % prediction half-width")
  return None


def destroyed_row(r: dict) -> Row:
  """Fig. 6 / eq. (10) on one head (the probe model's or a real LLM's
  numbers: norm_ratio, D_over_V, optional ratio_windows, random_head,
  tokens). Two tests: the ratio against 0.95 with its interval
  (`ratio_interval`, claim.side: under it disagrees, straddling too small
  to speak), and the trained head against Gaussian heads of its shape on
  the same gradients (`random_head`; clear below them disagrees: it
  passes more of the gradient than its rank forces). sqrt(1 - D/V) of a
  random direction's norm lies outside any D-dimensional subspace, so
  where it is at least 0.95 (D/V < 0.0975) the 0.95 bound alone is a
  consistency check: with no interval at all such a head is one (ratio
  at least 0.95), any other too small to speak."""
  ratio, dv = num(r, "norm_ratio"), num(r, "D_over_V")
  counted = math.sqrt(1 - dv)
  forced = counted >= PAPER_DESTROYED
  ours = (f"{ratio:.4f} of the norm destroyed over {r.get('tokens', '?')} "
          f"positions; a random direction loses sqrt(1 - D/V) = "
          f"{counted:.4f}")
  stat = ("eq. (10) |P_ker G|_F / |G|_F; the paper's side: its interval "
          "at or above 0.95 and no less than Gaussian heads of the same "
          "shape on the same gradients")
  n = f"{r.get('tokens', '?')} positions"
  got = ratio_interval(r)
  if got is None:
    if forced and ratio >= PAPER_DESTROYED:
      return Row(REPRODUCED, ours + " (no Gaussian twin nor windows: the "
                 "0.95 bound forced by its rank, a consistency check)", stat,
                 n, "none: no Gaussian twin nor per-window ratios",
                 deviations=DEVIATIONS, can_disagree=False)
    return Row(TOO_SMALL, ours, stat, n, "none: no Gaussian twin nor "
               "per-window ratios", why=(
                   f"the ratio {ratio:.4f} against {PAPER_DESTROYED} with no "
                   "interval: per-window ratios or Gaussian twins "
                   "(gradient.twins) would decide"), deviations=DEVIATIONS)
  lo, hi, what = got
  unc = claim.bracket(lo, hi, ".4f", what)
  word = claim.side(lo, hi, PAPER_DESTROYED)
  if word == DISAGREES:
    return Row(DISAGREES, ours + f", clear under {PAPER_DESTROYED}", stat,
               n, unc, deviations=DEVIATIONS)
  twin = r.get("random_head")
  if twin:
    gap, half = twin_interval(twin)
    ours += (f"; on the first {twin.get('tokens', '?')} positions the "
             f"trained head {twin['trained']:.4f}, its Gaussian twins "
             f"{twin['random']:.4f} (gap {gap:+.4f}, their 95 % prediction "
             f"half-width {half:.4f})")
    n += (f"; {TWIN_DRAWS} Gaussian heads on the first "
          f"{twin.get('tokens', '?')}")
    if gap < -half:
      return Row(DISAGREES, ours + ": the trained head passes more of the "
                 "gradient than a Gaussian head of its rank", stat, n, unc,
                 deviations=DEVIATIONS)
  if word == TOO_SMALL:
    return Row(TOO_SMALL, ours, stat, n, unc, why=(
        f"the ratio's interval {lo:.4f} .. {hi:.4f} straddles "
        f"{PAPER_DESTROYED}: more positions or windows (gradient.twins, "
        "probes.windows) would decide"), deviations=DEVIATIONS)
  if forced:
    ours += (f"; at D/V = {dv:.4g} the 0.95 bound alone is a consistency "
             "check (any head of this rank loses sqrt(1 - D/V) of a random "
             "direction's norm)")
  said = (": within its Gaussian twins' spread (neither clearly less nor "
          "more destroyed than by a random head of its rank)" if twin else
          f": at or above {PAPER_DESTROYED}")
  return Row(REPRODUCED, ours + said, stat, n, unc, deviations=DEVIATIONS,
             can_disagree=False if forced and not twin else None)


def read_gradient(s, cfg):
  """Fig. 6, eq. (10): one row per probed head (`destroyed_row`)."""
  del cfg
  return [_as(n, destroyed_row(r)) for n, r in _named(s)]


def cosine_row(r: dict) -> Row:
  """App. D: the mean cos(g_t, P_W g_t) with a Student's t interval over
  the text windows, against App. D's 0.1-0.3: inside it the paper's
  side, outside it the other, straddling an edge too small to speak. Where
  sqrt(D/V), a random head's cosine, already lies in 0.1-0.3 a row inside
  it is a consistency check (cos = sqrt(1 - r^2) of eq. (10)'s r)."""
  lo_p, hi_p = PAPER_COSINE
  wins = _values(r, "cosine_windows")
  if len(wins) < 2:
    raise Unread("fewer than two windows: no spread to read")
  mean, lo, hi = intervals.t_interval(wins)
  counted = math.sqrt(num(r, "D_over_V"))
  twin = r.get("random_head")
  ours = (f"mean cos {num(r, 'mean_cosine'):.4f} (window mean {mean:.4f}); "
          f"a random head: sqrt(D/V) = {counted:.4f}")
  if twin:
    ours += (f"; |P_W G|_F / |G|_F trained "
             f"{math.sqrt(max(1 - twin['trained'] ** 2, 0)):.4f}, Gaussian "
             f"twins {math.sqrt(max(1 - twin['random'] ** 2, 0)):.4f}")
  stat = ("mean over positions of cos(g, P_W g); the paper's side: in "
          f"{lo_p}-{hi_p} (App. D's Fig. 11: 'most values between 0.1 and 0.3'; "
          "§3.3 says 0.1-0.2)")
  n = f"{len(wins)} windows, {r.get('tokens', '?')} positions"
  unc = claim.bracket(lo, hi, ".4f", "95 % t interval over windows")
  inside, outside = lo >= lo_p and hi <= hi_p, hi < lo_p or lo > hi_p
  word = REPRODUCED if inside else DISAGREES if outside else TOO_SMALL
  why = "" if word != TOO_SMALL else (
      f"the interval straddles {lo_p if lo < lo_p else hi_p}: more windows "
      "(probes.windows) would decide")
  check = lo_p <= counted <= hi_p and word != DISAGREES
  return Row(word, ours, stat, n, unc, why=why, deviations=DEVIATIONS,
             can_disagree=False if check else None)


def read_cosine(s, cfg):
  """App. D: one row per probed head (`cosine_row`)."""
  del cfg
  return [_as(n, cosine_row(r)) for n, r in _named(s)]


def efficiency_row(r: dict) -> Row:
  """Fig. 8: per batch, the loss decrease along the logit gradient over the
  decrease along grad_H W^T for the same logit move; the geometric mean
  over batches with a Student's t interval of log10, against "orders of
  magnitude" (>= x10). A decrease of 0 or less along either (its ratio's
  log undefined) is claim.Unread: the row is not run, naming the batch.
  Dimension counting (a random head, first order): sqrt(V / D)."""
  e = claim.mapping(claim.get(r, "efficiency_batches"), "efficiency_batches")
  logit, hidden = _values(e, "logit_decrease"), _values(e, "hidden_decrease")
  if len(logit) != len(hidden):
    raise Unread(f"Fig. 8: {len(logit)} logit-gradient batches against "
                 f"{len(hidden)} hidden-gradient ones")
  if len(logit) < 2:
    raise Unread("fewer than two Fig. 8 batches")
  for i, (g, h) in enumerate(zip(logit, hidden)):
    if g <= 0 or h <= 0:
      raise Unread(
          f"Fig. 8 batch {i}: a loss decrease of {g if g <= 0 else h:.3g} "
          f"along {'the logit gradient' if g <= 0 else 'grad_H W^T'} (not "
          "positive: the ratio's log is undefined; a smaller move "
          "(probes' Fig. 8 fraction) would measure it)")
  logs = [math.log10(g) - math.log10(h) for g, h in zip(logit, hidden)]
  mean, lo, hi = intervals.t_interval(logs)
  word = claim.side(lo, hi, math.log10(FIG8_ORDERS))
  counted = 1 / math.sqrt(num(r, "D_over_V"))
  ours = (f"the logit gradient lowers the loss x{_times(mean)} more than "
          f"grad_H W^T for a move of {e['fraction']:.0%} of the logits' "
          f"norm (geometric mean over batches); dimension counting "
          f"sqrt(V/D) = {counted:.2f}" + twin_efficiency(e, logs))
  return Row(word, ours, "loss decrease along grad_L over along grad_H W^T "
             f"at {e['fraction']:.0%} of |L|_F; the paper's side: >= "
             f"x{FIG8_ORDERS:g} ('orders of magnitude')",
             f"{len(logs)} batches of {e['tokens_per_batch']} tokens",
             f"95 % t interval over batches (geometric) x{_times(lo)} .. "
             f"x{_times(hi)}",
             why="" if word != TOO_SMALL else (
                 "the interval straddles x10: more batches (probes.windows) "
                 "would decide"),
             deviations=DEVIATIONS + (
                 "the logit move at which the paper reads 'orders of "
                 f"magnitude' is not stated: read at {e['fraction']:.0%} "
                 "(the ratio falls as the move grows: the section's curve)",
                 f"threshold inferred: 'orders of magnitude' read as >= "
                 f"x{FIG8_ORDERS:g} (one order; two would need x100)") + ((
                     "the Gaussian-head control is ours (the paper compares "
                     "with no random head); its logits and step are its "
                     "own, one draw",) if "twin_logit_decrease" in e else ()))


def twin_efficiency(e: dict, logs: list[float]) -> str:
  """'; a Gaussian head of its shape: xR, the trained head xQ of it (t
  interval over batches, paired)' from Fig. 8's `twin_*` decreases; ''
  where a report predates them; a note naming why where they cannot be
  read (the trained head's verdict stands either way)."""
  if "twin_logit_decrease" not in e and "twin_hidden_decrease" not in e:
    return ""
  note = "; the Gaussian twin's ratio is not measurable ({})"
  try:
    g = _values(e, "twin_logit_decrease")
    h = _values(e, "twin_hidden_decrease")
  except (Unread, TypeError, ValueError, KeyError) as x:
    return note.format(f"its numbers: {x}")
  if len(g) != len(logs) or len(h) != len(logs):
    return note.format(f"{len(g)} and {len(h)} twin batches against "
                       f"{len(logs)}")
  if min(g + h) <= 0:
    return note.format("a non-positive decrease")
  twin = [math.log10(a) - math.log10(b) for a, b in zip(g, h)]
  _, lo, hi = intervals.t_interval([x - y for x, y in zip(logs, twin)])
  return (f"; a Gaussian head of its shape and norm on the same hidden "
          f"states: x{_times(sum(twin) / len(twin))}, the trained head's "
          f"ratio x{_times(lo)} .. x{_times(hi)} of it (95 % t interval "
          "over batches, paired; one twin draw)")


def _times(log10: float) -> str:
  """10 ** log10 as '12.34', or '1e+40' past 1e15 (no overflow)."""
  return f"{10 ** log10:.2f}" if abs(log10) < 15 else f"1e{log10:+.0f}"


def read_efficiency(s, cfg):
  """Fig. 8: one row per probed head (`efficiency_row`); a head whose
  numbers cannot be read (a non-positive decrease) is a 'not run' row of
  its own, the others' rows kept."""
  del cfg
  return [_as(n, _or_not_run(efficiency_row, r)) for n, r in _named(s)]


def _or_not_run(read, r: dict) -> Row:
  """read(r), or a 'not run' Row with claim.Unread's reason."""
  try:
    return read(r)
  except Unread as e:
    return Row(claim.NOT_RUN, "-", "-", "-", "-", why=str(e))


def read_long_rank(s, cfg):
  """Fig. 2: the logit gradients' rank near min(T, V) at every T measured
  (past V where probes.rank_tokens reaches it; else the first positions'
  `rank_vs_tokens`): the lowest share of min(T, V) against NEAR_FULL."""
  del cfg
  name, r = _named(s)[0]
  key = ("rank_vs_tokens_long" if r.get("rank_vs_tokens_long") else
         "rank_vs_tokens")
  long = records(r, key, need=("tokens", "rank"), at=name)
  v = num(r, "V", at=name)
  shares = [(x["tokens"], x["rank"] / min(x["tokens"], v)) for x in long]
  last, share = long[-1], shares[-1][1]
  low = min(shares, key=lambda x: x[1])
  ours = (", ".join(f"T = {x['tokens']}: {x['rank']}" for x in long)
          + f"; lowest {low[1]:.1%} of min(T, V), at T = {low[0]} "
          f"({share:.1%} at the largest T, {last['tokens']})")
  word = REPRODUCED if low[1] >= NEAR_FULL else DISAGREES
  return Row(word, ours, f"rank of the [T, V] logit gradients / min(T, V), "
             f"its lowest over the T measured; the paper's side: >= "
             f"{NEAR_FULL} at every T",
             f"T = {', '.join(str(t) for t, _ in shares)} positions, V = "
             f"{v:g}",
             "none: an exact count at the rank routine's tolerance, on one "
             "draw of positions", deviations=DEVIATIONS + (
                 f"threshold inferred: 'near full-rank' read as >= "
                 f"{NEAR_FULL} of min(T, V)",
                 "rank read as the count of |diag R| > 1e-6 in a QR of the "
                 "float64 gradients (absolute, as the paper states none): a "
                 "looser tolerance lowers it, a tighter one raises it",) + (
                 ("T < V: the rank past V untested",)
                 if last["tokens"] < v else ()), subject=name)


CLAIMS = (
    claim.on("002", "Fig. 6, eq. (10)", "95-99 % of the logit gradient's "
             "norm destroyed", "gradient", read_gradient),
    claim.on("002", "App. D / Fig. 11", "projected and original logit "
             "gradients mildly aligned: cosine mostly 0.1-0.3", "gradient",
             read_cosine),
    claim.on("002", "Fig. 8 (§3.4)", "updating H along its gradient is "
             "orders of magnitude less efficient than updating the logits",
             "gradient", read_efficiency),
    claim.on("002", "Fig. 2", "logit gradients near full rank, min(T, V), "
             "while the head passes rank D", "gradient", read_long_rank),
)
