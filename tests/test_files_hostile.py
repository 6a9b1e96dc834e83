"""classroom copies and site build in a folder someone else prepared: a link where a file goes is replaced, never
written through (into the repository's notebooks, or anywhere else); a link that leads nowhere is one line, exit 2.

Every repository file here is a temporary copy: the real notebooks/ are only read."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from test_classroom import _main

from helpers.book import classroom, site
from helpers.core.project import CHAPTERS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tree(tmp_path) -> Path:
    """A repository-like tree: a copy of every chapter in notebooks/, and a README."""
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    for chapter in CHAPTERS:
        shutil.copyfile(ROOT / "notebooks" / chapter.file, repo / "notebooks" / chapter.file)
    (repo / "README.md").write_text("# the repository's README\n")
    return repo


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _plain_files(folder: Path, names: list[str]) -> None:
    """Each of `names` in `folder` is a file of its own now (no link, no second name), and no temporary is left."""
    for name in names:
        status = os.lstat(folder / name)
        assert stat.S_ISREG(status.st_mode) and status.st_nlink == 1, name
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_copies_replace_links_in_the_folder_and_never_write_through_them_into_the_notebooks(tree, tmp_path) -> None:
    before = _snapshot(tree)
    out = tmp_path / "handouts"
    out.mkdir()
    first, second = CHAPTERS[0].file, CHAPTERS[1].file
    (out / first).symlink_to(tree / "notebooks" / first)  # a link to the very notebook the copy is made from
    os.link(tree / "notebooks" / second, out / second)  # a second name of another one
    (out / classroom.ZIP_NAME).symlink_to(tree / "README.md")
    written = classroom.write_copies(out, force=True, source=tree / "notebooks")
    assert _snapshot(tree) == before
    _plain_files(out, [p.name for p in written])
    fresh = classroom.write_copies(tmp_path / "fresh", source=tree / "notebooks")
    assert [p.read_bytes() for p in written] == [p.read_bytes() for p in fresh]


def test_site_build_replaces_links_in_the_folder_and_never_writes_through_them(tree, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(site, "chapter_html", lambda path, index: f"<html>{path.name}</html>")  # fast: no nbconvert
    before = _snapshot(tree)
    out = tmp_path / "book"
    out.mkdir()
    (out / "index.html").symlink_to(tree / "notebooks" / CHAPTERS[0].file)
    (out / site._page(CHAPTERS[0].file)).symlink_to(tree / "README.md")
    os.link(tree / "notebooks" / CHAPTERS[1].file, out / "plotly.min.js")
    written = site.build(out, force=True, source=tree / "notebooks")
    assert _snapshot(tree) == before
    _plain_files(out, [p.name for p in written])
    assert (out / "plotly.min.js").stat().st_size > 1_000_000


@pytest.mark.parametrize("command", [["classroom", "copies"], ["site", "build"]])
@pytest.mark.parametrize("where", ["loop", "loop/inside"])
def test_a_loop_of_links_as_the_folder_is_one_line_and_exit_2(tmp_path, command, where) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    code, out, err = _main([*command, str(tmp_path / where), "--force"])
    assert code == 2 and not out and err.count("\n") == 1
    assert err.endswith(f"error: {tmp_path / where} cannot be followed to a folder (a loop of symbolic links): give "
                        "a folder, or a path where one can be created\n")
    assert [p.name for p in tmp_path.iterdir()] == ["loop"]


@pytest.mark.parametrize("command", [["classroom", "copies"], ["site", "build"]])
def test_a_link_to_a_missing_folder_is_refused_and_nothing_is_created_where_it_leads(tmp_path, command) -> None:
    (tmp_path / "out").symlink_to(tmp_path / "elsewhere")
    code, _, err = _main([*command, str(tmp_path / "out")])
    assert code == 2 and err.count("\n") == 1
    assert f"{tmp_path / 'out'} is a symbolic link to {tmp_path / 'elsewhere'}, which is not a folder" in err
    assert not (tmp_path / "elsewhere").exists()


def test_copies_refuse_a_link_to_the_notebooks_folder(tree, tmp_path) -> None:
    (tmp_path / "out").symlink_to(tree / "notebooks")
    before = _snapshot(tree)
    with pytest.raises(classroom.ClassroomError, match="is the series' own notebooks folder"):
        classroom.write_copies(tmp_path / "out", force=True, source=tree / "notebooks")
    assert _snapshot(tree) == before


@pytest.mark.parametrize("option", ["--json", "--html"])
def test_bench_never_writes_its_output_through_a_symbolic_link(tmp_path, option) -> None:
    target = tmp_path / "notebook.ipynb"
    target.write_text("the learner's work")
    dangling, link = tmp_path / "dangling.json", tmp_path / "link.json"
    dangling.symlink_to(tmp_path / "nowhere" / "x.json")
    link.symlink_to(target)
    for path in (link, dangling):
        code, _, err = _main(["bench", "--quick", option, str(path)])
        assert code == 2 and "is a symbolic link" in err, err
    assert target.read_text() == "the learner's work" and not (tmp_path / "nowhere").exists()
