"""Matplotlib figures: each function takes plain data and returns a Figure."""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np

from bottleneck import bounds, signrank

_FORM_STYLE = {"exact": ("C4", "--", "Cor. 1, exact form"),
               "gumbel": ("C3", ":", "Cor. 1, Gumbel form"),
               "rowspace_exact": ("k", "-.", "row-space exact law (ours)")}


def unlabelled(fig) -> list[str]:
  """What a reader would miss: axes with data but no x / y label or no
  title (the figure's suptitle counts), and several labelled lines without
  a legend. Axes turned off (drawings) are skipped."""
  issues = []
  suptitle = fig._suptitle.get_text() if fig._suptitle else ""  # pylint: disable=protected-access
  for i, ax in enumerate(fig.axes):
    if not ax.axison or not (ax.lines or ax.collections or ax.patches or
                             ax.images):
      continue
    for what, text in (("x label", ax.get_xlabel()),
                       ("y label", ax.get_ylabel()),
                       ("title", ax.get_title() or suptitle)):
      if not text.strip():
        issues.append(f"axis {i} has no {what}")
    labelled = [h for h in ax.get_lines() + ax.collections
                if not h.get_label().startswith("_")]
    if len(labelled) > 1 and ax.get_legend() is None:
      issues.append(f"axis {i} has {len(labelled)} labelled series and no "
                    "legend")
  return issues


def save(fig, path: str) -> str:
  """Writes a PNG. With BOTTLENECK_STRICT_FIGURES=1 (the tests set it) an
  axis without labels, title or legend (`unlabelled`) is an error."""
  if os.environ.get("BOTTLENECK_STRICT_FIGURES") == "1":
    issues = unlabelled(fig)
    if issues:
      plt.close(fig)
      raise ValueError(f"figure {path}: {'; '.join(issues)}.")
  directory = os.path.dirname(path)
  if directory:
    os.makedirs(directory, exist_ok=True)
  fig.savefig(path, dpi=120, bbox_inches="tight")
  plt.close(fig)
  return path


def figure2(rows, threshold: float = 0.99, form: str = "gumbel"):
  """Figure 2: P(top-m selectable) vs m per model, with m* marked."""
  fig, ax = plt.subplots(figsize=(7, 4))
  lo = np.inf
  for i, row in enumerate(sorted(rows, key=lambda r: r.d)):
    m_star = int(bounds.m_star(row.N, row.d, threshold, form))
    m = np.arange(max(1, m_star // 3), min(row.d - 4, 2 * m_star) + 1)
    lo = min(lo, m[0])
    p = bounds.curve(row.N, row.d, m, form)
    ax.plot(m, p, color=plt.cm.viridis(i / max(1, len(rows) - 1)),
            label=f"{row.label} ({row.N}x{row.d}): m*={m_star}")
    ax.plot([m_star], [bounds.curve(row.N, row.d, [m_star], form)[0]], "k.")
  ax.axhline(threshold, color="gray", lw=0.8, ls=":")
  ax.set_xscale("log")
  ax.set_xlim(left=lo)
  ax.set_xlabel("m (tokens made the top m)")
  ax.set_ylabel("P(random OPM can select any m)")
  ax.set_title(f"Figure 2: Corollary 1 bound ({form} form); dots: m*")
  ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
  return fig


def simulation_vs_bounds(N: int, d: int, records, title: str | None = None):
  """Figure 5: Monte-Carlo fraction (+-2 s.e.) against the closed forms."""
  m = np.array([r["m"] for r in records])
  frac = np.array([r["fraction"] for r in records])
  err = 2 * np.array([r["stderr"] for r in records])
  fig, ax = plt.subplots(figsize=(6, 4))
  ax.errorbar(m, frac, yerr=err, fmt="o-", color="C0", ms=3,
              label=f"simulation ({records[0]['trials']} trials, +-2 s.e.)")
  m_fine = np.linspace(m.min(), m.max(), 200).round().astype(int)
  m_fine = np.unique(m_fine[m_fine < d - 3])
  for form, (color, ls, label) in _FORM_STYLE.items():
    ax.plot(m_fine, bounds.curve(N, d, m_fine, form), color=color, ls=ls,
            label=label)
  ax.axhline(0.99, color="gray", lw=0.8, ls=":")
  ax.set_xlabel("m")
  ax.set_ylabel("P(all other logits < 1)")
  ax.set_title(title or f"Figure 5: row-space embedding, random {N}x{d}")
  ax.legend(fontsize=7)
  return fig


def signrank_example(N: int, m: int, subset):
  """The moment-curve construction for one subset: p(t) and the logits."""
  subset = np.sort(np.asarray(subset))
  c = signrank.subset_embedding(subset, N, m)
  a = signrank.moment_curve_matrix(N, m)
  t_fine = np.linspace(0, 2 * np.pi, 2000)
  k = np.arange(1, m + 1)
  basis = np.concatenate([np.ones((t_fine.size, 1)),
                          np.stack([np.cos(np.outer(t_fine, k)),
                                    np.sin(np.outer(t_fine, k))],
                                   -1).reshape(t_fine.size, -1)], 1)
  fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
  logits = a @ c
  chosen = np.zeros(N, bool)
  chosen[subset] = True
  t = signrank.angles(N)
  ax0.plot(t_fine, basis @ c, "k-", lw=1, label="p(t) = a(t) . c")
  ax0.axhline(0, color="gray", lw=0.8)
  ax0.plot(t[~chosen], logits[~chosen], "o", color="C0", label="other tokens")
  ax0.plot(t[chosen], logits[chosen], "o", color="C3", label="chosen S")
  ax0.set_xlabel("angle t on the moment curve")
  ax0.set_ylabel("logit")
  ax0.set_title(f"N={N}, m={m}, d={2 * m + 1}: p > 0 exactly on S")
  ax0.legend(fontsize=7)
  ax1.scatter(np.cos(t), np.sin(t), c=np.where(chosen, "C3", "C0"), s=25)
  for centre, half in signrank.arcs(subset, N):
    arc = np.linspace(centre - half, centre + half, 50)
    ax1.plot(1.08 * np.cos(arc), 1.08 * np.sin(arc), "C3-", lw=3)
  ax1.set_aspect("equal")
  ax1.axis("off")
  ax1.set_title("chosen arcs (roots of p at arc ends)")
  return fig


def margin_breakdown(records):
  """Worst exact log10 margin of the construction vs m, per N."""
  fig, ax = plt.subplots(figsize=(6, 4))
  by_n = {}
  for r in records:
    key = "N=3m+1" if r["N"] == 3 * r["m"] + 1 else f"N={r['N']}"
    by_n.setdefault(key, []).append(r)
  for key, rs in by_n.items():
    rs = sorted(rs, key=lambda r: r["m"])
    ax.plot([r["m"] for r in rs], [r["worst_exact_log10_margin"] for r in rs],
            "o-", label=key)
  ax.axhline(np.log10(np.finfo(np.float64).eps), color="gray", ls=":",
             label="float64 eps")
  ax.set_xscale("log")
  ax.set_xlabel("m (d = 2m + 1)")
  ax.set_ylabel("log10 worst normalised margin")
  ax.set_title("Sign-rank construction: exact margins")
  ax.legend(fontsize=7)
  return fig


def _draw_topm(ax, curves: dict, bound=None, threshold: float = 0.99):
  """The curves of `topm_curves` on one axis."""
  for i, (label, recs) in enumerate(curves.items()):
    m = np.array([r["m"] for r in recs])
    frac = np.array([r["fraction"] for r in recs])
    und = np.array([r["undecided"] for r in recs]) / np.array(
        [r["trials"] for r in recs])
    line, = ax.plot(m, frac, "o-", ms=3, color=f"C{i}",
                    label=f"{label} ({recs[0]['trials']} subsets per m)")
    if und.any():  # Undecided could go either way: shade the range.
      ax.fill_between(m, frac, frac + und, color=line.get_color(), alpha=0.2,
                      label=f"{label}: undecided")
  if bound is not None:
    n, d = bound
    m_fine = np.arange(1, min(d - 4, int(max(r["m"] for recs in
                                               curves.values()
                                               for r in recs))) + 1)
    ax.plot(m_fine, bounds.curve(n, d, m_fine, "exact"), ":", color="C4",
            label="Cor. 1 bound (random)")
    ax.plot(m_fine, bounds.curve(n, d, m_fine, "rowspace_exact"), "-.",
            color="k", lw=0.8, label="row-space exact law")
  ax.axhline(threshold, color="gray", lw=0.8, ls=":")
  ax.set_xlabel("m (tokens made the top m)")
  ax.set_ylabel("fraction of random m-subsets selectable")
  ax.legend(fontsize=7)


def topm_curves(curves: dict, shape=None, bound=None, title: str | None = None,
                threshold: float = 0.99):
  """Figure 1 / 3 style: fraction of m-subsets made the top m, vs m.

  curves: label -> list of records with `m`, `fraction`, `undecided`,
  `trials` (bottleneck.topm.summarize). bound: optional (N, d) whose
  Corollary 1 bound is drawn dotted.
  """
  fig, ax = plt.subplots(figsize=(6.5, 4))
  _draw_topm(ax, curves, bound, threshold)
  ax.set_title(title or ("Top-m selectability" + (
      f", {shape[0]}x{shape[1]}" if shape is not None else "")))
  return fig


def topm_panels(panels: dict, threshold: float = 0.99,
                title: str = "Figure 1 on {name}'s head"):
  """Figure 1 for several heads: one panel per {name: (curves, (N, d))},
  each with the closed-form bound of its shape; `title` formats `name`."""
  fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4),
                           squeeze=False)
  for ax, (name, (curves, shape)) in zip(axes[0], panels.items()):
    _draw_topm(ax, curves, shape, threshold)
    ax.set_title(f"{title.format(name=name)} ({shape[0]}x{shape[1]})")
  fig.tight_layout()
  return fig


def sweep_fit(x, m_star, xlabel: str, slope=None, title: str = "",
              bound=None):
  """Figure 3: LP m* against d (or N), with the fitted line m* = slope x
  and the closed-form m* of the same sizes (`bound`: a list, one per x)."""
  fig, ax = plt.subplots(figsize=(5.5, 3.8))
  ax.plot(x, m_star, "o-", color="C0", label="LP m* (fraction >= 0.99)")
  if bound is not None:
    ax.plot(x, bound, "s:", color="C4", label="Cor. 1 closed form m*")
  if slope is not None:
    xs = np.linspace(0, max(x), 50)
    ax.plot(xs, slope * xs, "--", color="C3",
            label=f"fit m* = {slope:.3f} {xlabel.split()[0]}")
  ax.set_xlabel(xlabel)
  ax.set_ylabel("m* (largest selectable m)")
  ax.set_title(title or f"Figure 3: m* against {xlabel.split()[0]}")
  ax.legend(fontsize=7)
  return fig


def tstar_strips(curves: dict, threshold: float = 1.0, title: str = ""):
  """Solve mode's optimum t* (largest other logit when S is held at 1) per
  subset against m, one strip per matrix with its medians (bars, joined);
  S can be the top m exactly where t* < threshold (dashed). curves: label
  -> records of `topm.summarize` with per-trial `upper_bound` and
  `bracket_closed`; subsets with t* = -inf (a ray) are counted in the
  legend."""
  fig, ax = plt.subplots(figsize=(6.5, 4))
  rng = np.random.default_rng(0)
  for k, (label, records) in enumerate(curves.items()):
    t_per_m = [np.array([x["upper_bound"] for x in r["trials_detail"]
                         if x.get("bracket_closed")]) for r in records]
    ms = [r["m"] for r in records]
    span = min(np.diff(ms)) if len(ms) > 1 else 1.0
    rays = sum(int(np.sum(t == -np.inf)) for t in t_per_m)
    shift = span * (k - (len(curves) - 1) / 2) * 0.2
    for i, (m, t) in enumerate(zip(ms, t_per_m)):
      finite = t[np.isfinite(t)]
      ax.scatter(m + shift + span * rng.uniform(-0.06, 0.06, finite.size),
                 finite, s=10, alpha=0.5, color=f"C{k}", label=(
                     label + (f" ({rays} with t* = -inf)" if rays else ""))
                 if i == 0 else None)
    kept = [(m + shift, np.median(t)) for m, t in zip(ms, t_per_m) if t.size]
    if kept:  # Medians: a line, and a bar at each m (one m: just the bar).
      ax.plot(*zip(*kept), "_-", color=f"C{k}", markersize=22, lw=1)
  ax.set_xticks(sorted({r["m"] for recs in curves.values() for r in recs}))
  ax.axhline(threshold, ls="--", color="k", lw=1,
             label="threshold: selectable below")
  ax.set_xlabel("m (tokens held at logit 1)")
  ax.set_ylabel("t* = min over x of the largest other logit")
  ax.set_title(title or "Optimum t* of the top-m LP per subset")
  ax.legend(fontsize=8)
  return fig
