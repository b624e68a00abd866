"""The main job's report: `python -m train.report` (see __main__.py).

  runner           run(config, outdir): sections -> report.md, results.json
  section          what a section returns, and the helpers sections share
  seed001_bounds   Table 1, Figure 2, Figure 5, Prop. 2, Corollary 3
  seed001_lp       Figures 1 and 3, Appendix D, trained vs random (the LP)
  seed001_trained  Appendices A, D, E on a trained head
  seed002          gradient bottleneck, low-rank heads, SpamLang
  seed003          probability encoding, editing, removal, frequency
  seed004          the thesis models trained briefly, story completions
"""
