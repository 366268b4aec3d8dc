"""Every notebook runs top to bottom (nbdev's runner, skipping the cells flagged in tst_flags)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NBS = sorted((ROOT / "nbs").glob("*.ipynb"))

RUN = """
import sys
from nbdev.config import get_config
from nbdev.test import test_nb
cfg = get_config()
flags = cfg.tst_flags.split() if isinstance(cfg.tst_flags, str) else list(cfg.tst_flags)
ok, secs = test_nb(sys.argv[1], skip_flags=flags, basepath=cfg.config_path)
sys.exit(0 if ok else 1)
"""


def test_notebooks_found():
    assert len(NBS) >= 5, NBS


@pytest.mark.parametrize("nb", NBS, ids=[p.name for p in NBS])
def test_notebook(nb):
    env = {**os.environ, "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, "-c", RUN, str(nb)], cwd=ROOT / "nbs", env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"{nb.name} failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
