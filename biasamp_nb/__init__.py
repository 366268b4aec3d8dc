__version__ = "0.1.0"

from .core import Labels, Counts, Result, to_labels, check_inputs, counts, calibrate_thresholds, apply_thresholds
from .cooccurrence import bias_score, ba_mals, ba_mals_from_bias, ba_directional
from .multi import task_combinations, set_indicator, multi_mals, multi_directional
from .predictability import leakage_amplification, dpa, predictability, equalize_quality
from .association import association, association_gap, top_associations
