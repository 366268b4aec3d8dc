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


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: ignored without it
def pytest_xdist_make_scheduler(config, log):
    "With `-n`, the docs tests on one worker (they share one built site), every other test dealt out alone."
    # xdist's own loadgroup mark is silently ignored under pytest's structured node ids (pytest-xdist issue 1386)
    if config.getvalue("dist") != "load": return None
    from xdist.scheduler import LoadScopeScheduling

    class DocsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return nodeid.split("::")[0] if nodeid.split("::")[0].endswith("tests/test_docs.py") else nodeid
    return DocsTogether(config, log)
