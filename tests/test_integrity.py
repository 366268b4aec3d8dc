"""The data a user computes on: cached files used only when they match their checksum, data from the cache,
BIASAMP_DATA or an argument alone, names that cannot leave the data folder, a mirror that serves its own files."""
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from biasamp_nb.datasets import data_dir, data_file, load_mals, real_data
from biasamp_nb.fetch import SOURCES, fetch, local_mirror

SHARED = Path(__file__).resolve().parents[2] / "shared"
UP = SHARED / "upstream"
needs_shared = pytest.mark.skipif(not UP.is_dir(), reason="needs ../shared/upstream")
MALS = "mals/mals_coco_gender_ratio_dev.csv"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    "An empty cache named by BIASAMP_DATA, with a mirror of the originals."
    home = tmp_path / "cache"
    home.mkdir()
    monkeypatch.setenv("BIASAMP_DATA", str(home))
    if not UP.is_dir(): pytest.skip("needs ../shared/upstream")
    with local_mirror(UP) as m:
        monkeypatch.setenv("BIASAMP_DATA_URL", m.url)
        yield home, m


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_damaged_cached_file_is_never_read(cache, damage):
    home, m = cache
    good = load_mals("coco")
    f = home / MALS
    data = bytearray(f.read_bytes())
    if damage == "flip": data[200] ^= 1
    else: data = data[:50]
    f.write_bytes(bytes(data))
    os.utime(f, ns=(1, 1))
    shutil.rmtree(home / "originals")  # nothing to make it again from offline
    with pytest.raises(ValueError, match=r"is corrupt: it fails its SHA-256"):  # offline: said so, not 'missing'
        data_file(MALS, offline=True)
    assert not real_data("mals", offline=True)
    assert load_mals("coco").equals(good)  # online: made again from the checked originals
    assert f.read_bytes() == (SHARED / "data" / MALS).read_bytes()


def test_a_data_folder_planted_above_the_working_folder_is_ignored(tmp_path, monkeypatch):
    planted = tmp_path / "shared" / "data" / "mals"
    planted.mkdir(parents=True)
    (planted / "mals_coco_gender_ratio_dev.csv").write_text("object,training_ratio\nfake,1\n")
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("BIASAMP_DATA", str(tmp_path / "empty-cache"))
    assert data_dir() is None
    with pytest.raises(ValueError, match="is not in the cache"):
        data_file(MALS, offline=True)


@pytest.mark.parametrize("name", ["/etc/passwd", "../etc/passwd", "mals/../../../etc/passwd", "mals"])
def test_a_name_that_leaves_the_data_folder_is_refused(name):
    with pytest.raises(ValueError, match="is not a file of the real data sets"):
        data_file(name)


def test_the_mirror_serves_its_own_files_only(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("inside")
    secret = tmp_path.parent / f"{tmp_path.name}-secret.txt"
    secret.write_text("outside")
    (tmp_path / "sub" / "link.txt").symlink_to(secret)

    def get(url):
        try: return urllib.request.urlopen(url).read().decode()
        except urllib.error.HTTPError as e: return e.code
    with local_mirror(tmp_path) as m:
        assert get(m.url + "/sub/a.txt") == "inside"
        assert [get(m.url + p) for p in ("/sub/link.txt", "/sub/", "/", "/%2e%2e/" + secret.name)] == [404] * 4


def test_an_unwritable_cache_names_its_folder(tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    with pytest.raises(ValueError, match=f"cannot write to the data cache '{blocked}'.*BIASAMP_DATA"):
        fetch("mals", home=blocked, base_url="http://127.0.0.1:9")


def test_a_damaged_captions_file_is_extracted_again(tmp_path):
    import hashlib
    import json
    import zipfile
    from biasamp_nb.fetch import COCO_CAPTIONS, fetch_coco_captions
    site = tmp_path / "site"
    site.mkdir()
    caps = {"images": [{"id": 1}], "annotations": [{"image_id": 1, "id": 1, "caption": "a woman cooking"}]}
    with zipfile.ZipFile(site / "ann.zip", "w") as z: z.writestr(COCO_CAPTIONS["member"], json.dumps(caps))
    sha = hashlib.sha256((site / "ann.zip").read_bytes()).hexdigest()
    home = tmp_path / "home"
    with local_mirror(site) as m:
        p = fetch_coco_captions(home=home, url=m.url + "/ann.zip", sha256=sha)
        p.write_text("garbage")
        assert json.loads(fetch_coco_captions(home=home, url=m.url + "/ann.zip", sha256=sha).read_text()) == caps
    (home / "originals" / "cocodataset.org" / "annotations_trainval2014.zip").unlink()
    p.write_text("garbage again")
    with pytest.raises(ValueError, match="is not in the cache"):
        fetch_coco_captions(home=home, sha256=sha, offline=True)
