"""Ledger rows of seed 002 App. C on the real LLMs (train/probes/batches.py,
run by the real_llm section): Fig. 9's contexts and tokens per batch, the
§2.3 hypothesis they back (|C^uu| >> D), Fig. 10's next-token entropy.
Each a test per model (claim.Row)."""

from __future__ import annotations

from bottleneck import stats
from train.report import claim, intervals
from train.report.claim import (DISAGREES, NOT_APPLICABLE, REPRODUCED,
                                TOO_SMALL, Row, num, real)
from train.report.seed003_rows import INSTRUCT, text_name

# Thresholds inferred (the paper gives none; each row's deviations say so):
NEARLY_ALL = 0.95  # Fig. 9 "nearly all observed contexts are unique".
MOST = 0.5  # Fig. 9 "most tokens appear at least once".
# "batches of usual sizes (up to a few million tokens)": a batch under this
# has not reached the sizes the paper speaks of.
FEW_MILLION = 2_000_000
MUCH_GREATER = 10  # §2.3 "|C^uu| >> D" read as at least 10 D.
NON_NEGLIGIBLE = 0.01  # Fig. 10 "a non-negligible number of contexts".
PAPER_TOKENIZER = "smollm2"  # Fig. 9: "We use the SmolLM2 tokenizer".


def _text(m: dict, name: str) -> str:
  p = claim.mapping(claim.get(m, "pass"), f"{name}.pass")
  return (f"text: {text_name(p.get('text'))} (the paper: Fineweb "
          "documents; one author's text has a narrower vocabulary than the "
          "web)")


def _tokenizer(name: str, m: dict) -> tuple[str, ...]:
  """Fig. 9's deviations: the tokenizer (the paper's is SmolLM2's), the
  text, and the batch's make-up."""
  s = claim.mapping(claim.get(m, "subject"), f"{name}.subject")
  own = () if name == PAPER_TOKENIZER else (
      f"tokenizer: {name}'s (V = {s['V']}), not SmolLM2's",)
  return own + (_text(m, name), "documents: windows of the text (a "
                "context is the window's prefix up to the position)",
                f"'batches of usual sizes (up to a few million tokens)' "
                f"read as batches of at least {FEW_MILLION} tokens")


def _model(name: str, m: dict) -> tuple[str, ...]:
  """Fig. 10's deviations: the model (the paper's is Llama-3.1-8B)."""
  s = claim.mapping(claim.get(m, "subject"), f"{name}.subject")
  tuned = ", chat-tuned (Instruct)" if name in INSTRUCT else ""
  return (f"subject: {name} (V = {s['V']}, D = {s['D']}, GGUF-quantised"
          f"{tuned}), not Llama-3.1-8B (a smaller model's distributions "
          "are flatter)", _text(m, name))


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


def _short(tokens: int) -> str:
  return (f"the text gives batches of at most {tokens} tokens, under the "
          f"paper's 'few million' (read as {FEW_MILLION}): a longer text "
          "(real_llm.text) would decide")


def _batch_verdict(ok: bool, tokens: int, rises: bool) -> tuple[str, str]:
  """(verdict, why) of a statistic read at the largest batch, `ok` on the
  paper's side. A batch of FEW_MILLION tokens settles it; a smaller one
  settles only the side a larger batch cannot leave (a statistic that
  `rises` with the batch keeps a pass; one that falls keeps a failure),
  else too small to speak."""
  if ok == rises or tokens >= FEW_MILLION:
    return (REPRODUCED if ok else DISAGREES), ""
  return TOO_SMALL, _short(tokens)


def contexts_row(name, b, m) -> Row:
  """Fig. 9 (a): the share of a batch's positions whose context occurs
  once in it, at the largest batch, against NEARLY_ALL. The share falls as
  the batch grows: above NEARLY_ALL in a batch under FEW_MILLION tokens
  it is too small to speak. Exact counts, their spread over sizes."""
  at = f"{name}.batches"
  curve = _curve(b, at)
  top = curve[-1]
  share = top["seen_once"] / top["tokens"]
  shares = [r["seen_once"] / r["tokens"] for r in curve]
  window = int(num(b, "window", at=at))
  verdict, why = _batch_verdict(share >= NEARLY_ALL, top["tokens"], False)
  return Row(
      verdict, f"{share:.1%} of {top['tokens']} positions have a context "
      f"seen once in the batch (from {shares[0]:.1%} at {curve[0]['tokens']}"
      " tokens)", "share of a batch's positions whose context occurs once "
      f"in it, at the largest batch; reproduced at {NEARLY_ALL:.0%} or more",
      f"{len(curve)} nested batches of windows of {window} tokens, up to "
      f"{top['tokens']}", "none: exact counts over one draw of windows; "
      f"over the batch sizes the share ranges {min(shares):.3f} .. "
      f"{max(shares):.3f}", why=why, deviations=_tokenizer(name, m) + (
          f"window of {window} tokens: a share under {NEARLY_ALL:.0%} needs "
          f"the contexts of over {1 - NEARLY_ALL:.0%} of each window's "
          "positions to recur, i.e. verbatim repeats of over "
          f"{int((1 - NEARLY_ALL) * window)} tokens; on natural text this "
          "row is close to a consistency check (shorter documents would "
          "lower the share)",
          f"threshold inferred: 'nearly all' read as >= {NEARLY_ALL:.0%}"))


def _largest(name, b, m, what: str):
  """(largest batch record, V, a NOT_APPLICABLE Row or None): Fig. 9's
  vocabulary claims speak of SmolLM2's tokenizer only."""
  at = f"{name}.batches"
  top = _curve(b, at)[-1]
  v = num(b, "V", at=at)
  if name == PAPER_TOKENIZER:
    return top, v, None
  return top, v, Row(
      NOT_APPLICABLE, f"{top['distinct_tokens']} distinct tokens = "
      f"{top['distinct_tokens'] / v:.1%} of V = {int(v)}; |C^uu| = "
      f"{top['C_uu']} in {top['tokens']} tokens", what, f"{top['tokens']} "
      "tokens", "none: exact counts, shown but not judged",
      why=f"the paper counts SmolLM2's tokenizer (V = 49152); {name}'s "
      f"(V = {int(v)}) spans other scripts and languages, which no English "
      "text reaches", deviations=_tokenizer(name, m))


def tokens_row(name, b, m) -> Row:
  """Fig. 9 (b): the share of the vocabulary a batch holds, at the largest
  batch, against MOST; short of MOST in a batch under FEW_MILLION tokens
  it is too small to speak (a larger batch could still reach it)."""
  what = ("share of the vocabulary a batch holds, at the largest batch "
          f"(<= {1 << 21} tokens or the whole text); reproduced above "
          f"{MOST:.0%}")
  top, v, na = _largest(name, b, m, what)
  if na:
    return na
  share = top["distinct_tokens"] / v
  verdict, why = _batch_verdict(share > MOST, top["tokens"], True)
  return Row(
      verdict, f"{top['distinct_tokens']} distinct tokens = {share:.1%} of "
      f"V = {int(v)} in a batch of {top['tokens']} tokens", what,
      f"{top['tokens']} tokens of a "
      f"{int(num(b, 'text_tokens', at=f'{name}.batches'))}-token text",
      "none: an exact count over one draw of windows",
      why=why,
      deviations=_tokenizer(name, m) + (
          f"threshold inferred: 'most tokens' read as over {MOST:.0%} of V",))


def cuu_row(name, b, m) -> Row:
  """§2.3's hypothesis that App. C backs: |C^uu| ~ V, "or at least
  |C^uu| >> D" (Prop. 2.5's rank bound D^u far above the head's rank),
  read as |C^uu| >= MUCH_GREATER D at the largest batch."""
  s = claim.mapping(claim.get(m, "subject"), f"{name}.subject")
  d = num(s, "D", at=f"{name}.subject")
  what = (f"|C^uu| (distinct tokens that are the one observed continuation "
          f"of some context) over the head's width D, at the largest batch;"
          f" reproduced at {MUCH_GREATER} D or more")
  top, v, na = _largest(name, b, m, what)
  if na:
    return na
  ratio = top["C_uu"] / d
  verdict, why = _batch_verdict(ratio >= MUCH_GREATER, top["tokens"], True)
  return Row(
      verdict, f"|C^uu| = {top['C_uu']} = {ratio:.1f} D (D = {int(d)}) and "
      f"{top['C_uu'] / v:.1%} of V = {int(v)}, in a batch of {top['tokens']}"
      " tokens", what, f"{top['tokens']} tokens",
      "none: an exact count over one draw of windows",
      why=why,
      deviations=_tokenizer(name, m) + (
          f"threshold inferred: '>>' read as at least {MUCH_GREATER} times",
          "within one batch almost every context is seen once, so |C^uu| "
          "is close to the distinct next tokens; §2.3.1's once-seen "
          "positive-entropy contexts (a corpus-level count) are not "
          "measured"))


def entropy_row(name, b, m) -> Row:
  """Fig. 10: the share of positions whose next-token entropy exceeds 5
  nats against NON_NEGLIGIBLE: a t interval over the windows' shares (the
  positions of one window cluster), Clopper-Pearson where one window."""
  at = f"{name}.batches.entropy"
  e = claim.mapping(claim.get(b, "entropy"), at)
  n = int(num(e, "positions", at=at))
  k = int(num(e, "over_high", at=at))
  if n < 1 or not 0 <= k <= n:
    raise ValueError(f"`{at}`: over_high = {k} of positions = {n}: expected "
                     "0 <= over_high <= positions, positions >= 1")
  high = num(e, "high", at=at)
  per = e.get("over_high_windows") or []
  if (not isinstance(per, list) or any(
      not isinstance(w, list) or len(w) != 2 or not 0 <= w[0] <= w[1]
      for w in per) or (per and sum(w[1] for w in per) != n)):
    raise ValueError(f"`{at}.over_high_windows` must be [over, positions] "
                     f"pairs whose positions sum to {n}")
  if len(per) >= 2:
    _, lo, hi = intervals.t_interval([a / t for a, t in per])
    lo, hi = max(lo, 0.0), min(hi, 1.0)
    spread = (f"95 % t interval over {len(per)} windows' shares "
              f"{lo:.3f} .. {hi:.3f}")
  else:
    lo, hi = stats.binomial_interval(k, n)
    spread = (claim.bracket(lo, hi) + " over positions (one window: "
              "positions treated as independent, too narrow if they "
              "cluster)")
  verdict = claim.side(lo, hi, NON_NEGLIGIBLE)
  why = "" if verdict != TOO_SMALL else (
      f"the interval straddles {NON_NEGLIGIBLE:.0%}: more windows "
      "(real_llm.windows) would decide")
  return Row(
      verdict, f"{k} of {n} positions ({k / n:.1%}) have a next-token "
      f"entropy above {high:g} nats (median {num(e, 'median', at=at):.2f}, "
      f"90th percentile {num(e, 'q90', at=at):.2f}, largest "
      f"{num(e, 'max', at=at):.2f}; ln V = {num(e, 'ln_V', at=at):.2f})",
      f"share of positions with next-token entropy > {high:g} nats; "
      f"reproduced when its interval lies at or above {NON_NEGLIGIBLE:.0%}",
      f"{n} positions spread over {max(len(per), 1)} window(s)", spread,
      why=why, deviations=_model(name, m) + (
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
    claim.on("002", "§2.3 / App. C (|C^uu| >> D)", "|C^uu| ~ V, or at "
             "least |C^uu| >> D (Prop. 2.5's bound high)", "real_llm",
             _rows(cuu_row)),
    claim.on("002", "App. C / Fig. 10", "a non-negligible number of "
             "contexts with next-token entropy > 5", "real_llm",
             _rows(entropy_row)),
)
