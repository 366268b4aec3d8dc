"""The checks nbdev's own CI makes: the module is in sync with the notebooks and every notebook is clean.
Also: README.md is generated from index.ipynb, and the sidebar lists every notebook."""
import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _copy(tmp):
    for name in ("pyproject.toml", "nbs", "biasamp_nb", "README.md"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp / name)
    for p in tmp.rglob("__pycache__"):
        shutil.rmtree(p)
    return tmp


def _tree(path, pattern):
    return {p.relative_to(path).as_posix(): p.read_text() for p in sorted(path.rglob(pattern))}


def test_module_in_sync_with_notebooks(tmp_path):
    _copy(tmp_path)
    r = subprocess.run([str(BIN / "nbdev-export")], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    before, after = _tree(ROOT / "biasamp_nb", "*.py"), _tree(tmp_path / "biasamp_nb", "*.py")
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"run nbdev-export and commit: these modules differ from the notebooks: {changed}"


def test_notebooks_clean(tmp_path):
    _copy(tmp_path)
    r = subprocess.run([str(BIN / "nbdev-clean")], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    before, after = _tree(ROOT / "nbs", "*.ipynb"), _tree(tmp_path / "nbs", "*.ipynb")
    dirty = sorted(k for k in before if before[k] != after[k])
    assert not dirty, f"run nbdev-clean and commit: these notebooks are not clean: {dirty}"


def test_readme_generated_from_index():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "make_readme.py"), "--check"])
    assert r.returncode == 0, "README.md is out of date: run `make readme`"


def test_sidebar_lists_every_notebook():
    side = yaml.safe_load((ROOT / "nbs" / "sidebar.yml").read_text())

    def walk(items):
        for it in items:
            if isinstance(it, str): yield it
            elif isinstance(it, dict) and "contents" in it: yield from walk(it["contents"])
            elif isinstance(it, dict) and "href" in it: yield it["href"]

    listed = set(walk(side["website"]["sidebar"]["contents"]))
    nbs = {p.name for p in (ROOT / "nbs").glob("*.ipynb")} | {p.name for p in (ROOT / "nbs").glob("*.md")}
    assert nbs == listed, f"missing from sidebar.yml: {sorted(nbs - listed)}; listed but absent: {sorted(listed - nbs)}"


def test_no_settings_ini_and_nbdev_config():
    assert not (ROOT / "settings.ini").exists()
    import tomllib
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert cfg["tool"]["nbdev"]["lib_path"] == "biasamp_nb"
    assert set(cfg["tool"]["nbdev"]["tst_flags"].split()) >= {"gpu", "slow"}


def test_notebooks_have_no_execution_metadata():
    for p in (ROOT / "nbs").glob("*.ipynb"):
        nb = json.loads(p.read_text())
        for c in nb["cells"]:
            assert "execution" not in c.get("metadata", {}), p.name


def test_exported_modules_have_no_undefined_names():
    "A name a notebook defines in a cell that is not exported must not be used by exported code."
    from pyflakes import api, reporter, messages
    import io
    problems = []
    for p in sorted((ROOT / "biasamp_nb").rglob("*.py")):
        out = io.StringIO()
        class Collect(reporter.Reporter):
            def flake(self, m):
                if isinstance(m, (messages.UndefinedName, messages.UndefinedExport, messages.UndefinedLocal)):
                    problems.append(f"{p.name}:{m.lineno} {m.message % m.message_args}")
        api.check(p.read_text(), str(p), Collect(out, out))
    assert not problems, problems


def test_notebooks_carry_their_outputs():
    "The docs show saved outputs: a notebook whose cells display things must have been run and saved."
    for p in (ROOT / "nbs").glob("*.ipynb"):
        nb = json.loads(p.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        shows = [c for c in code if "".join(c["source"]).strip().splitlines()[-1:] and not "".join(c["source"]).lstrip().startswith("#|")
                 and ("plt." in "".join(c["source"]) or "display(" in "".join(c["source"]))]
        if shows:
            assert any(c.get("outputs") for c in shows), f"{p.name}: run the notebook and save its outputs (nbdev-test --save)"


def test_no_module_imports_another_modules_private_names():
    "Shared pieces are public where they live: no `from .x import _y` between the package's modules."
    import ast
    found = []
    for p in sorted((ROOT / "biasamp_nb").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__" and \
                    (node.level > 0 or (node.module or "").startswith("biasamp_nb")):
                found += [f"{p.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert not found, found


def test_no_module_shares_a_public_name():
    """Importing a submodule makes it an attribute of the package, so a module named like a public function would
    hide the function: no module does, and the package is a plain module (no class swapped in to guard against it)."""
    import pkgutil
    import biasamp_nb
    mods = {m.name for m in pkgutil.iter_modules(biasamp_nb.__path__)}
    assert not mods & set(biasamp_nb.__all__), mods & set(biasamp_nb.__all__)
    r = subprocess.run([sys.executable, "-c", "import types, biasamp_nb.caption_leakage, biasamp_nb.associations, "
                        "biasamp_nb.predictive, biasamp_nb as b; assert type(b) is types.ModuleType; "
                        "assert all(callable(f) for f in (b.lic, b.association, b.predictability))"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_help_lists_the_arguments_and_the_docs_pages_do_not_repeat_them():
    "help(biasamp_nb.ba_directional) shows every argument with its comment; show_doc keeps its own table only."
    import pydoc
    import biasamp_nb
    text = pydoc.render_doc(biasamp_nb.ba_directional, renderer=pydoc.plaintext)
    assert "Arguments:" in text and 'direction: "A->T"' in text and "n_boot = None: bootstrap resamples" in text
    assert pydoc.render_doc(biasamp_nb.dpa, renderer=pydoc.plaintext).count("Arguments:") == 1  # added once
    pages = [p.name for p in (ROOT / "nbs").glob("*.ipynb") if "\\n\\nArguments:\\n" in p.read_text()]
    assert not pages, f"docs pages that show the help() argument list: {pages}"


def _notebook_numbers():
    "{module: the number of the notebook that exports it}, read from each notebook's `#| default_exp` cell."
    import re
    num = {}
    for p in (ROOT / "nbs").glob("*.ipynb"):
        cells = json.loads(p.read_text())["cells"]
        m = re.match(r"#\|\s*default_exp\s+(\S+)", "".join(cells[0]["source"])) if cells else None
        if m:  # 17a reads after 17 and before 18
            n, letter = re.match(r"(\d+)([a-z]?)", p.name).groups()
            num["biasamp_nb." + m.group(1)] = int(n) + (ord(letter) - 96) / 100 if letter else int(n)
    return num


def _imports(path, mod):
    "The package modules that the module `mod` (file `path`) imports, at the top or inside a function."
    import ast
    out = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level: base = ".".join(mod.split(".")[:-n.level]) + ("." + base if base else "")
            out |= {base} if n.module else {f"{base}.{a.name}" for a in n.names}
        elif isinstance(n, ast.Import): out |= {a.name for a in n.names}
    return out


def test_imports_only_go_down():
    """Notebooks are numbered in import order: every module imports only modules of lower-numbered notebooks, so
    the graph has no circle and reading the pages in order never meets a name before its definition."""
    num = _notebook_numbers()
    assert len(num) >= 25 and num["biasamp_nb.checks"] < num["biasamp_nb.core"] < num["biasamp_nb.cooccurrence"]
    up = []
    for p in (ROOT / "biasamp_nb").rglob("*.py"):
        mod = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        if mod not in num: continue
        up += [(mod, t) for t in _imports(p, mod) if t in num and t != mod and num[t] >= num[mod]]
    assert not up, up


def test_every_module_compiles_with_warnings_as_errors():
    """nbdev writes the package docstring without a raw prefix: a backslash in a module's subtitle (LaTeX such as
    `\\hat`) would be an invalid escape there (an error under `-W error`, and `\\t` of `\\top` a tab)."""
    import warnings
    for p in sorted((ROOT / "biasamp_nb").rglob("*.py")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try: compile(p.read_text(), str(p), "exec")
            except (SyntaxError, SyntaxWarning, DeprecationWarning) as e:
                raise AssertionError(f"{p.relative_to(ROOT)} does not compile cleanly: {e}") from None
    assert "\t" not in (ROOT / "biasamp_nb" / "__init__.py").read_text()


def _exported_cells():
    "(notebook, cell id, lines) of every exported code cell."
    import re
    for p in sorted((ROOT / "nbs").glob("*.ipynb")):
        for c in json.loads(p.read_text())["cells"]:
            s = "".join(c["source"])
            if c["cell_type"] == "code" and re.match(r"#\|\s*export", s):
                yield p.name, c.get("id"), len(s.strip().splitlines())


def test_budgets_exported_cells_functions_and_lines():
    """Exported cells and functions of at most 60 lines (a longer one holds more than one idea), and no hand-written
    line over 120 characters (nbdev's generated module docstrings and `__all__` aside)."""
    big_cells = [c for c in _exported_cells() if c[2] > 60]
    big_fns, long_lines = [], []
    for p in sorted((ROOT / "biasamp_nb").rglob("*.py")):
        if p.name == "_modidx.py": continue
        src = p.read_text(); tree = ast.parse(src)
        first = tree.body[0] if tree.body else None
        skip = set(range(1, first.end_lineno + 1)) if isinstance(first, ast.Expr) else set()  # the module docstring
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 60:
                big_fns.append((p.name, n.name, n.end_lineno - n.lineno + 1))
            if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in n.targets):
                skip |= set(range(n.lineno, n.end_lineno + 1))
        long_lines += [(p.name, i) for i, l in enumerate(src.splitlines(), 1) if len(l) > 120 and i not in skip]
    assert not big_cells and not big_fns and not long_lines, (big_cells, big_fns, long_lines)


def _is_patch(d) -> bool:
    "Whether a decorator is fastcore's `@patch` (with or without arguments)."
    return getattr(d, "id", None) == "patch" or getattr(getattr(d, "func", None), "id", None) == "patch"


def test_exported_cells_define_one_thing():
    """An exported cell defines one function or class (methods `@patch`ed onto a class may share a cell, as in a class
    body), and the median exported cell is at most 12 lines."""
    import re
    import statistics
    crowded = []
    for p in sorted((ROOT / "nbs").glob("*.ipynb")):
        for c in json.loads(p.read_text())["cells"]:
            s = "".join(c["source"])
            if c["cell_type"] != "code" or not re.match(r"#\|\s*export", s): continue
            defs = [b for b in ast.parse(s).body if isinstance(b, (ast.FunctionDef, ast.ClassDef))]
            if len(defs) > 1 and not all(any(map(_is_patch, b.decorator_list)) for b in defs):
                crowded.append((p.name, c.get("id"), [b.name for b in defs]))
    assert not crowded, crowded
    median = statistics.median(c[2] for c in _exported_cells())
    assert median <= 12, median


def test_docstrings_are_one_line():
    "Every function's and class's docstring is one line: the story goes in the page, beside the definition."
    long = []
    for p in sorted((ROOT / "biasamp_nb").rglob("*.py")):
        if p.name == "_modidx.py": continue
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                d = ast.get_docstring(n, clean=False)
                if d and "\n" in d.strip(): long.append((p.name, n.name))
    assert not long, long


def test_definitions_are_followed_by_a_use():
    "At least 60% of the exported cells that define something are followed by a code cell that uses it."
    import re
    defining = used = 0
    for p in sorted((ROOT / "nbs").glob("*.ipynb")):
        cells = [c for c in json.loads(p.read_text())["cells"] if c["cell_type"] == "code"]
        for c, nxt in zip(cells, cells[1:] + [None]):
            s = "".join(c["source"])
            if not re.match(r"#\|\s*export", s): continue
            if all(isinstance(x, (ast.Import, ast.ImportFrom)) for x in ast.parse(s).body): continue
            defining += 1
            used += nxt is not None and not re.match(r"#\|\s*export", "".join(nxt["source"]))
    assert used / defining >= 0.6, (used, defining)


def test_pages_never_write_tracked_files():
    """No page cell that names data/results writes: the studies write to `study_file` (a cache, or data/results only
    under `make studies`), the pages read the committed tables."""
    import re
    writes = re.compile(r"atomic_write\(|\.to_csv\(|\.to_json\(|\.write_text\(|\.write_bytes\(|save_results\(|"
                        r"\.savefig\(|\.to_parquet\(|open\([^)]*['\"][wax]")
    bad = []
    for p in sorted((ROOT / "nbs").glob("*.ipynb")):
        for c in json.loads(p.read_text())["cells"]:
            s = "".join(c["source"])
            if c["cell_type"] != "code" or re.match(r"#\|\s*export", s): continue  # definitions write nothing
            if re.search(r"data/results|\"data\" / \"results\"", s) and writes.search(s):
                bad.append((p.name, s.splitlines()[0]))
    assert not bad, bad


def _outputs(cells):
    "The text each code cell printed or displayed, progress bars and figures aside."
    out = []
    for c in cells:
        if c["cell_type"] != "code": continue
        texts = []
        for o in c.get("outputs", []):
            if o.get("output_type") == "stream" and o.get("name") == "stderr": continue
            d = o.get("data", {})
            t = o.get("text") or d.get("text/markdown") or d.get("text/plain")
            if t: texts.append("".join(t))
        out.append(texts)
    return out


def test_readme_outputs_are_what_the_code_prints_now(tmp_path):
    "index.ipynb (the README) run afresh prints what it shows: no recorded number the code no longer gives."
    from nbdev.test import test_nb
    nbs = tmp_path / "nbs"; nbs.mkdir()
    (tmp_path / "data").symlink_to(ROOT / "data")
    shutil.copy(ROOT / "nbs" / "index.ipynb", nbs / "index.ipynb")
    ok, _ = test_nb(nbs / "index.ipynb", basepath=ROOT, save=True)
    assert ok
    saved = _outputs(json.loads((ROOT / "nbs" / "index.ipynb").read_text())["cells"])
    fresh = _outputs(json.loads((nbs / "index.ipynb").read_text())["cells"])
    assert fresh == saved
