"""Every notebook runs top to bottom (nbdev's runner, skipping the cells flagged in tst_flags).

Where ../shared/upstream holds the original files, the notebooks get their real data the way a user does: from an
empty cache, downloaded from a mirror of GitHub's raw-file host on 127.0.0.1, checked and converted."""
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


UPSTREAM = ROOT.parent / "shared" / "upstream"


@pytest.fixture(scope="session")  # once per worker, whatever runs between its notebooks
def data_env(tmp_path_factory):
    "The environment of the notebook runs: an empty data cache and a local mirror, when the originals are here."
    if not UPSTREAM.is_dir():
        yield {}
        return
    from biasamp_nb.fetch import local_mirror
    with local_mirror(UPSTREAM) as m:
        yield {"BIASAMP_DATA": str(tmp_path_factory.mktemp("data")), "BIASAMP_DATA_URL": m.url}


def test_notebooks_found():
    assert len(NBS) >= 5, NBS


@pytest.mark.parametrize("nb", NBS, ids=[p.name for p in NBS])
def test_notebook(nb, data_env):
    env = {**os.environ, "MPLBACKEND": "Agg", **data_env}
    r = subprocess.run([sys.executable, "-c", RUN, str(nb)], cwd=ROOT / "nbs", env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"{nb.name} failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"


def test_a_metric_notebook_runs_in_a_jupyter_kernel(tmp_path, data_env):
    "What a user of the notebooks extra does: open a page and run it in JupyterLab's kernel (here through nbclient)."
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(ROOT / "nbs" / "10_cooccurrence.ipynb", as_version=4)
    old = dict(os.environ)
    os.environ.update(MPLBACKEND="Agg", **data_env)
    try: NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "nbs")}}).execute()
    finally: os.environ.clear(); os.environ.update(old)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors and sum(c.cell_type == "code" for c in nb.cells) > 20
