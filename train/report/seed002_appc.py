"""Ledger rows of seed 002 App. C on the real LLMs (train/probes/batches.py,
run by the real_llm section): Fig. 9's contexts and tokens per batch, Fig.
10's next-token entropy. Each a test per model (claim.Row)."""

from __future__ import annotations

from bottleneck import stats
from train.report import claim
from train.report.claim import (DISAGREES, REPRODUCED, TOO_SMALL, Row, num,
                                real)

# Thresholds inferred (the paper gives none; each row's deviations say so):
NEARLY_ALL = 0.95  # Fig. 9 "nearly all observed contexts are unique".
MOST = 0.5  # Fig. 9 "most tokens appear at least once".
# "batches of usual sizes (up to a few million tokens)": a text shorter
# than this cannot show the share such a batch reaches.
FEW_MILLION = 2_000_000
NON_NEGLIGIBLE = 0.01  # Fig. 10 "a non-negligible number of contexts".


PAPER_TOKENIZER = "smollm2"  # Fig. 9: "We use the SmolLM2 tokenizer".


def _deviations(name: str, m: dict, paper: str | None
                ) -> tuple[str, ...]:
  """Subject and text against the paper's: Fig. 9's tokenizer (SmolLM2's:
  `paper` None) or Fig. 10's model (`paper`), Fineweb documents."""
  s = claim.mapping(claim.get(m, "subject"), f"{name}.subject")
  p = claim.mapping(claim.get(m, "pass"), f"{name}.pass")
  text = (f"text: {p.get('text') or 'shakespeare'} (the paper: Fineweb "
          "documents; one author's text has a narrower vocabulary than the "
          "web)")
  if paper is None:
    if name == PAPER_TOKENIZER:
      return (text,)
    return (f"tokenizer: {name}'s (V = {s['V']}), not SmolLM2's", text)
  return (f"subject: {name} (V = {s['V']}), not {paper}", text)


def _curve(b: dict, at: str) -> list[dict]:
  got = claim.records(b, "curve", need=("tokens", "seen_once", "C_uu",
                                        "distinct_tokens"), at=at)
  if not got:
    raise claim.Unread(f"`{at}.curve` is empty")
  for i, r in enumerate(got):
    if not 0 <= r["seen_once"] <= r["tokens"]:
      raise ValueError(f"`{at}.curve[{i}].seen_once` = {r['seen_once']}: "
                       f"outside [0, {r['tokens']}]")
  return got


def contexts_row(name, b, m) -> Row:
  """Fig. 9 (a): the share of a batch's positions whose context (the
  window's prefix) occurs once in it, at the largest batch, against
  NEARLY_ALL; exact counts, the spread over batch sizes beside them."""
  at = f"{name}.batches"
  curve = _curve(b, at)
  top = curve[-1]
  share = top["seen_once"] / top["tokens"]
  shares = [r["seen_once"] / r["tokens"] for r in curve]
  verdict = REPRODUCED if share >= NEARLY_ALL else DISAGREES
  return Row(
      verdict, f"{share:.1%} of {top['tokens']} positions have a context "
      f"seen once in the batch (from {shares[0]:.1%} at {curve[0]['tokens']}"
      " tokens)", "share of a batch's positions whose context occurs once "
      f"in it, at the largest batch; reproduced at {NEARLY_ALL:.0%} or more",
      f"{len(curve)} nested batches of windows of {num(b, 'window', at=at):g}"
      f" tokens, up to {top['tokens']}",
      "none: exact counts over one draw of windows; over the batch sizes "
      f"the share ranges {min(shares):.3f} .. {max(shares):.3f}",
      deviations=_deviations(name, m, None) + (
          "context read as the window's prefix up to the position "
          "(documents are windows of the text)",
          f"threshold inferred: 'nearly all' read as >= {NEARLY_ALL:.0%}"))


def tokens_row(name, b, m) -> Row:
  """Fig. 9 (b): the share of the vocabulary a batch holds, at the largest
  batch, against MOST; short of MOST on a text under FEW_MILLION tokens
  it is too small to speak (a larger batch could still reach it)."""
  at = f"{name}.batches"
  curve = _curve(b, at)
  top = curve[-1]
  v = num(b, "V", at=at)
  share = top["distinct_tokens"] / v
  verdict = (REPRODUCED if share > MOST else DISAGREES
             if top["tokens"] >= FEW_MILLION else TOO_SMALL)
  why = "" if verdict != TOO_SMALL else (
      f"the text gives batches of at most {top['tokens']} tokens, under "
      f"the paper's 'few million' ({FEW_MILLION}): a longer text "
      "(real_llm.text) would decide")
  return Row(
      verdict, f"{top['distinct_tokens']} distinct tokens = {share:.1%} of "
      f"V = {int(v)} in a batch of {top['tokens']} tokens; Prop. 2.5's "
      f"|C^uu| = {top['C_uu']} ({top['C_uu'] / v:.1%} of V)",
      "share of the vocabulary a batch holds, at the largest batch "
      f"(<= {FEW_MILLION} tokens or the whole text); reproduced above "
      f"{MOST:.0%}", f"{top['tokens']} tokens of a "
      f"{num(b, 'text_tokens', at=at):g}-token text",
      "none: an exact count over one draw of windows", why=why,
      deviations=_deviations(name, m, None) + (
          f"threshold inferred: 'most tokens' read as over {MOST:.0%} of V",))


def entropy_row(name, b, m) -> Row:
  """Fig. 10: the share of positions whose next-token entropy exceeds 5
  nats, its Clopper-Pearson interval over positions, against
  NON_NEGLIGIBLE."""
  at = f"{name}.batches.entropy"
  e = claim.mapping(claim.get(b, "entropy"), at)
  n = int(num(e, "positions", at=at))
  k = int(num(e, "over_high", at=at))
  if n < 1 or not 0 <= k <= n:
    raise ValueError(f"`{at}`: over_high = {k} of positions = {n}: expected "
                     "0 <= over_high <= positions, positions >= 1")
  high = num(e, "high", at=at)
  lo, hi = stats.binomial_interval(k, n)
  verdict = claim.side(lo, hi, NON_NEGLIGIBLE)
  why = "" if verdict != TOO_SMALL else (
      f"the interval straddles {NON_NEGLIGIBLE:.0%}: more positions "
      "(real_llm.cumulative_positions) would decide")
  return Row(
      verdict, f"{k} of {n} positions ({k / n:.1%}) have a next-token "
      f"entropy above {high:g} nats (median {num(e, 'median', at=at):.2f}, "
      f"90th percentile {num(e, 'q90', at=at):.2f}, largest "
      f"{num(e, 'max', at=at):.2f}; ln V = {num(e, 'ln_V', at=at):.2f})",
      f"share of positions with next-token entropy > {high:g} nats; "
      f"reproduced when its interval lies at or above {NON_NEGLIGIBLE:.0%}",
      f"{n} positions", claim.bracket(lo, hi) + " over positions (positions"
      " of one text treated as independent: too narrow if they cluster)",
      why=why, deviations=_deviations(name, m, "Llama-3.1-8B") + (
          "unit inferred: the figure's 5 read as nats (in bits, 5 is 3.47 "
          "nats: more positions would pass)",
          "threshold inferred: 'non-negligible' read as at least "
          f"{NON_NEGLIGIBLE:.0%} of positions"))


def _rows(read):
  def rows(s, cfg):
    del cfg
    models = claim.mapping(claim.get(s, "models"), "models")
    return [read(n, x, models[n])._replace(subject=n)
            for n, x in real(s, "batches")]
  return rows


CLAIMS = (
    claim.on("002", "App. C / Fig. 9 (contexts)", "nearly all observed "
             "contexts are unique", "real_llm", _rows(contexts_row)),
    claim.on("002", "App. C / Fig. 9 (tokens)", "most tokens appear at "
             "least once for batches of usual sizes (up to a few million "
             "tokens)", "real_llm", _rows(tokens_row)),
    claim.on("002", "App. C / Fig. 10", "a non-negligible number of "
             "contexts with next-token entropy > 5", "real_llm",
             _rows(entropy_row)),
)
