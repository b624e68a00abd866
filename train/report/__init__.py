"""The main job's report: `python -m train.report` (see __main__.py).

  runner           run(config, outdir): sections -> report.md, results.json
  section          what a section returns, and the helpers sections share
  seed001_bounds   Table 1, Figure 2, Figure 5, Prop. 2, Corollary 3
  seed001_bounds_rows  their ledger rows (brackets, Cor. 3's two bounds)
  seed001_lp       Figures 1 and 3, Appendix D (the LP)
  seed001_lp_trained  trained vs random heads (Figure 1, solid vs dotted)
  seed001_lp_claims  their ledger rows
  seed001_lp_stats   their tests: m*'s Clopper-Pearson bracket, Fisher
                   per m with Holm and its exact power
  seed001_trained  Appendices A, D, E on a trained head
  seed002          the gradient bottleneck on the probe model
  lowrank          seed 002 Fig. 1: its runs, section, verdict
  lowrank_speed    its statistic: the speed-up per seed, its ends
  lowrank_order    §3.1's ordering: every D against its neighbour
  spamlang         seed 002 Fig. 14: its arms' runs, section, figures
  spamlang_rows    its control-based row (`assess`)
  spamlang_effects which settings make it harder with V; tied vs untied
  controls         both sweeps' expressivity controls (free_context)
  seed003          probability encoding, editing, removal, frequency
  seed003_rows     seed 003's ledger rows on every subject
  seed004          the thesis models trained briefly, story completions
  thesis_eval      per-window losses, the unigram line, parameter counts
  thesis_completions  the completions scored against the originals (loss,
                   the unigram's, exact match, common prefix)
  thesis_stats     the thesis's rows: paired bootstrap, learned-or-not
  real_llm         every probe on real LLMs side by side
  real_llm_rows    their ledger rows (App. A, App. E, Fig. 1, eq. (10))
  intervals        t and regression intervals the rows share
  training_runs    run folders (run_dir), the report's overrides, the
                   probe model's run
  claim, ledger    the claims ledger: Verdict, Row (a row as a test),
                   Claim; results.json's `ledger` list (each module
                   above exports its CLAIMS)
"""
