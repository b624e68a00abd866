"""Registry of the main job's report sections, in report order."""

from train.sections import closed_form, probes, topm_lp, training

SECTIONS = {
    "table1": closed_form.table1,
    "figure5": closed_form.figure5,
    "prescribed": closed_form.prescribed_probabilities,
    "signrank": closed_form.signrank_construction,
    "figure1": topm_lp.figure1,
    "figure3": topm_lp.figure3,
    "natural": topm_lp.natural_targets,
    "trained": topm_lp.trained_vs_random,
    "training": training.training,
    "gradient": probes.gradient_bottleneck,
    "lowrank": probes.lowrank_sweep,
    "spamlang": probes.spamlang_sweep,
    "encoding": probes.encoding_section,
    "appendices": probes.appendices,
}
