"""Every CUDA C source in the repository compiles with NVRTC for the T4 (sm_75) and Hopper (sm_90).

Where sources are found:
- the .cu files in helpers/kernels/;
- string constants holding `__global__` in helpers/*.py, except docstrings (prose), f-strings (templates:
  the ElementwiseKernel generator's output is compiled by tests/test_cuda.py), patterns handed to `re`
  (`re.findall(r"template ... __global__ ...", source)` reads kernels, it is not one) and the CUDA C translator
  (helpers/executor/, whose strings are patterns and messages about kernels);
- in every notebook, code cells and the ```python blocks of Markdown cells (exercise solutions): string
  constants holding `__global__`, and calls `Elementwise(in_params, out_params, operation, name, ...)` (as in
  `h.cuda.Elementwise(...)`), whose arguments must be literals so this test can rebuild the kernel.
Exercise stubs are included: they are written to compile (their TODO computes nothing useful, but is valid C).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest
from conftest import python_only

from helpers import executor
from helpers.gpu import cuda, nvrtc

ROOT = Path(__file__).resolve().parent.parent
CODE_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
if not nvrtc.available():
    print(f"CUDA C sources not compiled: {nvrtc.why()}")  # shown by pytest -s; the skip reason says it too


def _not_sources(tree: ast.AST) -> set[int]:
    """Nodes that hold text, not CUDA C: the parts of f-strings (templates), docstrings (prose) and the patterns
    handed to the `re` module (re.findall(pattern, ...))."""
    skip = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in ast.walk(node)}
    skip |= {id(node.args[0]) for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
             and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
             and node.func.value.id == "re"}
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            skip.add(id(first.value))
    return skip


def sources_in_python(code: str, where: str) -> list[tuple[str, str]]:
    """(label, CUDA C) for each `__global__` string and each literal Elementwise(...) call in `code`."""
    tree = ast.parse(code)
    templates = _not_sources(tree)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and "__global__" in node.value
                and id(node) not in templates):
            found.append((f"{where}, line {node.lineno}", node.value))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                "Elementwise", "ElementwiseKernel"):
            try:
                args = [ast.literal_eval(a) for a in node.args]
                kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            except ValueError:
                if node.func.attr == "ElementwiseKernel" and where.startswith("helpers/"):
                    continue  # the helpers' own plumbing, handing on a kernel's parts (Elementwise.on_gpu)
                raise AssertionError(f"{where}, line {node.lineno}: Elementwise(...) with non-literal arguments; "
                                     "write them as string literals so this test can compile the kernel") from None
            kernel = cuda.Elementwise(*args, **kwargs)
            found.append((f"{where}, line {node.lineno}, Elementwise {kernel.name!r}", kernel.source()))
    return found


#: The package that reads CUDA C rather than holds it.
TRANSLATORS = "executor"


def all_sources() -> list[tuple[str, str]]:
    found = [(f"helpers/kernels/{name}", cuda.kernel_source(name)) for name in cuda.kernel_files()]
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        if path.parent.name == TRANSLATORS:
            continue
        found += sources_in_python(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for index, cell in enumerate(nb.cells):
            where = f"notebooks/{path.name} cell {index}"
            if cell.cell_type == "code" and "%%" not in cell.source:
                found += sources_in_python(python_only(cell.source), where)
            elif cell.cell_type == "markdown":
                for block in CODE_BLOCK.findall(cell.source):
                    found += sources_in_python(block, f"{where} (solution)")
    return found


SOURCES = all_sources()


def test_the_sources_are_found() -> None:
    labels = [label for label, _ in SOURCES]
    assert sum(label.startswith("helpers/kernels/") for label in labels) == len(cuda.kernel_files()) >= 4
    chapter = [label for label in labels if label.startswith("notebooks/03_gpu_cupy.ipynb")]
    assert sum("(solution)" in label for label in chapter) >= 3, chapter  # silu, scale, tiled matmul
    assert sum("Elementwise" in label for label in chapter) >= 3, chapter  # the fused axpby, silu stub, solution


def test_the_finder_sees_strings_and_elementwise_calls_but_not_templates() -> None:
    code = ('k = h.cuda.Elementwise("float32 x", "float32 y", "y = x", "copy")\n'
            's = "__global__ void f() {}"\n'
            't = f"__global__ void {name}() {{}}"\n'
            'def g():\n    """Launches a __global__ function."""\n')
    assert [label for label, _ in sources_in_python(code, "x")] == ["x, line 1, Elementwise 'copy'", "x, line 2"]
    with pytest.raises(AssertionError, match="non-literal"):
        sources_in_python("h.cuda.Elementwise(params, 'float32 y', 'y = x', 'k')", "x")


RAW = [(label, source) for label, source in SOURCES if "Elementwise" not in label]


@pytest.mark.parametrize(("label", "source"), RAW, ids=[label for label, _ in RAW])
def test_every_raw_cuda_source_is_in_the_cpu_executors_subset(label: str, source: str) -> None:
    """So each runs on a machine without a GPU (tests/test_executor.py runs them against NumPy)."""
    assert executor.Program(source).kernels, label


@pytest.mark.skipif(not nvrtc.available(), reason=f"NVRTC is absent, nothing compiled: {nvrtc.why()}")
@pytest.mark.parametrize("arch", nvrtc.TARGET_ARCHS)
@pytest.mark.parametrize(("label", "source"), SOURCES, ids=[label for label, _ in SOURCES])
def test_every_cuda_source_compiles(label: str, source: str, arch: str) -> None:
    try:
        nvrtc.compile_source(source, arch, label.replace(" ", "_"))
    except nvrtc.CompileError as exc:
        pytest.fail(f"{label} does not compile for {arch}:\n{exc}")
