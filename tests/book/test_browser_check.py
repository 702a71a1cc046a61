"""``make browser-check`` reports a figure that does not fit the column at desktop width (issue 31).

A synthetic page holds one image in the wrapper that book/_static/gpc.js puts around every figure; the
check must report it as scrolling at 1280 and 1920 px when the image is wider than the column, and not
when it fits. Runs where Debian's chromium, node and the playwright-core that ``make browser-check``
installs are present; skipped elsewhere.
"""

import os
import pathlib
import shutil
import subprocess
import zlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAYWRIGHT = ROOT / "_build" / "node" / "node_modules" / "playwright-core"

pytestmark = pytest.mark.skipif(
    not (shutil.which("chromium") and shutil.which("node") and PLAYWRIGHT.is_dir()),
    reason="needs chromium, node and playwright-core (make browser-check installs it)",
)


def png(width, height):
    """A grey PNG of the given size, written by hand (no imaging library needed)."""

    def chunk(kind, data):
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title>
<style>article {{ width: 700px; }} .gpc-figure-scroll {{ max-width: 100%; overflow-x: auto; }}</style></head>
<body><article class="bd-article"><figure id="fig-test"><div class="gpc-figure-scroll">
<a class="gpc-full-image" href="{name}.png"><img src="{name}.png" alt="a test figure of grey" class="gpc-text-90"
style="width: {width}px"></a></div><figcaption><span class="caption-number">Fig. 1 </span>A test figure.</figcaption>
</figure></article></body></html>"""


def run_check(tmp_path, width):
    root = tmp_path / f"html{width}"
    (root / "book").mkdir(parents=True)
    name = f"figure{width}"
    (root / "book" / f"{name}.png").write_bytes(png(width, 50))
    (root / "book" / "page.html").write_text(PAGE.format(name=name, width=width), encoding="utf-8")
    result = subprocess.run(["node", str(ROOT / "tests" / "browser_check.mjs"), str(root)], cwd=ROOT,
                            env={**os.environ, "PLAYWRIGHT_CORE": str(PLAYWRIGHT)}, capture_output=True, text=True,
                            timeout=300)  # fmt: skip
    return result.returncode, result.stdout


def test_a_figure_wider_than_the_column_is_reported_and_fails(tmp_path):
    code, output = run_check(tmp_path, 1400)
    assert code != 0
    reported = [line for line in output.splitlines() if "figure scrolls" in line]
    assert len(reported) == 2 and all("Fig. 1" in line for line in reported)  # at 1280 and at 1920 px


def test_a_figure_that_fits_is_not_reported(tmp_path):
    code, output = run_check(tmp_path, 500)
    assert "figure scrolls" not in output  # (the synthetic page fails other checks: it has no contents toggle)
