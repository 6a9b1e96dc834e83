"""`python -m helpers site build DIR`: the series as an offline HTML book, read without running anything.

Every chapter from its stored outputs, with navigation; figures stay interactive (plotly.js is copied into DIR,
no CDN); the chapter map is the index; the teacher guide and the glossary are pages of their own.
`python -m http.server` in DIR serves it. Needs the `dev` extra (nbconvert); refuses to write into the
repository's own folders.
"""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from typing import Any

from . import glossary
from .classroom import ClassroomError, output_folder, replace_file
from .project import CHAPTERS
from .upkeep import PLOTLY

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
GUIDE = ROOT / "docs" / "teaching.md"

#: nbconvert's templates load require.js and MathJax from a CDN: the book goes without them (math shows as TeX).
CDN_SCRIPT = re.compile(r"<script[^>]*\bsrc=\"https?://[^\"]*\"[^>]*>\s*</script>", re.I)
CHAPTER_LINK = re.compile(r'href="(\d\d_\w+)\.ipynb"')
#: A chapter's link to a glossary entry (docs/glossary.md#warp), which goes to the book's glossary page.
GLOSSARY_LINK = re.compile(r'href="(?:\.\./)?(?:docs/)?glossary\.md(#[^"]*)?"')
STYLE = ("<style>.book-nav{font-family:sans-serif;padding:8px 16px;background:#f3f3f3;display:flex;gap:24px}"
         ".book-nav a{text-decoration:none}.plotly-figure{width:100%}</style>")


def _nav(index: int) -> str:
    """Links to the index, and to the previous and next chapters."""
    links = ['<a href="index.html">Contents</a>']
    if index > 0:
        links.append(f'<a href="{_page(CHAPTERS[index - 1].file)}">&larr; {escape(CHAPTERS[index - 1].title)}</a>')
    if index + 1 < len(CHAPTERS):
        links.append(f'<a href="{_page(CHAPTERS[index + 1].file)}">{escape(CHAPTERS[index + 1].title)} &rarr;</a>')
    return f'<nav class="book-nav">{"".join(links)}</nav>'


def _page(notebook: str) -> str:
    return notebook.removesuffix(".ipynb") + ".html"


def interactive(nb: Any, prefix: str) -> int:
    """Replace each plotly figure's outputs by a div that plotly.js (loaded once per page) draws; the PNG stays as
    the picture for a browser without scripts. Returns how many figures were converted."""
    count = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if PLOTLY not in data:
                continue
            figure, png = data[PLOTLY], data.get("image/png")
            div = f"{prefix}-figure-{count}"
            spec = json.dumps({"data": figure.get("data", []), "layout": figure.get("layout", {})})
            spec = spec.replace("</", "<\\/")  # a string holding </script> must not end the script
            html = (f'<div id="{div}" class="plotly-figure"></div><script>(function () {{ const f = {spec}; '
                    f'Plotly.newPlot("{div}", f.data, f.layout, {{"responsive": true}}); }})();</script>')
            if png:
                html += f'<noscript><img alt="figure" src="data:image/png;base64,{png}"/></noscript>'
            output["data"] = {"text/html": html}
            count += 1
    return count


def chapter_html(path: Path, index: int) -> str:
    """One chapter as a page of the book."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(path, as_version=4)
    interactive(nb, path.stem)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    body = CDN_SCRIPT.sub("", body)
    body = CHAPTER_LINK.sub(r'href="\1.html"', body)  # links between chapters go to their pages
    body = GLOSSARY_LINK.sub(r'href="glossary.html\1"', body)
    return _with_nav(body, f'<script src="plotly.min.js"></script>{STYLE}', index)


def _with_nav(body: str, head: str, index: int) -> str:
    """The page with `head` in its head, and the navigation at the top and the bottom of its body."""
    body = body.replace("</head>", head + "</head>", 1)
    at = body.find(">", body.find("<body")) + 1
    nav = _nav(index)
    return body[:at] + nav + body[at:].replace("</body>", nav + "</body>", 1)


def index_html() -> str:
    """The chapter map, as the book's first page."""
    rows = "".join(f'<tr><td>{c.file[:2]}</td><td><a href="{_page(c.file)}">{escape(c.title)}</a></td>'
                   f"<td>{escape(c.promise)}</td><td>{c.minutes} min</td></tr>" for c in CHAPTERS)
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>From Loops to TPUs</title>"
            "<style>body{font-family:sans-serif;margin:2em;max-width:60em}td{padding:4px 10px;vertical-align:top}"
            "</style></head><body><h1>From Loops to TPUs</h1><p>Why GPUs and TPUs make deep learning fast, "
            "measured. This book shows every chapter as it was last run on the authors' machine; open the "
            "notebooks to measure yours.</p>"
            f"<table><tr><th>#</th><th>Chapter</th><th>What you get</th><th>Time</th></tr>{rows}</table>"
            '<p>Teaching with it? <a href="teaching.html">The teacher guide</a>. A word you do not know? '
            '<a href="glossary.html">The glossary</a>.</p></body></html>')


def _text_page(title: str, body: str) -> str:
    """A page of text with a link back to the contents."""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
            "<style>body{font-family:sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:3px 6px}</style></head><body>"
            f'<p><a href="index.html">Contents</a></p>{body}</body></html>')


def guide_html(text: str) -> str:
    """The teacher guide (Markdown) as a page."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return _text_page("Teaching with From Loops to TPUs", markdown2html_mistune(text))


def glossary_html() -> str:
    """The glossary as a page, each entry under an anchor the chapters' glossary links point to."""
    entries = "".join(f'<h2 id="{t.anchor}">{escape(t.name)}</h2><p>{escape(t.definition)}</p>'
                      for t in glossary.TERMS)
    return _text_page("Glossary", f"<h1>Glossary</h1>{entries}")


def build(folder: str | Path, force: bool = False, source: Path = NOTEBOOKS) -> list[Path]:
    """Write the book into `folder`; returns the files written. Refuses the repository's own folders, and a
    folder that is not empty unless `force`; a link in `folder` where a page goes is replaced, never followed."""
    import plotly

    folder = Path(folder)
    missing = [c.file for c in CHAPTERS if not (source / c.file).is_file()]
    if missing or not GUIDE.is_file():
        raise ClassroomError(f"not found: {', '.join(missing) or GUIDE} (run this in a clone of the repository)")
    output_folder(folder, force, ROOT, f"inside the repository ({ROOT})", "the site")
    written = [folder / "plotly.min.js"]
    replace_file(written[0], (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes())
    for index, chapter in enumerate(CHAPTERS):
        written.append(folder / _page(chapter.file))
        replace_file(written[-1], chapter_html(source / chapter.file, index).encode("utf-8"))
    pages = (("index.html", index_html()), ("teaching.html", guide_html(GUIDE.read_text("utf-8"))),
             ("glossary.html", glossary_html()))
    for name, html in pages:
        written.append(folder / name)
        replace_file(written[-1], html.encode("utf-8"))
    return written
