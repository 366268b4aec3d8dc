"""Write README.md from nbs/index.ipynb (markdown cells, code cells and their text outputs).

Quarto, which `nbdev-readme` uses, is not needed. `--check` exits 1 when README.md is out of date."""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _text(x):
    return "".join(x) if isinstance(x, list) else x


def render(nb_path=ROOT / "nbs" / "index.ipynb"):
    nb = json.loads(Path(nb_path).read_text())
    out = []
    for cell in nb["cells"]:
        src = _text(cell["source"])
        lines = src.splitlines()
        directives = [l for l in lines if l.startswith("#|")]
        if any(l.split()[1:2] == ["hide"] for l in directives if len(l.split()) > 1):
            continue
        body = "\n".join(l for l in lines if not l.startswith("#|")).strip("\n")
        if cell["cell_type"] == "markdown":
            out.append(body)
            continue
        if body:
            out.append(f"```python\n{body}\n```")
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if o.get("output_type") == "stream":
                out.append(f"```\n{_text(o['text']).rstrip()}\n```")
            elif "text/html" in data and "<table" in _text(data["text/html"]):
                out.append(re.sub(r"<style.*?</style>\s*", "", _text(data["text/html"]), flags=re.S).strip())
            elif "text/markdown" in data:
                out.append(_text(data["text/markdown"]).strip())
            elif "text/plain" in data:
                out.append(f"```\n{_text(data['text/plain']).rstrip()}\n```")
    text = "\n\n".join(out) + "\n"
    return "<!-- generated from nbs/index.ipynb by tools/make_readme.py; edit the notebook, not this file -->\n\n" + text


if __name__ == "__main__":
    text = render()
    readme = ROOT / "README.md"
    if "--check" in sys.argv:
        sys.exit(0 if readme.exists() and readme.read_text() == text else 1)
    readme.write_text(text)
