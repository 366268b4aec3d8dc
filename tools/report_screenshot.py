"""The report page's picture of an HTML report: the demo's report, opened in headless Chromium and saved as
nbs/images/report_html.png (the top of the page, as a reader first sees it).

    python tools/report_screenshot.py
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "nbs" / "images" / "report_html.png"


def main():
    browser = next((shutil.which(c) for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)
    if browser is None: sys.exit("needs Chromium (apt-get install chromium)")
    from biasamp_nb.report import demo
    with tempfile.TemporaryDirectory() as d:
        demo(Path(d) / "demo")
        shot = Path(d) / "shot.png"
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--window-size=1000,820", f"--screenshot={shot}", (Path(d) / "demo" / "report.html").as_uri()],
                       check=True, capture_output=True, timeout=120)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        tmp = OUT.with_suffix(".tmp")
        from PIL import Image
        Image.open(shot).convert("RGB").quantize(64).save(tmp, format="PNG", optimize=True)  # a page of text: 64 colours
        os.replace(tmp, OUT)
    print(OUT, OUT.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
