"""Exact, explained and fast bias-amplification metrics: co-occurrence, multi-attribute, predictability, associations and captioning.

Modules:

- `biasamp_nb.caption_scores`: How close generated captions come to human ones, computed the way the COCO caption evaluation does, so that a model's quality can be reported beside its gender outcomes.
- `biasamp_nb.coverage`: How often each interval method covers a metric's true value, on simulated data whose amplification is known; the defaults of the metrics are chosen from it."""

__version__ = "0.1.0"

# The public names, each imported from its module when first used (PEP 562): `import biasamp_nb` stays instant,
# and a script that uses one metric family loads only what that family needs.
_PUBLIC = {
    "core": "Labels Counts Result to_labels check_inputs counts",
    "calibration": "calibrate_thresholds apply_thresholds",
    "cooccurrence": "bias_score ba_mals ba_mals_from_bias ba_directional",
    "multi": "task_combinations set_indicator multi_mals multi_directional",
    "predictive": "leakage_amplification dpa predictability equalize_quality",
    "associations": "association association_gap top_associations",
    "captions": "caption_gender image_gender gender_outcomes gender_divergence error_and_ratio tokenize caption_ba_inputs",
    "caption_scores": "caption_quality",
    "caption_leakage": "lic image_conditioned_lic mask_gender_words judge_consistency",
    "coco_gb": "bias_ratios coco_tables coco_gb_v1 coco_gb_v2",
    "attention": "pointing_game attention_sum soft_mask masked_image gaic_loss",
    "scenes": "make_scenes scene_layout render_scenes scene_splits",
    "scale": "StreamingCounts duckdb_counts duckdb_set_counts dask_counts",
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
        if k == "return" or d["kind"] in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD) and not d["docment"]:
            continue
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
