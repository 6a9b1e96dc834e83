"""C++ names, lowered before the rest of the C++ (helpers.executor.cxx): a `namespace NAME { ... }` block is opened
up and `NAME::x` becomes `x`; `using T = float;` becomes a typedef; CUDA's own namespaces (cooperative_groups,
nvcuda::wmma), however they are reached (`namespace cg = cooperative_groups;`, `using namespace nvcuda;`,
`nvcuda::wmma::`), become single names the translator knows: `cg::this_thread_block` is __cg_this_thread_block,
`wmma::mma_sync` is __wmma_mma_sync, and their templates (`thread_block_tile<32>`, `fragment<...>`) one name per
instance. Lines keep their numbers."""

from __future__ import annotations

import re

from .cxx import closing, closing_brace, line_of
from .errors import CudaCError, UnsupportedSyntax

#: CUDA's namespaces the executor runs, the prefix their names get, the header that declares them and the names
#: a `using namespace` makes visible unqualified (and that the translator knows).
CUDA_NAMESPACES = {
    "cooperative_groups": ("__cg_", "cooperative_groups.h", (
        "thread_block", "thread_block_tile", "this_thread_block", "tiled_partition", "reduce", "plus", "less",
        "greater", "bit_and", "bit_or", "bit_xor", "sync", "this_grid", "grid_group", "thread_group",
        "coalesced_group", "coalesced_threads")),
    "nvcuda::wmma": ("__wmma_", "mma.h", (
        "fragment", "matrix_a", "matrix_b", "accumulator", "row_major", "col_major", "mem_row_major",
        "mem_col_major", "fill_fragment", "load_matrix_sync", "store_matrix_sync", "mma_sync", "layout_t")),
}
#: The names of cooperative_groups that <cooperative_groups/reduce.h> declares.
REDUCE_NAMES = ("reduce", "plus", "less", "greater", "bit_and", "bit_or", "bit_xor")
_NAME = r"[A-Za-z_]\w*"


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def lower_names(text: str, includes: set[str]) -> str:
    """`text` with its namespaces and `using` declarations lowered, CUDA's names prefixed."""
    aliases: dict[str, str] = {}
    used: list[str] = []
    own: set[str] = set()

    def alias(match: re.Match[str]) -> str:
        aliases[match.group(1)] = re.sub(r"\s+", "", match.group(2))
        return _blank(match.group(0))

    def using(match: re.Match[str]) -> str:
        used.append(re.sub(r"\s+", "", match.group(1)))
        return _blank(match.group(0))

    text = re.sub(rf"(?<![\w:])namespace\s+({_NAME})\s*=\s*((?:{_NAME}\s*::\s*)*{_NAME})\s*;", alias, text)
    text = re.sub(rf"(?<![\w:])using\s+namespace\s+((?:{_NAME}\s*::\s*)*{_NAME})\s*;", using, text)
    text = re.sub(rf"(?<![\w:])using\s+({_NAME})\s*=\s*([^;]+);", lambda m: f"typedef {m.group(2)} {m.group(1)};",
                  text)
    text = _open_namespaces(text, own)
    text = _qualified(text, aliases, used, own)
    for namespace in used:
        full = _resolve(namespace.split("::"), aliases, [], own)
        if full in CUDA_NAMESPACES:
            prefix, _, names = CUDA_NAMESPACES[full]
            defined = set(re.findall(rf"(?<![\w.:])\w+[\s*&]+({'|'.join(names)})\s*\(", text))
            text = re.sub(rf"(?<![\w.:])({'|'.join(n for n in names if n not in defined)})(?!\w)",
                          lambda m, p=prefix: p + m.group(1), text)
    _needs_headers(text, includes)
    return text


def _open_namespaces(text: str, own: set[str]) -> str:
    """Each `namespace NAME { ... }` (or an unnamed one) with its header and closing brace blanked."""
    while match := re.search(rf"(?<![\w:])namespace\s*({_NAME})?\s*\{{", text):
        if match.group(1):
            own.add(match.group(1))
        end = _brace(text, match.end() - 1)
        text = text[:match.start()] + _blank(text[match.start():match.end()]) + text[match.end():end - 1] + " " + \
            text[end:]
    if match := re.search(r"(?<![\w:])namespace(?!\w)", text):
        raise UnsupportedSyntax("this namespace declaration: the executor reads `namespace NAME { ... }` and "
                                "`namespace cg = cooperative_groups;`", line_of(text, match.start()))
    return text


def _brace(text: str, at: int) -> int:
    """The index just past the brace that closes the one at text[at]."""
    end = closing_brace(text, at)
    if end < 0:
        raise CudaCError("a namespace's { is never closed", line_of(text, at))
    return end


def _resolve(chain: list[str], aliases: dict[str, str], used: list[str], own: set[str]) -> str:
    """The namespace a qualifier such as `cg` or `wmma` names: its alias's, or one under a used namespace."""
    chain = [*aliases.get(chain[0], chain[0]).split("::"), *chain[1:]]
    full = "::".join(chain)
    if full in CUDA_NAMESPACES or full in own or not used:
        return full
    for namespace in used:
        candidate = f"{_resolve(namespace.split('::'), aliases, [], own)}::{full}"
        if candidate in CUDA_NAMESPACES:
            return candidate
    return full


def _qualified(text: str, aliases: dict[str, str], used: list[str], own: set[str]) -> str:
    """Every `A::B::name`: CUDA's namespaces' names prefixed, the source's own namespaces dropped."""
    def name(match: re.Match[str]) -> str:
        chain = [part.strip() for part in match.group(1).split("::") if part.strip()]
        full = _resolve(chain, aliases, used, own)
        if full in CUDA_NAMESPACES:
            return CUDA_NAMESPACES[full][0] + match.group(2)
        if full in own or all(part in own for part in chain):
            return match.group(2)
        return match.group(0)  # std:: and the like: refused later, naming it
    return re.sub(rf"(?<![\w:])((?:{_NAME}\s*::\s*)+)({_NAME})", name, text)


def _needs_headers(text: str, includes: set[str]) -> None:
    """NVRTC's error when CUDA's namespaces are used without the header that declares them."""
    for prefix, header, _ in CUDA_NAMESPACES.values():
        if (found := re.search(rf"(?<!\w){prefix}\w", text)) and header not in includes:
            raise CudaCError(f"{found.group(0)[len(prefix):]}... comes from <{header}>: #include it first (NVRTC: name "
                             "followed by \"::\" must be a class or namespace name)", line_of(text, found.start()))
    found = re.search(rf"(?<!\w)__cg_({'|'.join(REDUCE_NAMES)})(?!\w)", text)
    if found and "cooperative_groups/reduce.h" not in includes:
        raise CudaCError(f"cooperative_groups::{found.group(1)} comes from <cooperative_groups/reduce.h>: #include it "
                         f"too (NVRTC: namespace \"cooperative_groups\" has no member \"{found.group(1)}\")",
                         line_of(text, found.start()))


def _constants(text: str) -> dict[str, str]:
    """The source's whole-number constants, `const int WMMA_M = 16, WMMA_N = 16;` (for template arguments)."""
    found: dict[str, str] = {}
    for group in re.findall(r"(?<!\w)(?:const|constexpr)\s+(?:unsigned\s+|signed\s+)?(?:int|long|short|size_t|"
                            r"unsigned)\s+([^;{}()]+);", text):
        for part in group.split(","):
            name, _, value = (x.strip() for x in part.partition("="))
            value = re.sub(r"[A-Za-z_]\w*", lambda m: found.get(m.group(0), m.group(0)), value)
            if re.fullmatch(r"[A-Za-z_]\w*", name) and re.fullmatch(r"[\d\s+\-*/%()]+", value):
                found[name] = f"({value})"
    return found


def _number(text: str, line: int, what: str, constants: dict[str, str] | None = None) -> int:
    """A template argument that must be a whole number known now (digits and arithmetic, #defines expanded)."""
    text = re.sub(r"[A-Za-z_]\w*", lambda m: (constants or {}).get(m.group(0), m.group(0)), text)
    if not re.fullmatch(r"[\d\s+\-*/%()<>]+", text):
        raise UnsupportedSyntax(f"{what}<{text.strip()}>: the executor needs a number here (or a #define of one)",
                                line)
    return int(eval(text.replace("/", "//"), {"__builtins__": {}}))  # noqa: S307 - digits and operators only


def instances(text: str) -> tuple[str, set[str]]:
    """CUDA's templates as one name per instance: thread_block_tile<32> is __cg_tile_32, tiled_partition<32>(b)
    is __cg_tiled_partition_32(b), plus<float>() is __cg_plus(), and a WMMA fragment<matrix_a, 16, 16, 16, half,
    row_major> is __wmma_frag_matrix_a_16_16_16_half_row_major. Returns the text and the type names made."""
    types: set[str] = set()
    constants = _constants(text)
    pattern = re.compile(r"(?<!\w)(__cg_thread_block_tile|__cg_tiled_partition|__cg_(?:plus|less|greater|bit_and|"
                         r"bit_or|bit_xor)|__wmma_fragment)\s*<")
    while match := pattern.search(text):
        line = line_of(text, match.start())
        end = closing(text, match.end() - 1, line)
        inner = text[match.end():end - 1]
        kind = match.group(1)
        if kind == "__cg_thread_block_tile":
            name = f"__cg_tile_{_number(inner, line, 'thread_block_tile', constants)}"
            types.add(name)
        elif kind == "__cg_tiled_partition":
            name = f"__cg_tiled_partition_{_number(inner, line, 'tiled_partition', constants)}"
        elif kind == "__wmma_fragment":
            name = fragment_name(inner, line, constants)
            types.add(name)
        else:
            name = kind
            brace = re.match(r"\s*\{\s*\}", text[end:])
            if brace:  # plus<float>{} as plus<float>()
                text = text[:end] + "()" + " " * (brace.end() - 2) + text[end + brace.end():]
        text = text[:match.start()] + name.ljust(end - match.start()) + text[end:]
    for name in re.findall(r"(?<!\w)__cg_(?:thread_block|grid_group|thread_group|coalesced_group)(?!\w)", text):
        types.add(name)
    if types:  # a group or a fragment passed by reference (const cg::thread_block& b): a handle, passed as it is
        text = re.sub(rf"(?<!\w)({'|'.join(sorted(types))})(\s*)&", r"\1\2 ", text)
    return text, types


def fragment_name(inner: str, line: int, constants: dict[str, str]) -> str:
    """A WMMA fragment's type as one name: its use, shape, element type and layout (none for an accumulator)."""
    from .cxx import split_arguments

    parts = [re.sub(r"\s+", " ", p).strip() for p in split_arguments(inner)]
    if len(parts) not in (5, 6):
        raise CudaCError(f"fragment<{inner.strip()[:60]}>: a fragment is fragment<use, m, n, k, type> with a layout "
                         "(row_major or col_major) for matrix_a and matrix_b", line)
    use = parts[0].removeprefix("__wmma_")
    shape = [_number(p, line, "fragment", constants) for p in parts[1:4]]
    element = {"__half": "half", "half": "half", "float": "float", "__nv_bfloat16": "bf16", "int": "int",
               "unsigned char": "u8", "signed char": "s8", "double": "double",
               "__wmma_precision::tf32": "tf32"}.get(parts[4], parts[4].replace(" ", "_").replace(":", "_"))
    layout = parts[5].removeprefix("__wmma_") if len(parts) == 6 else ""
    return f"__wmma_frag_{use}_{'_'.join(map(str, shape))}_{element}" + (f"_{layout}" if layout else "")
