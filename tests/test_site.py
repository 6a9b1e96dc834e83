"""python -m helpers site build: the offline HTML book; and, where Chromium is installed (CI installs Debian's),
every figure of every page drawn by a real headless browser with the network shut off."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from helpers import glossary, site
from helpers.__main__ import main
from helpers.project import CHAPTERS

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _figures(notebook: str) -> int:
    cells = json.loads((ROOT / "notebooks" / notebook).read_text())["cells"]
    return sum(site.PLOTLY in o.get("data", {}) for c in cells for o in c.get("outputs", []))


@pytest.fixture(scope="module")
def book(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("book")
    code, out, _ = _main(["site", "build", str(folder), "--force"])
    assert code == 0 and "python -m http.server" in out
    return folder


def test_the_book_has_every_chapter_the_map_and_the_guide_and_fetches_nothing(book) -> None:
    assert (book / "plotly.min.js").stat().st_size > 1_000_000  # the library itself, copied in
    index = (book / "index.html").read_text()
    for number, chapter in enumerate(CHAPTERS):
        page = (book / site._page(chapter.file)).read_text()
        assert f'href="{site._page(chapter.file)}"' in index
        assert page.count("Plotly.newPlot(") == _figures(chapter.file) > 0, chapter.file
        assert '<script src="plotly.min.js"></script>' in page and page.count('class="book-nav"') == 2
        assert not re.search(r'<(script|link)[^>]+(src|href)="https?://', page), "nothing from a CDN"
        assert ".ipynb\"" not in re.sub(r'href="https?://[^"]*"', "", page), "chapter links go to the pages"
        if number + 1 < len(CHAPTERS):
            assert f'href="{site._page(CHAPTERS[number + 1].file)}"' in page  # next
    assert re.search(r"<h1[^>]*>Teaching with From Loops to TPUs<", (book / "teaching.html").read_text())
    assert 'href="teaching.html"' in index and 'href="glossary.html"' in index
    entries = (book / "glossary.html").read_text()
    assert all(f'<h2 id="{t.anchor}">' in entries for t in glossary.TERMS)


def test_a_chapter_link_to_the_glossary_goes_to_the_book_page(tmp_path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("A [warp](../docs/glossary.md#warp) is 32 threads.")]
    nbformat.write(nb, tmp_path / "chapter.ipynb")
    page = site.chapter_html(tmp_path / "chapter.ipynb", 0)
    assert 'href="glossary.html#warp"' in page and "glossary.md" not in page


def test_the_book_refuses_the_repository_and_a_full_folder(tmp_path) -> None:
    code, _, err = _main(["site", "build", str(ROOT / "docs" / "book")])
    assert code == 2 and "is inside the repository" in err and err.count("\n") == 1
    assert not (ROOT / "docs" / "book").exists()
    (tmp_path / "mine.txt").write_text("keep")
    code, _, err = _main(["site", "build", str(tmp_path)])
    assert code == 2 and "is not empty: add --force" in err
    assert _main(["site"])[0] == 2


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                    reason="no Chromium here (CI installs Debian's chromium in .ci/run: apt-get install chromium)")
@pytest.mark.parametrize("chapter", [c.file for c in CHAPTERS])
def test_a_real_browser_draws_every_figure_offline(book, tmp_path, chapter) -> None:
    """Headless Chromium, every request outside this machine sent to a closed port: the page's figures must
    still draw (plotly makes one main-svg per layer, at least two per figure). In CI it must run."""
    assert CHROMIUM, "CI must have Chromium: .ci/run installs Debian's"
    page = book / site._page(chapter)
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path}",
         "--proxy-server=127.0.0.1:9", "--virtual-time-budget=10000",
         "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    drawn = re.findall(r'<div[^>]*\bid="([\w-]+-figure-\d+)"[^>]*>(.*?)</div><script', done.stdout, re.S)
    figures = _figures(chapter)
    assert len(drawn) == figures, f"{len(drawn)} figure divs in the DOM, {figures} in the notebook"
    empty = [name for name, inner in drawn if inner.count('class="main-svg"') < 2]
    assert not empty, f"figures that did not draw: {empty}"
