__version__ = "0.1.0"

from .core import Labels, Counts, Result, to_labels, check_inputs, counts, calibrate_thresholds, apply_thresholds
from .cooccurrence import bias_score, ba_mals, ba_mals_from_bias, ba_directional
from .multi import task_combinations, set_indicator, multi_mals, multi_directional
from .predictability import leakage_amplification, dpa, predictability, equalize_quality
from .association import association, association_gap, top_associations
from .captions import caption_gender, image_gender, gender_outcomes, gender_divergence, error_and_ratio, tokenize
from .lic import lic, image_conditioned_lic, mask_gender_words
from .coco_gb import bias_ratios, coco_tables, coco_gb_v1, coco_gb_v2
from .attention import pointing_game, attention_sum, soft_mask, masked_image, gaic_loss
from .scenes import make_scenes, scene_layout, render_scenes, scene_splits
from .scale import StreamingCounts, duckdb_counts, duckdb_set_counts, dask_counts
