"""Seed 003's MAUVE on a tied model (Table 2, Fig. 6; App. B.3): text
sampled from the model with its shared matrix E pruned or edited, against
text sampled from the model as it is. Its spec: MAUVE.

App. B.3: prefixes (the first two words of 512 BookCorpus items), the
original and the edited model "generate naturally" from them, and MAUVE
(`bottleneck.mauve_score`, the mauve-text package at its defaults)
compares the two sets. Here:
- prompts: `PROMPT_TOKENS` tokens (BOS first where the model has one) at
  evenly spaced starts of the probed text (no BookCorpus offline),
  `samples` of them;
- generation: `new_tokens` tokens sampled at temperature 1 with a KV cache
  (`generate.sample_cached`); the reference set with one key, every
  variant and the control (the unchanged model again) with another, so
  that variant and control share their randomness and differ by the edit;
- features: the unchanged model's own final hidden state at each text's
  last token (no feature model such as GPT-2 large can be downloaded);
- variants: E's columns zeroed on both sides, least salient first at
  RATIOS and most salient first at ADVERSARIAL (Fig. 6), and Algorithm 1
  at b = 2 on a token's row of E at EDIT_SCALES (Table 2), the tokens
  drawn among those the unchanged model sampled (the paper: from the
  vocabulary, whose random tokens a model rarely samples: their edits
  would leave the texts as they were): the `tokens` it samples most often
  in the control's texts; each edit's `changed` is the share of texts that
  differ from the control's.
The control's MAUVE is the sampling noise: how far two samples of the
same model fall from 1 at this many texts.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import encoding, mauve_score
from train.models import generate
from train.probes import plots, shared
from train.probes.encoding import moments
from train.probes.forward import Pass
from train.probes.spec import Figure, Probe, Row, fmt

PROMPT_TOKENS = 4  # App. B.3's "first two words", as tokens.
RATIOS = (0.1, 0.15, 0.2, 0.3, 0.4, 0.5)  # Least salient first (solid).
ADVERSARIAL = (0.1, 0.3, 0.5)  # Most salient first (Fig. 6 dashed).
EDIT_SCALES = (0.2, 5.0)  # Algorithm 1's scales r per edited token.
THRESHOLD = 0.80  # §4: "Regarding MAUVE > 0.80 as a threshold".


def prompts(pass_: Pass, n: int, length: int = PROMPT_TOKENS,
            bos: int | None = None) -> np.ndarray:
  """[n, length] token prompts at n evenly spaced starts of the Pass's
  token stream (BOS first, then length - 1 tokens, when `bos` is set: the
  windows the model was probed on start with it)."""
  stream = pass_.x.reshape(-1)
  if bos is not None:
    stream = stream[stream != bos]
  take = length - (bos is not None)
  if stream.size < n + take:
    raise ValueError(f"`mauve_samples` = {n}: the probed text holds "
                     f"{stream.size} tokens, too few for {n} prompts of "
                     f"{length}.")
  starts = np.linspace(0, stream.size - take, n).astype(int)
  out = np.stack([stream[s:s + take] for s in starts])
  if bos is not None:
    out = np.concatenate([np.full((n, 1), bos), out], axis=1)
  return out.astype(np.int32)


@functools.partial(jax.jit, static_argnames="model")
def _last_hidden(params, model, x_bt):
  return model.apply(params, x_bt, method=type(model).hidden)[:, -1]


def _check_inputs(samples, new_tokens, tokens, block_size: int) -> None:
  """One error naming the setting for each bad input."""
  need = mauve_score.MIN_BUCKETS * mauve_score.MIN_PER_BUCKET
  if not (isinstance(samples, (int, np.integer)) and samples >= need):
    raise ValueError(f"`mauve_samples` must be 0 (not run) or an integer "
                     f">= {need} (MAUVE's clustering); got {samples!r}.")
  if not (isinstance(new_tokens, (int, np.integer)) and
          1 <= new_tokens <= block_size - PROMPT_TOKENS):
    raise ValueError(f"`mauve_new_tokens` must be an integer in [1, "
                     f"{block_size - PROMPT_TOKENS}] (the model's block "
                     f"{block_size} minus the prompt's {PROMPT_TOKENS}); got "
                     f"{new_tokens!r}.")
  if not (isinstance(tokens, (int, np.integer)) and tokens >= 1):
    raise ValueError(f"`tokens` (edited) must be an integer >= 1; got "
                     f"{tokens!r}.")


def features(subject, texts_nxt, batch: int = 32) -> np.ndarray:
  """The unchanged model's final hidden state at each text's last token."""
  return np.concatenate([np.asarray(_last_hidden(
      subject.params, subject.model, jnp.asarray(texts_nxt[i:i + batch]))
                                           )
                         for i in range(0, len(texts_nxt), batch)])


def mauve_probe(subject, pass_: Pass, samples: int = 128,
                new_tokens: int = 32, tokens: int = 2, seed: int = 0):
  """MAUVE of the pruned and edited shared matrix (module docstring)."""
  if samples == 0:
    return {"run": False, "why": "mauve_samples = 0 at this scale"}, {}
  why = shared.not_applicable(subject) or (
      "" if hasattr(type(subject.model), "hidden_step") else
      f"family {subject.cfg.family!r} has no cached decoding step")
  if why:
    return {"run": True, "applicable": False, "why": why}, {}
  _check_inputs(samples, new_tokens, tokens, subject.cfg.block_size)
  bos = getattr(subject.tokenizer, "bos_id", None)
  x = jnp.asarray(prompts(pass_, samples, bos=bos))
  keys = jax.random.split(jax.random.key(seed), 2)
  cfg = subject.cfg
  e0 = cfg.input_embeddings(subject.params)
  d = e0.shape[1]

  def texts(e_vxd, key):
    params = (subject.params if e_vxd is None else
              cfg.replace_embeddings(subject.params, e_vxd))
    return np.asarray(generate.sample_cached(params, subject.model, x, key,
                                             new_tokens, 1.0))

  ref_texts = texts(None, keys[0])
  ref = features(subject, ref_texts)
  control_texts = texts(None, keys[1])

  def score(e_vxd) -> dict:
    """MAUVE of the variant's texts against the reference set, and the
    share of its texts that differ from the control's (the same random
    numbers: a text differs only where the change reached a sample)."""
    got = control_texts if e_vxd is None else texts(e_vxd, keys[1])
    out = mauve_score.mauve(ref, features(subject, got), seed=seed)
    return {**{k: out[k] for k in ("mauve", "frontier_integral", "buckets")},
            "changed": float(np.mean(np.any(got != control_texts, axis=1)))}

  control = score(None)
  w = np.asarray(e0, np.float32)
  fit = encoding.mlr(-np.log(pass_.alpha), w, moments(subject, "W"))
  order = encoding.removal_order(fit["slopes"])
  work = jnp.array(e0)
  removal = {"saliency": [], "adversarial": []}
  for label, ratios, cols in (("saliency", RATIOS, order),
                              ("adversarial", ADVERSARIAL, order[::-1])):
    for r in ratios:
      keep = np.ones(d, np.float32)
      keep[cols[:int(round(r * d))]] = 0.0
      work = shared.masked(work, e0, jnp.asarray(keep))
      removal[label].append(score(work)["mauve"])
  work = shared.masked(work, e0, jnp.ones(d, jnp.float32))
  # The tokens the unchanged model samples most often in the control's
  # texts (special ones excluded): an edit of a token it never samples
  # leaves every text as it was.
  sampled = control_texts[:, x.shape[1]:].reshape(-1)
  ids, counts = np.unique(sampled, return_counts=True)
  keep = np.isin(ids, shared.editable(ids, subject))
  ids, counts = ids[keep], counts[keep]
  top = np.argsort(-counts, kind="stable")[:tokens]
  chosen, occurrences = ids[top], counts[top]
  deltas = encoding.edit_delta(np.array(EDIT_SCALES), fit["slopes"],
                               fit["p_values"], 2.0)
  edits = []
  for token in chosen:
    row = e0[int(token)]
    for r, delta in zip(EDIT_SCALES, deltas):
      work = shared.row_set(work, row + jnp.asarray(delta, row.dtype),
                            int(token))
      got = score(work)
      edits.append({"token": int(token), "scale": r, "mauve": got["mauve"],
                    "changed": got["changed"], "sampled": int(occurrences[
                        list(chosen).index(token)])})
    work = shared.row_set(work, row, int(token))
  del work
  out = {"run": True, "applicable": True, "samples": int(samples),
         "prompt_tokens": PROMPT_TOKENS, "new_tokens": int(new_tokens),
         "control": control, "ratios": list(RATIOS),
         "adversarial_ratios": list(ADVERSARIAL), "removal": removal,
         "edits": edits, "threshold": THRESHOLD}
  return out, {"mauve": _figure({subject.name: out})}


def _figure(by_model: dict):
  """Fig. 6's MAUVE panel: MAUVE against the share of E removed, per
  model, with its control and the 0.80 threshold."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, ax = plt.subplots(figsize=(5.5, 3.8))
  for (name, r), color in plots.colors({
      n: r for n, r in by_model.items() if r.get("applicable")}):
    ax.plot([0] + r["ratios"], [r["control"]["mauve"]]
            + r["removal"]["saliency"], "o-", color=color,
            label=f"{name}: least salient first")
    ax.plot([0] + r["adversarial_ratios"], [r["control"]["mauve"]]
            + r["removal"]["adversarial"], "s--", color=color,
            label=f"{name}: most salient first")
  ax.axhline(THRESHOLD, color="k", ls=":", lw=0.8, label="0.80 (seed 003)")
  ax.set_xlabel("share of the shared matrix's dimensions removed")
  ax.set_ylabel("MAUVE against the unchanged model")
  ax.set_ylim(0, 1.05)
  ax.set_title("Seed 003 Fig. 6: MAUVE (ratio 0: a second sample)")
  ax.legend(fontsize=7)
  return fig


def _cell(n, what: str) -> str:
  m = n["mauve"]
  if not m.get("run"):
    return "not run"  # mauve_samples = 0 (quick, tiny).
  if not m.get("applicable"):
    return "n/a"
  if what == "removal":
    i = m["ratios"].index(0.3)
    j = m["adversarial_ratios"].index(0.3)
    return (f"{fmt(m['removal']['saliency'][i], 2)} / "
            f"{fmt(m['removal']['adversarial'][j], 2)}")
  if what == "edit":
    return fmt(float(np.mean([e["mauve"] for e in m["edits"]])), 2)
  return fmt(m["control"]["mauve"], 2)


MAUVE = Probe(
    "mauve", "pass",
    lambda ctx: mauve_probe(ctx.subject, ctx.own, ctx.settings.mauve_samples,
                            ctx.settings.mauve_new_tokens, seed=(
                                ctx.settings.seed)),
    figures=(Figure("mauve", "MAUVE of text sampled with the shared matrix's "
                    "least (most) salient dimensions removed against text "
                    "sampled from the unchanged model; at 0, a second "
                    "sample of the unchanged model (seed 003 Fig. 6).",
                    _figure),),
    share=0.10, rows=(
        Row("seed003", "Fig. 6 MAUVE at 30% removed, shared E (saliency / "
            "adversarial)", "> 0.80 to 30-40% removed (seed 003 Fig. 6)",
            lambda n: _cell(n, "removal")),
        Row("seed003", "Table 2 MAUVE after Algorithm 1 on shared E",
            "0.96 (seed 003 Table 2, GPT-2, b = 2)",
            lambda n: _cell(n, "edit")),
        Row("seed003", "MAUVE of a second sample (control)", "",
            lambda n: _cell(n, "control"))))
