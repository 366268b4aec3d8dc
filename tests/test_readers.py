"""One contract for the three Parquet readers (DuckDB, pyarrow streaming, Dask): the same files give the same counts,
and the same hostile files are refused by each with the same message."""
import os
import warnings

import numpy as np
import pandas as pd
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")
pytest.importorskip("dask")
import pyarrow.parquet as pq

from biasamp_nb.scale import dask_counts, duckdb_counts, duckdb_set_counts, stream_parquet_counts, write_long_parquet

GROUPS, TASKS = ["woman", "man"], ["dog", "cat", "car"]


def _records(n=64, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        rows.append((i, GROUPS[i % 2]))
        rows += [(i, t) for t in TASKS if rng.random() < 0.4]
    return pd.DataFrame(rows, columns=["row_id", "label"])


def _write(path, df):
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
    return path


READERS = {
    "duckdb": lambda truth, pred=None, **kw: duckdb_counts(truth, kw.pop("groups", GROUPS), pred=pred,
                                                           tasks=kw.pop("tasks", TASKS), **kw),
    "dask": lambda truth, pred=None, **kw: dask_counts(truth, kw.pop("groups", GROUPS), pred=pred,
                                                       tasks=kw.pop("tasks", TASKS), **kw),
    "stream": lambda truth, pred=None, **kw: stream_parquet_counts(truth, kw.pop("groups", GROUPS),
                                                                   kw.pop("tasks", TASKS), **kw),
}


@pytest.fixture
def good(tmp_path):
    return _write(tmp_path / "truth.parquet", _records())


@pytest.mark.parametrize("reader", READERS)
def test_readers_agree_on_good_files(reader, good):
    ref = READERS["duckdb"](good)
    c = READERS[reader](good)
    assert c.n == ref.n == 64
    np.testing.assert_array_equal(c.at, ref.at)
    np.testing.assert_array_equal(c.t, ref.t)


@pytest.mark.parametrize("reader", READERS)
def test_readers_refuse_paths_that_name_no_file(reader, good, tmp_path, monkeypatch):
    "'' (an unset variable), a folder, a missing file and an empty glob: refused, never every file below a folder."
    monkeypatch.chdir(good.parent)  # '' or '.' would otherwise read every Parquet file here
    _write(tmp_path / "other.parquet", _records(32, seed=1))
    for path, msg in (("", "truth is an empty path"), (str(tmp_path), "is a folder; name its files with a glob"),
                      (str(tmp_path / "nope.parquet"), "does not exist"), (str(tmp_path / "x*.parquet"), "no file matches")):
        arg = "path" if reader == "stream" else "truth"
        with pytest.raises(ValueError, match=msg.replace("truth", arg)): READERS[reader](path)


@pytest.mark.parametrize("reader", READERS)
def test_readers_refuse_the_same_hostile_files(reader, tmp_path):
    arg = "path" if reader == "stream" else "truth"
    df = _records()
    cases = {
        "string row ids": (df.assign(row_id=df.row_id.map(lambda i: f"img{i}")), r"holds (large_)?string, not integers"),
        "float labels": (df.assign(label=np.arange(len(df), dtype=float)), "store labels as text"),
        "no label column": (df.rename(columns={"label": "lab"}), "has no column 'label'"),
        "NULL row id": (df.assign(row_id=df.row_id.astype("Int64").mask(df.index == 3)), "no row_id or no label"),
        "NULL label": (df.assign(label=df.label.mask(df.index == 3)), "no row_id or no label"),
    }
    for name, (bad, msg) in cases.items():
        f = _write(tmp_path / f"{name.replace(' ', '_')}.parquet", bad)
        with pytest.raises(ValueError, match=msg): READERS[reader](f)
    f = _write(tmp_path / "ok.parquet", df)
    with pytest.raises(ValueError, match="groups must be a list of labels, got the string 'woman'"):
        READERS[reader](f, groups="woman")
    with pytest.raises(ValueError, match="'nobody' never occurs in the truth file"):
        READERS[reader](f, groups=["woman", "nobody"])
    with pytest.raises(ValueError, match="tasks names 'dog' twice"):
        READERS[reader](f, tasks=["dog", "dog"])
    with pytest.raises(ValueError, match=r"n_rows=10 but the files? names? 64 distinct row_id values"):
        READERS[reader](f, n_rows=10)


@pytest.mark.parametrize("reader", READERS)
def test_integer_labels_are_matched_as_text_by_every_reader(reader, tmp_path):
    df = _records()
    codes = {"woman": 0, "man": 1, "dog": 10, "cat": 11, "car": 12}
    f = _write(tmp_path / "int.parquet", df.assign(label=df.label.map(codes).astype(np.int64)))
    ref = READERS["duckdb"](_write(tmp_path / "txt.parquet", df))
    c = READERS[reader](f, groups=[0, 1], tasks=[10, 11, 12])
    np.testing.assert_array_equal(c.at, ref.at)
    assert c.n == 64


@pytest.mark.parametrize("reader", ["duckdb", "dask"])
def test_prediction_ids_absent_from_the_truth_are_reported_alike(reader, tmp_path):
    df = _records()
    truth = _write(tmp_path / "truth.parquet", df)
    pred = _write(tmp_path / "pred.parquet", pd.concat([df, pd.DataFrame({"row_id": [500, 501, 501],
                                                                          "label": ["woman", "man", "dog"]})]))
    with pytest.warns(UserWarning, match="pred: 2 row_id values do not occur in the truth file"):
        c = READERS[reader](truth, pred)
    assert c.n == 66
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert READERS[reader](truth, _write(tmp_path / "same.parquet", df)).n == 64  # nothing to report


def test_duckdb_set_counts_refuses_strings_and_unknown_labels(good):
    with pytest.raises(ValueError, match=r"combos\[0\] must be a list of labels, got the string 'dog'"):
        duckdb_set_counts(good, GROUPS, ["dog", "cat"])
    with pytest.raises(ValueError, match="combos must be a list of combinations"):
        duckdb_set_counts(good, GROUPS, "dog")
    with pytest.raises(ValueError, match="the label 'dgo' never occurs"):
        duckdb_set_counts(good, GROUPS, [("dgo",)])
    c = duckdb_set_counts(good, GROUPS, [("dog",), ("dog", "cat")])
    ref = duckdb_counts(good, GROUPS, tasks=["dog"])
    np.testing.assert_array_equal(c.at[:, :1], ref.at)


def test_wide_truth_with_repeated_row_ids_is_refused_without_predictions(tmp_path):
    wide = pd.DataFrame({"row_id": [0, 1, 1, 2], "woman": [1, 0, 0, 1], "man": [0, 1, 1, 0], "dog": [1, 1, 1, 0]})
    wide.to_parquet(tmp_path / "w.parquet")
    with pytest.raises(ValueError, match="repeats a row_id"):
        duckdb_counts(tmp_path / "w.parquet", ["woman", "man"], tasks=["dog"], layout="wide")


@pytest.mark.parametrize("cell", ["0x1", "+1", " 1", "1e0", "01", "true", "1.0", ""])
def test_the_csv_reader_reads_every_cell_as_pandas_does(cell, tmp_path):
    "The pyarrow path takes a 0/1 column only when every cell is spelled 0 or 1; otherwise pandas decides."
    from biasamp_nb.files import _read_csv
    p = tmp_path / "labels.csv"
    rows = [f"i{i},{i % 2},{(i // 2) % 2}" for i in range(1500)] + [f"z,{cell},1"]
    p.write_text("\n".join(["id,dog,cat", *rows]) + "\n")
    got, ref = _read_csv(p), pd.read_csv(p)
    assert list(got.columns) == list(ref.columns)
    for c in ref.columns:
        assert got[c].astype(object).where(got[c].notna(), None).tolist() == \
            ref[c].astype(object).where(ref[c].notna(), None).tolist(), c
