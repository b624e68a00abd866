"""The main job's report: `python -m train.report` (see __main__.py).

  runner           run(config, outdir): sections -> report.md, results.json
  section          what a section returns, and the helpers sections share
  seed001_bounds   Table 1, Figure 2, Figure 5, Prop. 2, Corollary 3
  seed001_lp       Figures 1 and 3, Appendix D, trained vs random (the LP)
  seed001_lp_claims  their ledger rows
  seed001_trained  Appendices A, D, E on a trained head
  seed002          the gradient bottleneck on the probe model
  lowrank          seed 002 Fig. 1: its runs, statistic, section, verdict
  spamlang         seed 002 Fig. 14: its runs, section, verdict
  seed003          probability encoding, editing, removal, frequency
  seed004          the thesis models trained briefly, story completions
  real_llm         every probe on real LLMs side by side
  training_runs    run folders (run_dir), the report's overrides, the
                   probe model's run
  claim, ledger    the claims ledger: Verdict, Claim; the rows (each
                   module above exports its CLAIMS)
"""
