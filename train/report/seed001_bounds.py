"""Report sections for seed 001's closed-form half (Sections 4-5, App. B-C)."""

from __future__ import annotations

import numpy as np

from bottleneck import bounds, models, prescribed, separation, signrank
from bottleneck import simulate as simulate_lib
from bottleneck.io import cli, plots
from train.report import claim
from train.report import seed001_bounds_rows as rows
from train.report.section import Section, figure, table


def opening(row: claim.Row, says: str, check: bool = False) -> str:
  """A section's opening sentence from its own ledger row (the same
  verdict: reproduced reads 'Agrees', too small to speak 'Cannot tell');
  `check`: the row is a consistency check that cannot disagree."""
  word = {claim.REPRODUCED: claim.SMALLER,
          claim.TOO_SMALL: claim.CANNOT}.get(row.verdict, row.verdict)
  why = f". {row.why[0].upper()}{row.why[1:]}" if row.why else ""
  devs = "".join(f" Deviation: {d}." for d in row.deviations)
  return claim.markdown(claim.Verdict(
      word, row.ours + why + "." + devs,
      says + (", a consistency check that cannot disagree" if check else "")))


def table1(config, outdir: str) -> Section:
  """Table 1 (Appendix C) in every closed form, and Figure 2."""
  records = [dict(r, note=row.note) for r, row in zip(
      bounds.table(models.TABLE1, config.threshold, "gumbel"), models.TABLE1)]
  matches = {f: sum(r[f"m_{f}"] == r["m_paper"] for r in records)
             for f in bounds.FORMS}
  best = max(matches, key=matches.get)
  fig_rows = models.lookup(",".join(models.FIGURE2_KEYS))
  excess = [r["m_exact"] - r["m_paper"] for r in records]
  beyond = [r["m_rowspace_exact"] - r["m_exact"] for r in records]
  verdict = (f"**The {best} form reproduces Table 1**" if matches[best] ==
             len(records) else f"The {best} form matches the most rows")
  if min(excess) >= 0 and min(beyond) >= 0:
    reading = ("more still: the paper's independence approximation "
               "undershoots")
  else:
    reading = (f"{min(beyond)} to {max(beyond)} more than the exact form: "
               "the approximation is not uniformly below the exact law")
  body = "\n\n".join([
      f"m* = largest m with P >= {config.threshold}, per closed form "
      "(`bottleneck.bounds`). Rows reproduced exactly: " + ", ".join(
          f"{f} {n}/{len(records)}" for f, n in matches.items()) +
      f". {verdict}; the exact form Phi^(N-m) gives {min(excess)} to "
      f"{max(excess)} more tokens than the paper, and the exact law of the "
      f"row-space event (ours) {reading}.",
      (rows.mislabels(records) or "No row of the paper is flagged.").replace(
          "the paper's", "The paper's", 1) + ".",
      table(records, ["model", "N", "d", "m_paper", "m_gumbel", "m_exact",
                      "m_rowspace_exact", "note"]),
      figure(plots.figure2(fig_rows, config.threshold, "gumbel"), outdir,
             "figure2_bounds.png", "Corollary 1's probability that any m "
             "tokens can be the top m, per model of Table 1; dots mark m*."),
  ])
  return Section("Table 1 and Figure 2: closed-form m* for 22 models", body,
                 {"rows": records, "rows_matching_paper": matches,
                  "threshold": config.threshold},
                 ["figure2_bounds.png"])


def figure5(config, outdir: str) -> Section:
  """Figure 5 (Appendix B): simulation vs closed forms at one size."""
  c = config.figure5
  m_values = cli.parse_int_list("figure5.m", c.m)
  sim = simulate_lib.simulate(c.N, c.d, m_values, c.trials, config.seed,
                              c.method, progress=True)
  records = [dict(r, selected=int(round(r["fraction"] * r["trials"])))
             for r in sim.records()]
  thr = config.threshold
  m_sim = bounds.empirical_m_star(m_values, sim.fraction(), thr)
  m_star = {f: int(bounds.m_star(c.N, c.d, thr, f)) for f in bounds.FORMS}
  z = [(r["fraction"] - r["bound_rowspace_exact"]) /
       max(np.sqrt(r["bound_rowspace_exact"] *
                   (1 - r["bound_rowspace_exact"]) / r["trials"]), 1e-12)
       for r in records if r["bound_rowspace_exact"] is not None]
  above = sum(r["fraction"] + 2 * r["stderr"] >= r["bound"] for r in records)
  numbers = {"N": c.N, "d": c.d, "method": c.method, "records": records,
             "m_star_simulation": m_sim, "m_star_closed_form": m_star,
             "max_abs_z_vs_rowspace_exact": float(np.max(np.abs(z))),
             "m_above_paper_bound": above, "threshold": thr}
  br = rows.brackets(records)
  numbers["m_star_range"] = list(rows.m_star_range(br, thr))
  lines = [
      opening(rows.read_figure5(numbers, None), "Fig. 5 / App. B (0.99 at m "
              "= 28 by simulation, the bound slightly under it)"),
      f"Random {c.N}x{c.d} Gaussian A, {c.trials} trials per m "
      f"(`{c.method}` sampler, seed {config.seed}). Probability {thr} is "
      f"reached up to m = **{m_sim}** by simulation, m = {m_star['exact']} by "
      f"the paper's closed form (Gumbel form {m_star['gumbel']}), m = "
      f"{m_star['rowspace_exact']} by the exact row-space law. The paper "
      "reports 28 (simulation) vs 27 (closed form).",
      f"Simulation minus exact law: max |z| = {np.max(np.abs(z)):.2f} over "
      f"{len(z)} values of m (Monte-Carlo error only if |z| <~ 3). "
      f"Simulation >= paper bound (within 2 s.e.) at {above}/{len(records)} "
      "m values.",
  ]
  if c.check_trials:
    other = "matrix" if c.method == "projected" else "projected"
    check = simulate_lib.simulate(c.N, c.d, m_values, c.check_trials,
                                  config.seed + 1, other)
    diff = np.abs(check.fraction() - sim.fraction())
    se = np.sqrt(sim.fraction() * (1 - sim.fraction()) / c.check_trials)
    numbers["cross_check"] = {"method": other, "trials": c.check_trials,
                              "fraction": check.fraction().tolist(),
                              "max_abs_diff": float(diff.max())}
    lines.append(f"Cross-check with the `{other}` sampler ({c.check_trials} "
                 f"trials): max |difference| {diff.max():.3f} (its s.e. up to "
                 f"{se.max():.3f}).")
  cols = ["m", "selected", "trials", "fraction", "ci95_lo", "ci95_hi",
          "bound", "bound_gumbel", "bound_rowspace_exact"]
  shown = [dict(r, ci95_lo=b["lo"], ci95_hi=b["hi"])
           for r, b in zip(sorted(records, key=lambda r: r["m"]), br)]
  lines += [table(shown, cols),
            figure(plots.simulation_vs_bounds(c.N, c.d, records), outdir,
                   "figure5_simulation.png", "Monte-Carlo fraction of random "
                   "matrices where the row-space embedding selects S, "
                   "against the closed forms (the table above gives each "
                   "point's 95 % Clopper-Pearson interval).")]
  return Section("Figure 5: simulation vs closed forms (Appendix B)",
                 "\n\n".join(lines), numbers, ["figure5_simulation.png"])


def prescribed_probabilities(config, outdir: str) -> Section:
  """Proposition 2 / eq. (17) on a random matrix, verified in float64."""
  del outdir
  c = config.prescribed
  rng = np.random.default_rng(config.seed)
  a = rng.standard_normal((c.N, c.d))
  records = []
  for m in cli.parse_int_list("prescribed.m", c.m):
    reports = []
    for _ in range(c.subsets):
      subset = rng.choice(c.N, size=m, replace=False)
      p = rng.uniform(0.1, 1.1, size=m)
      emb = prescribed.embedding(a, subset, p, c.eps, c.delta)
      reports.append(prescribed.verify(a, subset, emb.x, p, c.eps, c.delta))
    holds = [r for r in reports if r["event_holds"]]
    records.append({
        "m": m, "subsets": c.subsets, "scale_s": prescribed.scale(
            c.N, m, c.eps, c.delta),
        "event_holds": len(holds),
        "ok_when_event_holds": sum(r["ok"] for r in holds),
        "max_rest_mass_when_holds": max((r["rest_mass"] for r in holds),
                                        default=None),
        "max_ratio_error": max(r["ratio_rel_error"] for r in reports),
        "p_bound_eq11": float(_prop2_bound(c.N, c.d, m, c.eps))})
  numbers = {"records": records}
  body = "\n\n".join([
      opening(rows.read_prop2(numbers, None), "Prop. 2 (prescribed "
              "ratios with mass < delta off S whenever its event holds; the "
              "event at least as likely as eq. (11))"),
      f"Random {c.N}x{c.d} A; targets U[0.1, 1.1] normalised (Section 6); "
      f"eps = {c.eps}, delta = {c.delta}; s from eq. (17); x = s xbar in the "
      "row space of A_S (eq. 14). `event_holds`: every other unscaled logit "
      "<= 1 - eps (Prop. 2's event); when it holds, `ok` checks in float64 "
      "that the ratios on S are exact and the mass off S is < delta. "
      "`p_bound_eq11`: the paper's bound (11) on the event's probability "
      "(with min y = 1).",
      table(records)])
  return Section("Proposition 2: prescribed top-m probabilities", body,
                 numbers)


def _signrank_reading(exhaustive, sweeps, exact_only, random_base) -> str:
  worst = min(r["worst_exact_log10_margin"] for r in sweeps + exact_only)
  n_exh = sum(r["subsets"] for r in exhaustive)
  n_cert = sum(r["certified"] for r in exhaustive)
  margins = [r["median_margin"] for r in random_base if r["median_margin"]]
  random_txt = (f"median normalised margins {min(margins):.2g} to "
                f"{max(margins):.2g}" if margins else "no measured margins")
  return (f"Reading: float64 certified {n_cert}/{n_exh} subsets of the "
          "exhaustive cases, but the construction's exact normalised margins "
          f"fall to 10^{worst:.0f} in these sweeps: every chosen angle sits "
          "2 pi / N from an unchosen one, so a degree-m polynomial separates "
          "them only by ~(pi/N)^2 times products of the other factors. Random "
          "matrices of the same width select far fewer tokens (the `m` "
          f"column) but robustly ({random_txt}). Selecting *every* subset at "
          "d = 2m + 1 is bought with precision that no float model has.")


def _prop2_bound(N, d, m, eps):
  """Eq. (11) with min_i ybar_i = 1 and |ybar| ~ sqrt(m): Phi^{N-m}((1-eps)z)."""
  if m >= d - 3:
    return float("nan")
  z = (1 - eps) / np.sqrt(m * float(bounds.variance(d, m)))
  return np.exp((N - m) * float(bounds.log_ndtr(z)))


def signrank_construction(config, outdir: str) -> Section:
  """Corollary 3: the moment-curve construction and where float64 fails."""
  c = config.signrank
  exhaustive = [signrank.sweep(N, m, signrank.all_subsets(N, m))
                for N, m in c.exhaustive]
  sweeps = []
  for m in c.m:
    for N in sorted({3 * m + 1, *c.N}):
      sweeps.append(signrank.sweep(
          N, m, signrank.random_subsets(N, m, c.subsets, config.seed + m)))
  exact_only = [signrank.sweep(N, m, signrank.random_subsets(
      N, m, max(1, c.subsets // 4), config.seed), check_float64=False)
                for N, m in c.exact_only]
  random_base = []
  for m in c.m:  # Same width d = 2m + 1: what a random matrix can select.
    d = 2 * m + 1
    m_rand = int(bounds.m_star(1000, d, config.threshold, "rowspace_exact"))
    if m_rand >= 1:
      rec = signrank.random_rowspace_margins(1000, d, m_rand, c.random_trials,
                                             config.seed)
      random_base.append(dict(rec, m_construction=m))
  lower = lower_bound_checks(c.exhaustive, c.lower_gaussians, config.seed)
  certified_all = [r for r in sweeps if r["certified"] == r["subsets"]]
  largest = {}
  for r in certified_all:
    key = "3m+1" if r["N"] == 3 * r["m"] + 1 else str(r["N"])
    largest[key] = max(largest.get(key, 0), r["m"])
  example_n, example_m = 24, 4
  example = np.array([1, 2, 9, 17])
  fig_example = figure(plots.signrank_example(example_n, example_m, example),
                       outdir, "signrank_example.png", "The moment-curve "
                       "construction for one subset: the trigonometric "
                       "polynomial is positive exactly on the chosen tokens.")
  fig_break = figure(plots.margin_breakdown(sweeps + exact_only), outdir,
                     "signrank_margins.png", "Worst exact margin of the "
                     "construction against m: it falls below float64's "
                     "resolution as m grows.")
  cols = ["N", "m", "d", "subsets", "certified", "worst_exact_log10_margin",
          "worst_float64_margin"]
  numbers = {"exhaustive": exhaustive, "random_subsets": sweeps,
             "exact_only": exact_only, "largest_certified_m": largest,
             "random_matrix_baseline": random_base, "lower_bound": lower}
  body = "\n\n".join([
      opening(rows.read_cor3_upper(numbers, None), "Cor. 3's d* <= 2m + 2 "
              "(every m-subset selectable at d = 2m + 1)", check=True),
      opening(rows.read_cor3_lower(numbers, None), "Cor. 3's d* >= 2m",
              check=True),
      "Rows on the trigonometric moment curve (d = 2m + 1, inside Corollary "
      "3's 2m <= d* <= 2m + 2); for each subset, a degree-<=m trigonometric "
      "polynomial positive exactly on arcs around the chosen angles gives "
      "the embedding (`bottleneck.signrank`). `certified`: float64 proves "
      "the order with a rigorous rounding-error bound.",
      "**Exhaustive** (every m-subset):", table(exhaustive, cols),
      "**Random subsets:**", table(sweeps, cols),
      "Largest m certified for all sampled subsets, by N: " + ", ".join(
          f"N={k}: m={v}" for k, v in sorted(largest.items())) + ".",
      "**Exact margins only** (float64 cannot certify these):",
      table(exact_only, ["N", "m", "d", "subsets",
                         "worst_exact_log10_margin"]),
      "**Random Gaussian 1000 x d matrices at the same widths**: `m` is the "
      f"row-space m* (P >= {config.threshold}, exact law), `fraction` its "
      "simulated frequency, `median_margin` the normalised margin "
      "(1 - max other logit) / max |logit| of the selected subsets:",
      table(random_base, ["N", "d", "m_construction", "m", "trials",
                          "fraction", "median_margin"]),
      _signrank_reading(exhaustive, sweeps, exact_only, random_base),
      "**Lower bound d* >= 2m** at the exhaustive cases' sizes: at d = 2m - "
      "1, the Radon partition of 2m + 1 rows (`bottleneck.separation`) "
      "gives an m-subset whose convex hull meets the other rows' hull, so "
      "no embedding selects it; each certificate is checked in rational "
      "arithmetic on the stored float64 matrix (`certified`). Radon's "
      "theorem guarantees one for every width-(2m - 1) matrix: this checks "
      "the bound's mechanism on these matrices, it does not prove the "
      "bound.",
      table([dict(r, subset=r["certificate"]["subset"],
                  certified=r["certificate"]["certified"]) for r in lower],
            ["N", "m", "d", "matrix", "subset", "certified"]),
      fig_example, fig_break])
  return Section("Corollary 3: sign-rank construction (d = 2m + 1)", body,
                 numbers, ["signrank_example.png", "signrank_margins.png"])


def lower_bound_checks(cases, gaussians: int, seed: int) -> list[dict]:
  """Cor. 3's d* >= 2m at each (N, m) with N >= 3m + 1: the construction's
  rows at degree m - 1 (d = 2m - 1) and `gaussians` random Gaussian
  N x (2m - 1) matrices, each with a Radon certificate that an m-subset is
  not selectable (bottleneck.separation), checked exactly."""
  rng = np.random.default_rng(seed)
  out = []
  for n, m in cases:
    if n < 3 * m + 1:
      continue
    mats = [("construction, degree m - 1", signrank.moment_curve_matrix(
        n, m - 1) if m > 1 else np.ones((n, 1)))]
    mats += [(f"Gaussian #{i + 1}", rng.standard_normal((n, 2 * m - 1)))
             for i in range(gaussians)]
    for name, a in mats:
      cert = separation.radon(a, m)
      out.append({"N": n, "m": m, "d": 2 * m - 1, "matrix": name,
                  "certificate": separation.as_record(
                      cert, separation.check(a, cert))})
  return out


# The claims ledger's rows (train/report/ledger.py); the readers are in
# train/report/seed001_bounds_rows.py.


CLAIMS = (
    claim.on("001", "Table 1", "m* for 22 models (closed forms; the paper's "
             "labels include 'Falcon-40B' twice)", "table1", rows.read_table1),
    claim.on("001", "Fig. 5 / App. B", "0.99 reached at m = 28 by the "
             "simulation, m = 27 by the closed form (Table 1: 26); the bound "
             "slightly under the simulation", "figure5", rows.read_figure5),
    claim.on("001", "Prop. 2 / eq. (11), (17)", "x = s xbar (s from eq. 17) "
             "gives the prescribed ratios and mass <= delta off S whenever "
             "the other unscaled logits are <= 1 - eps; that event has "
             "probability >~ eq. (11)", "prescribed", rows.read_prop2),
    claim.on("001", "Cor. 3 (d* <= 2m + 2)", "every m-subset of N >= 3m "
             "+ 1 tokens selectable at d = 2m + 1 (sign-rank construction); "
             "GPT-2's size specifies its top 383 tokens", "signrank",
             rows.read_cor3_upper, can_disagree=False),
    claim.on("001", "Cor. 3 (d* >= 2m)", "no N x (2m - 1) matrix selects "
             "every m-subset (N >= 3m + 1)", "signrank", rows.read_cor3_lower,
             can_disagree=False),
)
