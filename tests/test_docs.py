"""The documentation site: nbdev-proc-nbs succeeds without PyTorch, the offline preview renders every page with
math and figures, and every page loads in headless Chromium without errors (screenshots in reports/docs/)."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_docs" / "preview"


def sidebar_sources():
    side = yaml.safe_load((ROOT / "nbs" / "sidebar.yml").read_text())["website"]["sidebar"]["contents"]
    return [x for it in side for x in ([it] if isinstance(it, str) else it["contents"])]


@pytest.fixture(scope="session")  # once: with -n, these tests share a worker (conftest.py), other tests between
def site():
    # processed as the `notebooks` extra alone processes them: PyTorch hidden (tools/preview.py)
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "preview.py")], cwd=ROOT, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    return sorted(OUT.glob("*.html"))


def test_every_sidebar_page_is_rendered_in_order(site):
    assert len(site) == len(sidebar_sources())
    nav = re.findall(r"<a href='([^']+)'", (OUT / "index.html").read_text())
    expected = ["index.html"] + [re.sub(r"^\d+[a-zA-Z0-9]*_", "", Path(s).stem.lower()) + ".html" for s in sidebar_sources()]
    assert nav == expected  # the sidebar order of nbs/sidebar.yml


def test_preview_links_its_own_pages(site):
    "Links to a documented name point at the preview's own page, not the published site (86 of them did)."
    names = {p.name for p in site}
    own = re.compile(r'href="https://biasamp-nb\.github\.io/biasamp_nb/([^"#]*)')
    outside = [(p.name, t) for p in site for t in own.findall(p.read_text()) if t in names]
    assert not outside, outside[:5]
    local = sum(len(re.findall(r'href="[a-z_]+\.html#', p.read_text())) for p in site)
    assert local > 80  # the same links, now relative


def test_every_anchor_link_has_its_heading(site):
    "A link to page.html#name lands on a heading of that page (109 once led to internals that have none)."
    ids = {p.name: set(re.findall(r"""id=["']([^"']+)["']""", p.read_text())) for p in site}
    links = [(p.name, t, a) for p in site for t, a in re.findall(r'href="([\w.-]+\.html)#([^"]+)"', p.read_text())]
    dead = [x for x in links if x[1] in ids and x[2] not in ids[x[1]]]
    assert len(links) > 200 and not dead, dead[:5]


def test_pages_have_math_figures_and_no_hidden_cells(site):
    for page in site:
        text = page.read_text()
        prose = re.sub(r"<pre.*?</pre>|<code.*?</code>", "", text, flags=re.S)
        assert "$$" not in prose, f"{page.name}: raw $$ left (math not rendered)"
        for src in re.findall(r'<img src="([^"]+)"', text):
            assert (page.parent / src).exists(), f"{page.name}: missing figure {src}"
        assert "from nbdev.showdoc import" not in text, f"{page.name}: a #| hide cell is shown"
    assert (OUT / "cooccurrence.html").read_text().count("<math") > 10
    assert re.search(r'<img src="cooccurrence_files/fig\d+.png"', (OUT / "cooccurrence.html").read_text())


def test_pages_show_no_directive_text(site):
    "No page shows a cell directive as text (a markdown cell's `#| export` once opened 34 pages); named in code is fine."
    for page in site:
        prose = re.sub(r"<pre.*?</pre>|<code.*?</code>", "", page.read_text(), flags=re.S)
        i = prose.find("#|")
        assert i < 0, (page.name, prose[max(0, i - 80):i + 80])


def test_every_link_between_pages_names_a_built_page(site):
    "Every relative link to a page (the subsets page once linked multi.html, which does not exist) finds it built."
    names = {p.name for p in site}
    broken = [(p.name, href) for p in site for href in re.findall(r'href=["\']([^"\'#:]+\.html)', p.read_text())
              if Path(href).name not in names]
    assert not broken, broken[:10]


def _chromium():
    for c in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(c): return shutil.which(c)


def test_pages_load_in_headless_chromium(site):
    exe = _chromium()
    if exe is None:
        if os.environ.get("CI"): pytest.fail("chromium is not installed; `make test` installs Debian's chromium package")
        pytest.skip("chromium is not installed (make test installs it where it can)")
    from playwright.sync_api import sync_playwright
    shots = ROOT / "reports" / "docs"
    shots.mkdir(parents=True, exist_ok=True)
    args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=args)
        for path in site:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors = []
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
            page.goto(path.as_uri(), wait_until="load")
            assert not errors, f"{path.name}: {errors}"
            assert page.title(), f"{path.name}: no title"
            body = page.inner_text("main")
            assert "$$" not in re.sub(r"```.*?```", "", body, flags=re.S) or "```" in body
            broken = page.evaluate("Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
            assert not broken, f"{path.name}: images that did not load: {broken}"
            if path.name == "cooccurrence.html":
                assert page.evaluate("document.querySelectorAll('math').length") > 10
            if path.name in ("index.html", "cooccurrence.html"):
                page.screenshot(path=str(shots / path.name.replace(".html", ".png")), full_page=False)
            page.close()
        browser.close()
    assert (shots / "index.png").stat().st_size > 10_000 and (shots / "cooccurrence.png").stat().st_size > 10_000
