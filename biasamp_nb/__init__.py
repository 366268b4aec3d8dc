"""Exact, explained and fast bias-amplification metrics: co-occurrence, multi-attribute, predictability, associations and captioning.

Modules:

- `biasamp_nb.associations`: nPMI and nine other association metrics between identity labels and every other label, computed from counts of a model's predictions alone (Aka et al. 2021).
- `biasamp_nb.attackers`: The models that predictability metrics train to guess one variable from another: scikit-learn estimators fitted one label at a time, a row budget for slow ones, and a small PyTorch network.
- `biasamp_nb.attention`: Does a model look at the person when it says "woman" or "man", and does it look for an attribute where it looks for the group? The Pointing Game, Attention Sum and Attention-IoU measure it; the guided-attention (GAIC) soft mask and losses train it.
- `biasamp_nb.calibration`: Per-label thresholds that turn a model's scores into 0/1 predictions with as many positives as the validation split has.
- `biasamp_nb.caption_amplification`: Do a model's captions reveal the group from the rest of the caption, or the objects from the group, more than human captions of the same images do? Nair, Tokas and Kerner's DBAC in both directions, with vocabulary alignment, the Bayes correction, trials and a test of no amplification.
- `biasamp_nb.caption_leakage`: How well an image's gender can be guessed from its caption with every gender word masked — from human captions (LIC_D) and model captions (LIC_M) — and a variant that first accounts for what the image itself reveals.
- `biasamp_nb.caption_scores`: How close generated captions come to human ones, computed the way the COCO caption evaluation does, so that a model's quality can be reported beside its gender outcomes.
- `biasamp_nb.captions`: Which gender a caption names, which gender an image shows according to its human captions, how often a captioning model gets it right, wrong or stays neutral for each gender, and how differently it treats them.
- `biasamp_nb.checks`: The checks every public function runs on its options, and the plain conversions of a user value to numpy that name the argument when they fail.
- `biasamp_nb.cli`: The command line: one function per command, whose arguments are its options and whose comments are its help.
- `biasamp_nb.coco_gb`: Tang et al.'s two splits for testing captioners where context cannot stand in for gender: v1 balances every object between women and men; v2 gives the test split the opposite gender–context pairing of the training split.
- `biasamp_nb.cooccurrence`: The bias score, BA_MALS and directional bias amplification BA→ in both directions, computed from counts.
- `biasamp_nb.core`: Validated 0/1 label matrices, the checked inputs of a metric and the additive co-occurrence counts every count metric reads.
- `biasamp_nb.counting`: The one product every count metric reads, [A, Â, 1]ᵀ[T, T̂, 1]: compiled for one-byte and CSR inputs, BLAS blocks otherwise, float64 for torch, and every compiled call within bounds proved right before it.
- `biasamp_nb.coverage`: How often each interval method covers a metric's true value, on simulated data whose amplification is known; the defaults of the metrics are chosen from it.
- `biasamp_nb.datasets`: The bundled examples every notebook reuses — the COMPAS count tables, the hiring case, the imSitu pair — and loaders for the real data sets.
- `biasamp_nb.distributed`: The report's count metrics with every interval, noise floor, p-value and per-pair q-value, on rows spread over a Dask cluster: the same numbers as one process gives with row-keyed draws.
- `biasamp_nb.docs`: What the documentation build adds to nbdev's processing of the notebooks.
- `biasamp_nb.files`: Writing the files a report is made of: whole or not at all, in a folder swapped in at once, with every user string made inert for Markdown, HTML, terminals and spreadsheets.
- `biasamp_nb.findings`: Which (group, task) pairs move beyond noise and which way, one test over all of them that a diluted mean cannot hide, and which combinations of tasks are explained by their parts.
- `biasamp_nb.fitting`: How an attacker is fitted exactly and fast: on the table of its distinct inputs, as a tree grown from counts, or on the distinct (input, class) pairs of its rows.
- `biasamp_nb.intervals`: Bootstrap and jackknife weights over rows, and four intervals read off the draws of any statistic, one or many at once, on plain arrays.
- `biasamp_nb.long_counts`: The engine under the Parquet readers: records `(row_id, label, side)` counted into [A, Â, 1]ᵀ[T, T̂, 1] without building indicator matrices, by a compiled kernel or by numpy.
- `biasamp_nb.metrics`: The complete registry: importing this module loads every metric family, so the report, the command line, streaming counts, the torchmetrics metric and the coverage study see every registered metric.
- `biasamp_nb.multi`: Multi_MALS and Multi→ (Zhao, Andrews and Xiang 2023): amplification over combinations of task labels, which single-label metrics cannot see.
- `biasamp_nb.predictive`: How much better an attacker can guess one variable from the other in a model's predictions than in the data — leakage amplification (Wang et al. 2019) and directional predictability amplification, DPA (Tokas et al.).
- `biasamp_nb.registry`: One registration per count metric, and the template that turns counts into a `Result` with its bootstrap interval.
- `biasamp_nb.report`: One call runs every applicable metric on a data set and writes a Markdown and HTML report with tables and plots; the `biasamp` command does the same from the shell.
- `biasamp_nb.row_keys`: Bootstrap weights and swap coins that are a function of (seed, draw, row id) alone: the same on one machine or spread over a cluster's partitions, to the integer.
- `biasamp_nb.scale`: Every count-based metric here depends only on additive counts, so counting is the part that must scale: batch by batch inside an evaluation loop, from Parquet files larger than memory with DuckDB, or across a cluster with Dask — all giving the same counts, and so the same metric values, exactly.
- `biasamp_nb.scenes`: Small images of a person among objects, where the person's group is visible only on the person and the objects' co-occurrence with each group is a dial — the test bed for training classifiers and captioners whose bias we can cause and measure.
- `biasamp_nb.streaming`: A running count of [A, Â, 1]ᵀ[T, T̂, 1] over batches — numpy, pandas, sparse or torch tensors on their own device — whose metrics equal those of the whole data set.
- `biasamp_nb.subsets`: The machinery under the Multi metrics: every combination of up to `max_size` tasks that a row carries, listed and counted by a compiled kernel, with its memory estimated before it is spent.
- `biasamp_nb.tracking`: A `torchmetrics` metric that keeps the additive counts of BA→, Multi→ or an association gap as its states, so amplification can be followed batch by batch inside a training loop, on the accelerator and across processes, with the same value as the in-memory functions.
- `biasamp_nb.train.captioner`: A small Show-Attend-Tell captioner trained on biased scenes, and the debiasing variants of Tang et al. — Balanced, UpWeight, PixelSup, GAIC and GAICes — measured with the captioning notebooks on i.i.d., balanced and anti-stereotypical splits.
- `biasamp_nb.train.classifier`: A small CNN learns objects and the person's group from biased scenes; masking the person shows how much of its group prediction comes from context, and the co-occurrence, multi-attribute and predictability metrics measure what that does.
- `biasamp_nb.train.common`: PyTorch on demand, the device, checked settings, resumable checkpoints and saved results — what the classifier and the captioner trainers both use.
- `biasamp_nb.train.studies`: The two training experiments of the papers, run as they were designed on synthetic scenes: a model trained per masking condition on a balanced and an unbalanced half with an attribution score, and single-attribute mitigations measured by single- and multi-attribute amplification over seeds and epochs."""

__version__ = "0.1.0"

# The public names, each imported from its module when first used (PEP 562): `import biasamp_nb` stays instant,
# and a script that uses one metric family loads only what that family needs.
_PUBLIC = {
    "results": "Result",
    "core": "Labels Counts to_labels check_inputs counts",
    "calibration": "calibrate_thresholds apply_thresholds",
    "cooccurrence": "bias_score ba_mals ba_mals_from_bias ba_directional",
    "combinations": "task_combinations set_indicator",
    "multi": "multi_mals multi_directional",
    "predictive": "leakage_amplification dpa",
    "trials": "predictability",
    "quality": "equalize_quality",
    "associations": "association association_gap top_associations",
    "captions": "caption_gender image_gender gender_outcomes gender_divergence error_and_ratio tokenize "
                "caption_ba_inputs",
    "caption_scores": "caption_quality",
    "caption_leakage": "lic image_conditioned_lic mask_gender_words judge_consistency",
    "caption_amplification": "dbac corpus_vectors align_vocabulary caption_objects",
    "coco_gb": "bias_ratios coco_tables coco_gb_v1 coco_gb_v2",
    "attention": "pointing_game attention_sum attention_iou heatmap_score mask_score minmax_maps soft_mask "
                 "masked_image gaic_loss",
    "scenes": "make_scenes scene_layout render_scenes scene_splits",
    "streaming": "StreamingCounts",
    "scale": "duckdb_counts duckdb_set_counts dask_counts",
    "row_keys": "row_keyed_draws",
    "distributed": "dask_evaluate dask_association_gap",
    "report": "Audit cluster_audit",
    "tracking": "AmplificationMetric",
}
_WHERE = {name: mod for mod, names in _PUBLIC.items() for name in names.split()}
__all__ = list(_WHERE)

def _with_arguments(f):
    "Add the arguments (with their defaults and the comments beside them in the source) to the docstring help() shows."
    import inspect
    if not inspect.isfunction(f) or not f.__doc__ or "\n\nArguments:\n" in f.__doc__: return f
    try:
        from fastcore.docments import docments
        docs = docments(f, full=True)
    except Exception: return f  # no source to read (e.g. a frozen install): the one-line docstring stays
    lines = []
    for k, d in docs.items():
        if k == "return": continue
        if d["kind"] in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD) and not d["docment"]: continue
        default = "" if d["default"] is inspect.Parameter.empty else f" = {d['default']!r}"
        lines.append(f"    {k}{default}: {d['docment'] or ''}".rstrip(": "))
    if lines: f.__doc__ += "\n\nArguments:\n" + "\n".join(lines)
    return f


def __getattr__(name):
    if name not in _WHERE: raise AttributeError(f"module 'biasamp_nb' has no attribute {name!r}")
    from importlib import import_module
    value = _with_arguments(getattr(import_module(f".{_WHERE[name]}", __name__), name))
    globals()[name] = value
    return value


def __dir__(): return sorted(set(globals()) | set(__all__))
