"""Fetching the real data sets through a local mirror: checksums, conversions equal to the reference files, the cache,
offline mode, a corrupted byte, two processes at once, and a hostile pickle."""
import hashlib
import multiprocessing as mp
import os
import pickle
import shutil
from pathlib import Path

import pytest

from biasamp_nb.fetch import DATASETS, SOURCES, fetch, local_mirror, read_pickle_data

SHARED = Path(__file__).resolve().parents[2] / "shared"
UP, REF = SHARED / "upstream", SHARED / "data"
needs_shared = pytest.mark.skipif(not UP.is_dir(), reason="needs ../shared/upstream")


@needs_shared
def test_every_data_set_equals_the_reference_and_the_cache_answers_again(tmp_path):
    with local_mirror(UP) as m:
        fetch(home=tmp_path, base_url=m.url)
        n = m.requests
        assert n == len({(s["repo"], s["commit"], s["path"]) for e in SOURCES for s in e["sources"]})  # one per original
        for e in SOURCES:
            assert (tmp_path / e["file"]).read_bytes() == (REF / e["file"]).read_bytes(), e["file"]
        fetch(home=tmp_path, base_url=m.url)
        assert m.requests == n  # everything from the cache
    assert not list(tmp_path.rglob("*.tmp")) and not [p for p in tmp_path.rglob("tmp*") if p.is_file()]


@needs_shared
def test_a_corrupted_byte_is_refused_and_leaves_nothing(tmp_path):
    bad = tmp_path / "mirror"
    src = next(e for e in SOURCES if e["dataset"] == "mals")["sources"][0]
    f = bad / src["repo"] / src["commit"] / src["path"]
    f.parent.mkdir(parents=True)
    data = bytearray((UP / src["repo"] / src["commit"] / src["path"]).read_bytes()); data[100] ^= 1
    f.write_bytes(bytes(data))
    home = tmp_path / "home"
    with local_mirror(bad) as m, pytest.raises(ValueError, match="SHA256 hash of downloaded file"):
        fetch("mals", home=home, base_url=m.url)
    assert not [p for p in home.rglob("*") if p.is_file() and p.parent.name != ".notices"]


def test_offline_names_the_file_its_url_checksum_and_the_settings(tmp_path):
    with pytest.raises(ValueError) as e: fetch("compas", home=tmp_path, offline=True)
    src = next(e for e in SOURCES if e["dataset"] == "compas")["sources"][0]
    msg = str(e.value)
    for part in (src["path"], src["sha256"], f"https://raw.githubusercontent.com/{src['repo']}/{src['commit']}",
                 "offline=True", "BIASAMP_DATA_URL", "biasamp data download"):
        assert part in msg
    with pytest.raises(ValueError, match="no data set 'coco'; choose from"): fetch("coco", home=tmp_path)


def _fetch_in(home, url): fetch("coco_objects", home=home, base_url=url)


@needs_shared
def test_two_processes_fetching_at_once_leave_one_good_copy(tmp_path):
    with local_mirror(UP) as m:
        ps = [mp.get_context("spawn").Process(target=_fetch_in, args=(tmp_path, m.url)) for _ in range(2)]
        for p in ps: p.start()
        for p in ps: p.join(120)
    assert [p.exitcode for p in ps] == [0, 0]
    for f in DATASETS["coco_objects"]:
        assert (tmp_path / f).read_bytes() == (REF / f).read_bytes()
    left = [p for p in tmp_path.rglob("*") if p.is_file() and (p.name.endswith(".tmp") or p.name.startswith("tmp"))]
    assert not left


class _Hostile:
    def __reduce__(self): return (os.system, ("echo pwned",))


def test_a_hostile_pickle_is_refused(tmp_path):
    p = tmp_path / "bad.data"
    p.write_bytes(pickle.dumps([{"gender": [1, 0]}, _Hostile()], protocol=0))
    with pytest.raises(pickle.UnpicklingError, match="refused: the pickle names posix.system"): read_pickle_data(p)


@needs_shared
def test_the_data_command(tmp_path, capsys):
    from biasamp_nb.cli import main
    with local_mirror(UP) as m:
        assert main(["data", "download", "mals", "compas", "--home", str(tmp_path), "--base-url", m.url]) == 0
    out = capsys.readouterr()
    assert "mals comes from github.com/uclanlp/reducingbias" in out.err and "perceived" in out.err  # the notice
    assert main(["data", "verify", "--home", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert [l.split()[:4] for l in table.splitlines() if l.split()[:1] in (["mals"], ["compas"], ["imsitu"])] == \
        [["imsitu", "13", "4.02", "0"], ["mals", "2", "0.02", "2"], ["compas", "1", "2.55", "1"]]
    assert main(["data", "clear", "mals", "--home", str(tmp_path)]) == 0
    assert not list((tmp_path / "mals").glob("*.csv"))
    assert main(["data", "path", "--home", str(tmp_path)]) == 0 and str(tmp_path) in capsys.readouterr().out
    assert main(["data", "download", "coco", "--home", str(tmp_path)]) == 2
    assert "no data set 'coco'; choose from" in capsys.readouterr().err


def test_a_failed_download_names_the_url_and_the_settings_that_fix_it(tmp_path):
    import socket
    with socket.socket() as s: s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]  # a port nothing listens on
    with pytest.raises(ValueError) as e: fetch("compas", home=tmp_path, base_url=f"http://127.0.0.1:{port}")
    msg = str(e.value)
    for part in (f"could not download http://127.0.0.1:{port}/propublica/", "BIASAMP_DATA_URL", "base_url=",
                 "offline=True"):
        assert part in msg, part
