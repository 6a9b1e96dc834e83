"""python -m helpers site build: the offline HTML book; and, where Chromium is installed (CI installs Debian's),
every figure and formula of every page drawn by a real headless browser with the network shut off."""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import re
import shutil
import subprocess
from html import escape
from pathlib import Path

import nbformat
import pytest

from helpers.__main__ import main
from helpers.book import architecture, records, site
from helpers.core.project import CHAPTERS
from helpers.learning import glossary

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _cells(notebook: str | Path) -> list[dict]:
    """The cells of a chapter (a file name under notebooks/) or of any notebook (a path)."""
    path = notebook if isinstance(notebook, Path) else ROOT / "notebooks" / notebook
    return json.loads(path.read_text())["cells"]


def _figures(notebook: str | Path) -> int:
    return sum(site.PLOTLY in o.get("data", {}) for c in _cells(notebook) for o in c.get("outputs", []))


def _display_math(notebook: str | Path) -> int:
    """How many $$...$$ formulas the chapter's markdown cells hold."""
    return sum("".join(c["source"]).count("$$") // 2 for c in _cells(notebook) if c["cell_type"] == "markdown")


def _has_setup(notebook: str | Path) -> bool:
    return any("setup" in c.get("metadata", {}).get("tags", []) for c in _cells(notebook))


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
        assert page.count("<math ") >= _display_math(chapter.file) and "MathJax" not in page, chapter.file
        assert page.count('<details class="book-setup">') == _has_setup(chapter.file), chapter.file
    assert sum(_display_math(c.file) for c in CHAPTERS) > 0  # chapter 06's Amdahl formula, at least
    guide = (book / "teaching.html").read_text()
    assert re.search(r"<h1[^>]*>Teaching with From Loops to TPUs<", guide)
    assert all(f'href="{page}.html"' in index for page in ("teaching", "glossary", "architecture"))
    entries = (book / "glossary.html").read_text()
    assert all(f'<h2 id="{t.anchor}">' in entries for t in glossary.TERMS)
    plan = (book / "architecture.html").read_text()  # the picture docs/architecture.md opens with
    picture = architecture.diagram(architecture.subpackages())
    assert all(escape(line) in plan for line in picture.splitlines()) and "may import" in plan
    for page in (index, guide, entries, plan):  # in the chapters' look: nbconvert's lab page, the same navigation
        assert 'class="jp-RenderedHTMLCommon' in page and page.count('class="book-nav"') == 2
        assert site.STYLE in page and "<math" not in page  # the guide's dollar amounts stay dollar amounts
    assert f'<a href="{site._page(CHAPTERS[0].file)}">{CHAPTERS[0].title} &rarr;</a>' in index


#: Each GPU or TPU chapter's latest recorded run (docs/runs/), which the book shows on a page of its own.
LATEST = {c.file: run for c in CHAPTERS if c.uses and (run := records.latest(c.file)) is not None}
#: Every chapter page of the book, and the notebook it shows: the stored chapters, then the recorded runs.
PAGES = [(site._page(c.file), ROOT / "notebooks" / c.file) for c in CHAPTERS] + [
    (site.recorded_page(file, run), run.folder / file) for file, run in LATEST.items()]


def test_each_gpu_or_tpu_chapter_links_its_latest_recorded_run_labelled_with_device_and_date(book) -> None:
    assert LATEST, "docs/runs/ holds the H200 runs: the book must show them"
    index = (book / "index.html").read_text()
    assert "Recorded on a real GPU or TPU" in index
    for file, run in LATEST.items():
        name = site.recorded_page(file, run)
        label = f"as it ran on the {run.device}, {run.date}"
        assert f'href="{name}">{file[:2]} ' in index and label in index
        chapter = (book / site._page(file)).read_text()
        assert f'<a href="{name}">{label}</a>' in chapter and chapter.count('class="book-recorded"') == 1
        page = (book / name).read_text()
        assert f"as it ran on the {run.device} ({run.facts['device']['kind']}), {run.date}</strong>" in page
        assert f'href="{site._page(file)}">The chapter&#39;s own page' in page and run.facts["commit"] in page
        assert page.count("Plotly.newPlot(") == _figures(run.folder / file), file
        known = [k for k in run.known() if k["chapter"] == file]
        assert page.count('<div class="book-finding">') == len(known), file
        shown = html.unescape(page)
        for finding in known:  # each marked, with its issue item, under its cell
            assert f"({finding['rule']}, {finding['item']}): \u201c{finding['text']}\u201d</div>" in shown, finding
    unrecorded = [c.file for c in CHAPTERS if c.file not in LATEST]
    assert all('class="book-recorded"' not in (book / site._page(file)).read_text() for file in unrecorded)


def _one_cell_chapters(tmp_path: Path) -> Path:
    """A folder of one-cell chapters, so that a book of them builds in seconds."""
    source = tmp_path / "notebooks"
    source.mkdir()
    for chapter in CHAPTERS:
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(chapter.title)]),
                       source / chapter.file)
    return source


def test_the_book_shows_the_latest_run_of_each_chapter_and_none_without_runs(tmp_path) -> None:
    source, runs = _one_cell_chapters(tmp_path), tmp_path / "runs"
    first = next(iter(LATEST.values()))
    for date, chapters in (("2030-01-01", ["05_training.ipynb", "07_make_it_fast.ipynb"]),
                           ("2030-02-01", ["07_make_it_fast.ipynb"])):
        folder = runs / f"nvidia-h200-{date}"
        folder.mkdir(parents=True)
        for file in chapters:
            shutil.copy(first.folder / file, folder / file)
        (folder / "run.json").write_text(json.dumps({**first.facts, "date": date,
                                                     "chapters": {file: {} for file in chapters}}))
    written = {path.name for path in site.build(tmp_path / "book", source=source, runs=runs)}
    assert {"07_make_it_fast-nvidia-h200-2030-02-01.html", "05_training-nvidia-h200-2030-01-01.html"} <= written
    assert "07_make_it_fast-nvidia-h200-2030-01-01.html" not in written, "only the latest run of a chapter"
    assert "The checks found nothing in it." in (tmp_path / "book" / "05_training-nvidia-h200-2030-01-01.html"
                                                 ).read_text(), "no findings.json beside that run"
    assert "2030-02-01" in (tmp_path / "book" / "07_make_it_fast.html").read_text()
    assert "book-recorded" not in (tmp_path / "book" / "03_gpu_cupy.html").read_text(), "no run of chapter 03 here"
    bare = {path.name for path in site.build(tmp_path / "bare", source=source, runs=tmp_path / "no-runs")}
    assert not any("nvidia" in name for name in bare)
    assert "Recorded on a real GPU or TPU" not in (tmp_path / "bare" / "index.html").read_text()


@pytest.mark.parametrize(("file", "text", "said"), [
    ("run.json", '{"kind": "loops-to-tpus recorded run", "version": 1}', "names its device (name and kind)"),
    ("run.json", "{", "not a readable JSON file"),
    ("findings.json", '{"findings": [{"cell": 3}]}', "each finding needs cell, chapter, item, rule, text"),
    ("findings.json", "[]", "not a findings file"),
    ("05_training.ipynb", "not a notebook", "cannot be read as a recorded run"),
])
def test_a_broken_recorded_run_stops_the_book_in_one_line(tmp_path, file, text, said) -> None:
    first = next(iter(LATEST.values()))
    run = tmp_path / "runs" / first.folder.name
    shutil.copytree(first.folder, run)
    (run / file).write_text(text)
    with pytest.raises(site.ClassroomError, match=re.escape(said)) as raised:
        site.build(tmp_path / "book", source=_one_cell_chapters(tmp_path), runs=tmp_path / "runs")
    assert "\n" not in str(raised.value)  # the command prints it as its one line (exit 2)


def _notebook(tmp_path: Path, *cells: nbformat.NotebookNode) -> Path:
    nb = nbformat.v4.new_notebook(cells=list(cells))
    nbformat.write(nb, tmp_path / "chapter.ipynb")
    return tmp_path / "chapter.ipynb"


def test_the_math_of_markdown_cells_becomes_mathml_and_code_and_outputs_stay_as_they_are(tmp_path) -> None:
    code = nbformat.v4.new_code_cell('print("$$\\frac{1}{2}$$")', outputs=[
        nbformat.v4.new_output("display_data", {"text/markdown": "costs $a^2$ here"})])
    path = _notebook(tmp_path, nbformat.v4.new_markdown_cell(
        "Amdahl: $$\\frac{1}{s + (1 - s)/p}$$ with $p$ workers."), code)
    page = site.chapter_html(path, 0)
    code_at = page.index('<div class="jp-Cell jp-CodeCell')
    markdown = page[page.index("Amdahl"):code_at]
    assert [m.group(1) for m in re.finditer(r'<math [^>]*display="(\w+)"', markdown)] == ["block", "inline"]
    assert "<mfrac>" in markdown and "$" not in markdown and "\\" not in markdown
    assert 'print("$$\\frac{1}{2}$$")' in html.unescape(re.sub("<[^>]*>", "", page[code_at:]))  # as it is
    assert "costs $a^2$ here" in page  # a markdown output: as nbconvert renders it


@pytest.mark.parametrize(("tex", "why"), [("x^", "MissingSuperScriptOrSubscriptError"),
                                          ("\\frax{1}{2}", "as text (one it does not know)")])
def test_tex_that_cannot_be_drawn_stops_the_build_naming_the_chapter_and_the_tex(tmp_path, tex, why) -> None:
    path = _notebook(tmp_path, nbformat.v4.new_markdown_cell(f"Before. $${tex}$$ After."))
    with pytest.raises(site.ClassroomError) as raised:
        site.chapter_html(path, 0)
    assert str(raised.value).startswith("chapter.ipynb: latex2mathml ") and repr(tex) in str(raised.value)
    assert why in str(raised.value)


def test_a_chapter_link_to_the_glossary_goes_to_the_book_page(tmp_path) -> None:
    path = _notebook(tmp_path, nbformat.v4.new_markdown_cell("A [warp](../docs/glossary.md#warp) is 32 threads."))
    page = site.chapter_html(path, 0)
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
@pytest.mark.parametrize(("name", "chapter"), PAGES, ids=[name for name, _ in PAGES])
def test_a_real_browser_draws_every_figure_and_formula_offline_with_the_set_up_cell_folded(book, tmp_path, name,
                                                                                          chapter) -> None:
    """Headless Chromium, every request outside this machine sent to a closed port: the page's figures must
    still draw (plotly makes one main-svg per layer, at least two per figure), its formulas too (MathML laid out
    as math: a size, each fraction's numerator above its denominator, no TeX left in the text), and the set-up cell
    folded, there when opened. In CI it must run."""
    assert CHROMIUM, "CI must have Chromium: .ci/run installs Debian's"
    page = book / name
    probe = book / f"probe-{page.name}"  # the page, and a script that writes what the browser laid out into it
    probe.write_text(page.read_text().replace("</body>", f"<script>{PROBE}</script></body>", 1))
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path}",
         "--proxy-server=127.0.0.1:9", "--virtual-time-budget=10000",
         "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    drawn = re.findall(r'<div[^>]*\bid="([\w-]+-figure-\d+)"[^>]*>(.*?)</div><script', done.stdout, re.S)
    figures = _figures(chapter)
    assert len(drawn) == figures, f"{len(drawn)} figure divs in the DOM, {figures} in the notebook"
    empty = [name for name, inner in drawn if inner.count('class="main-svg"') < 2]
    assert not empty, f"figures that did not draw: {empty}"
    seen = json.loads(html.unescape(re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S).group(1)))
    assert len(seen["math"]) == page.read_text().count("<math ") >= _display_math(chapter)
    assert all(width > 0 and height > 0 and "math" in display for width, height, display in seen["math"]), seen
    assert all(seen["fractions"]) and len(seen["fractions"]) >= page.read_text().count("<mfrac>")
    assert not re.search(r"\$\$|\\frac|\\text\{", seen["text"]), "TeX left in the chapter's text"
    if _has_setup(chapter):
        assert seen["setup"] == {"open": False, "summary": True, "code": False, "opened": True}


#: Run in the page once it has loaded: what the browser laid out, as JSON in a <pre id="probe">.
PROBE = """window.addEventListener("load", () => {
  const box = (e) => e.getBoundingClientRect();
  const math = [...document.querySelectorAll("math")].map(
    (m) => [box(m).width, box(m).height, getComputedStyle(m).display]);
  const fractions = [...document.querySelectorAll("mfrac")].map(
    (f) => box(f.children[0]).bottom <= box(f.children[1]).top + 1);
  const text = [...document.querySelectorAll(".jp-MarkdownCell")].map((c) => c.innerText).join("\\n");
  const folded = document.querySelector("details.book-setup");
  let setup = null;
  if (folded) {
    const code = folded.querySelector(".jp-InputArea-editor");
    setup = {open: folded.open, summary: folded.querySelector("summary").checkVisibility(),
             code: code.checkVisibility()};
    folded.open = true;
    setup.opened = code.checkVisibility() && code.innerText.includes("google.colab");
  }
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({math, fractions, text, setup});
  document.body.append(out);
});"""
