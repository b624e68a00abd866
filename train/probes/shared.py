"""Seed 003 on a tied model as the paper runs it: the shared matrix E
(input embedding = output embedding) edited and pruned on both sides at
once, beside the head-only variant on the same positions. Its spec: SHARED.

§4: "removing unnecessary dimensions concurrently from the input embedding
and the output embedding"; §3 / Table 2: Algorithm 1 "even on
embedding-tied models". The head-only variants (train/probes/encoding.py,
pruning.py) hold the hidden states fixed; here every variant is a new
forward pass of the model with E replaced, so a change of the input side
reaches the hidden states.

What is measured, on the first `positions` positions of the out-of-domain
Pass (windows cut to them: a causal model's first positions see only their
own prefix):
- removal: KL(original || pruned) of the mean next-token distribution after
  zeroing a share of E's columns, least salient first (MLR saliency on the
  probed text, as Fig. 6) and most salient first; per block of positions
  (the interval the ledger reads) and over all;
- editing: Algorithm 1 at b = 2 on a token's row of E, e = |ln r - ln r_hat|
  on these positions (the paper's e_ood) and the KL on the unedited tokens,
  shared and head-only. The tokens are drawn among those in the positions'
  inputs, special tokens excluded (`editable`): a token absent from the
  inputs leaves the hidden states as they are, and its shared edit is the
  head-only edit exactly. Tokens of the text are more frequent than random
  ones, so alpha_w is larger and eq. (2)'s approximation (exact for small
  alpha_w) looser: e of both variants is biased upward against the
  paper's draw from the whole vocabulary;
- the shared variant's mean next-token loss on the positions (`nll`),
  beside the unchanged model's: how much the pruned model still predicts.
Each variant's forward shares the subject's placed weights
(`forward.with_embeddings`) and one working copy of E, updated in place
(buffer donation): the probe holds E twice, not once per variant. The
shared KLs are against the unchanged model run the same way (the same cut
windows), the head-only ones against the Pass they change.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import encoding
from train.probes import forward, plots
from train.probes.encoding import _Cached, moments
from train.probes.forward import Pass
from train.probes.spec import Figure, Probe, Row, fmt

RATIOS = (0.1, 0.2, 0.3, 0.4, 0.5)  # Shares of E's columns removed.
SCALES = (0.2, 0.5, 2.0, 5.0)  # Algorithm 1's scales r (each a forward).
EDIT_B = 2.0  # Algorithm 1's b (Table 2's headline column).


def not_applicable(subject) -> str:
  """Why the subject has no shared matrix to edit ('' when it has one)."""
  if not subject.cfg.tied:
    return "the head is untied: its input and output embeddings differ"
  if not hasattr(subject.cfg, "replace_embeddings"):
    return f"family {subject.cfg.family!r} cannot replace its embedding"
  return ""


@functools.partial(jax.jit, donate_argnums=0)
def masked(work_vxd, e_vxd, keep_d):
  """E with columns zeroed where keep_d is 0, written over `work_vxd`."""
  del work_vxd
  return e_vxd * keep_d[None, :].astype(e_vxd.dtype)


@functools.partial(jax.jit, donate_argnums=0)
def row_set(work_vxd, row_d, token):
  """`work_vxd` with row `token` set to row_d (in place)."""
  return work_vxd.at[token].set(row_d.astype(work_vxd.dtype))


def _check_inputs(positions, tokens, ratios, scales) -> None:
  """One error naming the argument for each bad input."""
  if not (isinstance(positions, (int, np.integer)) and positions >= 2):
    raise ValueError(f"`positions` must be an integer >= 2; got "
                     f"{positions!r}.")
  if not (isinstance(tokens, (int, np.integer)) and tokens >= 1):
    raise ValueError(f"`tokens` must be an integer >= 1; got {tokens!r}.")
  if any(not 0.0 < r <= 1.0 for r in ratios):
    raise ValueError(f"`ratios` must lie in (0, 1]; got {list(ratios)}.")
  if any(not (np.isfinite(v) and v > 0) for v in scales):
    raise ValueError(f"`scales` must be finite and > 0; got "
                     f"{list(scales)}.")


def editable(tokens, subject) -> np.ndarray:
  """The distinct tokens of `tokens` an edit may pick: all but the
  tokenizer's special ones (BOS / EOS / padding: inputs every window
  holds and no text predicts)."""
  tok = subject.tokenizer
  special = {getattr(tok, a, None) for a in ("bos_id", "eos_id", "pad_id")
             } if tok is not None else set()
  present = np.unique(tokens)
  return present[~np.isin(present, [t for t in special if t is not None])]


def _block_means(h_nxd, w_vxd, softcap: float, parts) -> np.ndarray:
  """Mean softmax(h W^T) over each block of rows: [blocks, V] float64."""
  return np.stack([forward.probabilities(h_nxd[p], w_vxd, None, softcap,
                                         chunk=64).mean(0, dtype=np.float64)
                   for p in parts])


def _windows(pass_: Pass, positions: int):
  """(x, y) of the Pass's windows that hold its first `positions`
  positions, a single window cut to them."""
  t = pass_.x.shape[1]
  if positions < t:
    return pass_.x[:1, :positions], pass_.y[:1, :positions]
  k = -(-positions // t)
  return pass_.x[:k], pass_.y[:k]


def shared_probe(subject, pass_: Pass, ood_pass: Pass, positions: int = 256,
                 tokens: int = 4, blocks: int = 8, ratios=RATIOS,
                 scales=SCALES, seed: int = 0):
  """Seed 003 §4 and Algorithm 1 on the shared matrix of a tied model, and
  the head-only variants on the same positions (module docstring)."""
  why = not_applicable(subject)
  if why:
    return {"applicable": False, "why": why}, {}
  _check_inputs(positions, tokens, ratios, scales)
  x, y = _windows(ood_pass, positions)
  n = min(positions, x.size)
  softcap = float(subject.cfg.logit_softcap)
  parts = np.array_split(np.arange(n), max(1, min(blocks, n)))
  e0 = subject.cfg.input_embeddings(subject.params)
  d = e0.shape[1]
  w = np.asarray(e0, np.float32)  # The head as the base Pass used it.
  base_h = ood_pass.h[:n]
  head_base = _block_means(base_h, w, softcap, parts)
  sizes = np.array([len(p) for p in parts], np.float64)
  fit = encoding.mlr(-np.log(pass_.alpha), w, moments(subject, "W"))
  order = encoding.removal_order(fit["slopes"])  # Least salient first.
  work = jnp.array(e0)  # The one working copy of E.
  nll = []  # The shared variant's mean next-token loss, per forward.

  def forward_means(e_vxd):
    """Block means of the model with E replaced (both sides)."""
    out = forward.run(forward.with_embeddings(subject, e_vxd), x, y,
                      gradient_sums=False)
    nll.append(float(out.nll[:n].mean()))
    return _block_means(out.h[:n], np.asarray(e_vxd, np.float32), softcap,
                        parts)

  base = forward_means(e0)  # The same cut windows as every variant.
  base_nll = nll.pop()

  def kls(means, against=base):
    whole = (sizes @ means) / sizes.sum()
    return (encoding.kl((sizes @ against) / sizes.sum(), whole),
            [encoding.kl(b, m) for b, m in zip(against, means)])

  removal = {v: {o: [] for o in ("saliency", "adversarial")}
             for v in ("shared", "head_only")}
  per_block = {o: [] for o in ("saliency", "adversarial")}
  for r in ratios:
    k = int(round(r * d))
    for label, cols in (("saliency", order[:k]),
                        ("adversarial", order[::-1][:k])):
      keep = np.ones(d, np.float32)
      keep[cols] = 0.0
      work = masked(work, e0, jnp.asarray(keep))
      kl_all, kl_blocks = kls(forward_means(work))
      removal["shared"][label].append(kl_all)
      per_block[label].append(kl_blocks)
      # Zeroing W's columns is zeroing h's (no copy of W).
      kl_head, _ = kls(_block_means(base_h * keep[None, :], w, softcap,
                                    parts), head_base)
      removal["head_only"][label].append(kl_head)
  work = masked(work, e0, jnp.ones(d, jnp.float32))  # E again.
  removal["shared"]["nll"] = {o: nll[i::2] for i, o in
                              enumerate(("saliency", "adversarial"))}
  removal["shared"]["nll_unchanged"] = base_nll

  inputs = x.reshape(-1)[:n]  # The positions' own input tokens.
  present = editable(inputs, subject)
  chosen = np.random.default_rng(seed).choice(
      present, size=min(tokens, present.size), replace=False)
  deltas = encoding.edit_delta(np.array(scales), fit["slopes"],
                               fit["p_values"], EDIT_B)  # [R, D]
  cache = _Cached(subject, base_h)
  alphas = {"shared": (sizes @ base) / sizes.sum(), "head_only": cache.alpha}
  edit = {"shared": {"e_per_token": [], "kl": []},
          "head_only": {"e_per_token": [], "kl": []}}
  for token in chosen:
    token = int(token)
    row = e0[token]
    shared_after = []
    for delta in deltas:
      work = row_set(work, row + jnp.asarray(delta, row.dtype), token)
      shared_after.append((sizes @ forward_means(work)) / sizes.sum())
    work = row_set(work, row, token)
    for label, after in (("shared", np.stack(shared_after)),
                         ("head_only", cache.edited_alpha(token, deltas))):
      alpha = alphas[label]
      edit[label]["e_per_token"].append(float(np.mean(
          [encoding.scale_error(r, alpha, a, token)
           for r, a in zip(scales, after)])))
      edit[label]["kl"] += list(encoding.kl_unedited(alpha, after, token))
  del work, cache
  for v in edit.values():
    v["e"] = float(np.mean(v["e_per_token"]))
    v["kl_unedited"] = float(np.mean(v.pop("kl")))
  occurrences = [int(np.count_nonzero(inputs == t)) for t in chosen]
  out = {"applicable": True, "positions": int(n), "ratios": list(ratios),
         "removal": removal, "blocks": {"positions": sizes.astype(int).tolist(),
                                        **{o: np.array(v).T.tolist()
                                           for o, v in per_block.items()}},
         "edit": {**edit, "tokens": [int(t) for t in chosen],
                  "occurrences": occurrences, "scales": list(scales), "b":
                  EDIT_B, "unedited_error": float(np.mean(np.abs(np.log(
                      scales))))}}
  return out, {"shared_removal": _figure({subject.name: out})}


def _figure(by_model: dict):
  """Fig. 6 for the shared matrix and the head alone, per model."""
  return plots.prune({f"{name}, {label}": {"ratios": r["ratios"],
                                           **r["removal"][v]}
                      for name, r in by_model.items() if r.get("applicable")
                      for v, label in (("shared", "shared E"),
                                       ("head_only", "head only"))})


def _cell(n, variant: str, key: str) -> str:
  s = n["shared"]
  if not s["applicable"]:
    return "-"
  if key == "kl30":
    if 0.3 not in s["ratios"]:
      return "-"
    i = s["ratios"].index(0.3)
    r = s["removal"][variant]
    return f"{fmt(r['saliency'][i])} / {fmt(r['adversarial'][i])}"
  return fmt(s["edit"][variant]["e"], 2)


SHARED = Probe(
    "shared", "passes",
    lambda ctx: shared_probe(ctx.subject, ctx.own, ctx.ood,
                             ctx.settings.shared_positions,
                             ctx.settings.edit_tokens, seed=ctx.settings.seed),
    figures=(Figure("shared_removal", "KL of the mean next-token "
                    "distribution after zeroing embedding dimensions of a "
                    "tied model's shared matrix (both sides, new forward "
                    "passes) and of its head alone, least or most salient "
                    "first (seed 003 Fig. 6, §4).", _figure),),
    share=0.10, rows=(
        Row("seed003", "§4 tied: KL at 30% removed, shared E (saliency / "
            "adversarial)", "removal works on tied models (seed 003 §4)",
            lambda n: _cell(n, "shared", "kl30")),
        Row("seed003", "§4 tied: the same, head only", "",
            lambda n: _cell(n, "head_only", "kl30")),
        Row("seed003", "Algorithm 1 on shared E: e_ood at b = 2",
            "0.15 (seed 003 Table 2, GPT-2, tied)",
            lambda n: _cell(n, "shared", "e")),
        Row("seed003", "Algorithm 1 head only, same tokens: e at b = 2", "",
            lambda n: _cell(n, "head_only", "e"))))
