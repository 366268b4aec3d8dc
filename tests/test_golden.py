"""Every public metric's value, interval and per-pair table on the bundled cases and seeded random inputs equals the
record in tests/golden/metrics.json (see tests/golden.py): code that moves must not move a number."""
import json

import pytest

from golden import CAPTIONS, RECORD, _norm, compare, compute, compute_captions


def test_metrics_equal_the_golden_record():
    pytest.importorskip("torch")  # the record includes torch inputs
    want = json.loads(RECORD.read_text())
    diffs = compare(_norm(compute()), want)
    assert not diffs, f"{len(diffs)} differences from the golden record, e.g.\n" + "\n".join(diffs[:20])


def test_caption_metrics_equal_their_record():
    # LIC and DBAC, their intervals and every draw of their tests (the draws retrain the readers on reordered captions):
    # recorded before the draws moved to worker processes and the corpus vectors were learned once per call
    diffs = compare(_norm(compute_captions()), json.loads(CAPTIONS.read_text()))
    assert not diffs, f"{len(diffs)} differences from the captions record, e.g.\n" + "\n".join(diffs[:20])


def test_the_comparison_can_fail():
    rec = {"a": {"value": 0.25, "per_pair": {"data": [[1, "w", 0.5]]}}}
    assert compare(rec, rec) == []
    assert compare({"a": {"value": 0.2500001, "per_pair": {"data": [[1, "w", 0.5]]}}}, rec)
    assert compare({"a": {"value": 0.25, "per_pair": {"data": [[1, "m", 0.5]]}}}, rec)
