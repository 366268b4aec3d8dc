import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("MPLBACKEND", "Agg")
if (ROOT.parent / "shared" / "data").is_dir():  # the reference copies of the real data sets, when they are here
    os.environ.setdefault("BIASAMP_DATA", str(ROOT.parent / "shared" / "data"))


@pytest.fixture
def data_root():
    "The real data sets; the test is skipped when they are absent."
    from biasamp_nb.datasets import data_dir
    d = data_dir()
    if d is None:
        pytest.skip("real data sets absent (set BIASAMP_DATA)")
    return d
