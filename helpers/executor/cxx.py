"""The C++ that CUDA tutorials write, lowered to the C the executor's parser (pycparser) reads: template headers
recorded and removed, calls with template arguments named by placeholders, C++ casts made C casts, and C++ words
(`constexpr`, `auto`, `nullptr`, `__restrict__`, `__launch_bounds__`) made C's. Lines keep their numbers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from .errors import UnsupportedSyntax


@dataclass(frozen=True)
class TemplateParam:
    """One template parameter: `typename T` (kind "type") or `int N` (kind "value", with its type's words)."""

    name: str
    kind: str
    type: str = ""
    default: str = ""  # the default argument as written (`256`, `float`), or ""


@dataclass
class Lowered:
    """The lowered text; each template function's parameters by name; each call with template arguments, by the
    placeholder name that stands for it in the text (-> the template's name and its arguments as text)."""

    text: str
    templates: dict[str, list[TemplateParam]] = field(default_factory=dict)
    calls: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    defaults: dict[str, dict[int, str]] = field(default_factory=dict)  # function -> {parameter: default as written}

    @property
    def type_names(self) -> set[str]:
        """The names of every template type parameter (the parser must know them as type names)."""
        return {p.name for params in self.templates.values() for p in params if p.kind == "type"}


_NAME = r"[A-Za-z_]\w*"
#: C++ words and CUDA annotations with a C spelling (or none: removed).
_WORDS = {"constexpr": "const", "__restrict__": "restrict", "__restrict": "restrict", "auto": "__auto",
          "nullptr": "__nullptr", "__forceinline__": "", "__noinline__": "", "__inline__": "", "inline": ""}


def line_of(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def closing(text: str, at: int, line: int) -> int:
    """The index just past the bracket that closes the one at text[at] ('(' or '<'): angle brackets count only
    outside parentheses, so `f<(N > 2)>` closes where C++ does."""
    opener = text[at]
    depth, parens = 0, 0
    for i in range(at, len(text)):
        ch = text[i]
        if ch in "([{":
            parens += 1
        elif ch in ")]}":
            parens -= 1
            if parens < 0:
                break
        if opener == "(" and parens == 0 and ch == ")":
            return i + 1
        if opener == "<" and parens == 0 and ch in "<>":
            depth += 1 if ch == "<" else -1
            if depth == 0:
                return i + 1
        if ch == ";" and parens == 0:
            break
    raise UnsupportedSyntax(f"the {opener!r} here is never closed", line)


def split_arguments(text: str) -> list[str]:
    """A template's or call's arguments, split at their top-level commas."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "(<[{"
        depth -= ch in ")>]}"
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    return [*parts, last] if last or parts else []


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def _template_params(inner: str, line: int) -> list[TemplateParam]:
    params = []
    for written in split_arguments(inner):
        part, _, default = (p.strip() for p in written.partition("="))
        match = re.fullmatch(rf"(typename|class)\s+({_NAME})", part)
        if match:
            params.append(TemplateParam(match.group(2), "type", default=default))
            continue
        match = re.fullmatch(rf"((?:const\s+)?(?:unsigned\s+|signed\s+)?(?:int|long long|long|short|char|bool|"
                             rf"unsigned|size_t|{_NAME}))\s+({_NAME})", part)  # a typedef's name: const uint N
        if not match:
            raise UnsupportedSyntax(f"the template parameter {part!r}: the executor takes `typename T` and whole "
                                    "numbers (`int N`)", line)
        params.append(TemplateParam(match.group(2), "value", match.group(1).replace("const", "").strip(), default))
    if not params:
        raise UnsupportedSyntax("template<> (an explicit specialisation): write a separate function", line)
    return params


def _templates(text: str, lowered: Lowered) -> str:
    """Every `template <...>` header recorded for the function after it, and blanked."""
    while match := re.search(r"(?<!\w)template\s*<", text):
        line = line_of(text, match.start())
        end = closing(text, match.end() - 1, line)
        params = _template_params(text[match.end():end - 1], line)
        name = re.match(rf"[^;{{(]*?({_NAME})\s*\(", text[end:])
        if not name:
            raise UnsupportedSyntax("a template that is not a function (a class or a variable template)", line)
        if name.group(1) in lowered.templates:
            raise UnsupportedSyntax(f"two templates named {name.group(1)} (overloads)", line)
        lowered.templates[name.group(1)] = params
        text = text[:match.start()] + _blank(text[match.start():end]) + text[end:]
    return text


def _calls(text: str, lowered: Lowered) -> str:
    """Each `name<args>(` of a template function: `name<args>` becomes a placeholder name (padded, so that the
    columns after it stay where they were when it is shorter)."""
    for name in lowered.templates:
        pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\s*<")
        while match := pattern.search(text):
            line = line_of(text, match.start())
            end = closing(text, match.end() - 1, line)
            if not re.match(r"\s*\(", text[end:]):
                raise UnsupportedSyntax(f"{name}<...> not followed by a call", line)
            placeholder = f"{name}__t{len(lowered.calls)}"
            lowered.calls[placeholder] = (name, split_arguments(text[match.end():end - 1]))
            text = text[:match.start()] + placeholder.ljust(end - match.start()) + text[end:]
    return text


def _casts(text: str) -> str:
    """static_cast<T>(e), reinterpret_cast and const_cast as C casts ((T)(e)); dynamic_cast refused."""
    while match := re.search(r"(?<!\w)(static_cast|reinterpret_cast|const_cast|dynamic_cast)\s*<", text):
        line = line_of(text, match.start())
        if match.group(1) == "dynamic_cast":
            raise UnsupportedSyntax("dynamic_cast: kernels have no classes to cast between", line)
        end = closing(text, match.end() - 1, line)
        paren = re.match(r"\s*\(", text[end:])
        if not paren:
            raise UnsupportedSyntax(f"{match.group(1)}<...> needs its argument in brackets", line)
        close = closing(text, end + paren.end() - 1, line)
        type_text = text[match.end():end - 1]
        argument = text[end + paren.end():close - 1]
        text = f"{text[:match.start()]}(({type_text})({argument})){text[close:]}"
    return text


def _launch_bounds(text: str) -> str:
    while match := re.search(r"(?<!\w)__launch_bounds__\s*\(", text):
        end = closing(text, match.end() - 1, line_of(text, match.start()))
        text = text[:match.start()] + _blank(text[match.start():end]) + text[end:]
    return text


_CONTROL = ("if", "for", "while", "switch", "return", "sizeof", "do")


def _signatures(text: str) -> Iterator[tuple[re.Match[str], int]]:
    """Each name( ... ) at file scope that is no control keyword (a function's signature), with the index just past
    its closing bracket. The callers rewrite a signature's brackets in place, keeping every index where it was."""
    depth, at = 0, 0
    for match in re.finditer(rf"[{{}}]|(?<![\w.])({_NAME})\s*\(", text):
        if match.group(0) in "{}":
            depth += 1 if match.group(0) == "{" else -1
            continue
        if depth or match.start() < at or match.group(1) in _CONTROL:
            continue
        at = closing(text, match.end() - 1, line_of(text, match.start()))
        yield match, at


def _default_arguments(text: str, lowered: Lowered) -> str:
    """Each function's default arguments (float by = 2.0f) recorded by parameter and blanked: only a function
    defined or declared at file scope has them (a call or an if at file scope has no `=` in its brackets)."""
    for match, end in _signatures(text):
        params = split_arguments(text[match.end():end - 1])
        if not any("=" in param for param in params):
            continue
        found = {k: param.partition("=")[2].strip() for k, param in enumerate(params) if "=" in param}
        lowered.defaults[match.group(1)] = found
        inner = ", ".join(param.partition("=")[0] for param in params)
        text = text[:match.end()] + inner.ljust(end - 1 - match.end()) + text[end - 1:]
    return text


def _references(text: str) -> str:
    """A function's reference parameters (const float& x, cg::thread_block& block) passed by value, which is the
    same while the function writes neither the parameter nor through it; one that it writes is refused."""
    for match, end in _signatures(text):
        body = re.match(r"\s*\{", text[end:])
        params = text[match.end():end - 1]
        if body is None or not re.search(r"[\w>]\s*&\s*[A-Za-z_]\w*\s*(?:,|$)", params):
            continue
        stop = closing_brace(text, end + body.end() - 1)
        if stop < 0:
            continue  # an unclosed body: the parser names it
        for ref in re.finditer(r"[\w>]\s*(&)\s*([A-Za-z_]\w*)\s*(?=,|$)", params):
            _refuse_written_reference(text[end:stop], ref.group(2), "const" in params[:ref.start()].split(",")[-1],
                                      line_of(text, match.start()))
        lowered = re.sub(r"([\w>]\s*)&(\s*[A-Za-z_]\w*\s*(?=,|$))", r"\1 \2", params)
        text = text[:match.end()] + lowered + text[end - 1:]
    return text


def _refuse_written_reference(body: str, name: str, const: bool, line: int) -> None:
    """An UnsupportedSyntax where a function assigns to a reference parameter, increments it or takes its address
    (the caller would see the change; the executor passes values)."""
    written = rf"(?<![\w.]){name}\s*(?:\.\s*\w+\s*|\[[^\]]*\]\s*)*(?:[-+*/%&|^]|<<|>>)?=(?!=)"
    if const or not re.search(rf"{written}|(?:\+\+|--)\s*{name}(?!\w)|(?<![\w.]){name}\s*(?:\+\+|--)|"
                              rf"&\s*{name}(?!\w)", body):
        return
    raise UnsupportedSyntax(f"the reference parameter {name} (T& {name}) is written by its function, so the caller "
                            "would see the change; the CPU executor passes parameters by value: return the new "
                            f"value, or pass a pointer (T* {name}) and write *{name}", line)


def _braced_arguments(text: str) -> str:
    """A braced list passed as a function's argument, f(a, { x, 1.0f }), as a compound literal of the parameter's
    type, which the translator supplies: (__auto){ x, 1.0f }."""
    if not re.search(r"[(,]\s*\{", text):
        return text
    out, stack, last = [], [], ""
    for ch in text:
        if ch == "{" and stack and stack[-1] == "(" and last in "(,":
            out.append("(__auto)")
        if ch in "({[":
            stack.append(ch)
        elif ch in ")}]" and stack:
            stack.pop()
        if not ch.isspace():
            last = ch
        out.append(ch)
    return "".join(out)


def lower_structs(text: str) -> str:
    """C++'s `struct NAME { ... };` as C's `typedef struct NAME { ... } NAME;` (so NAME names the type, as in
    C++), with `__align__(n)` and `alignas(n)` dropped (the executor keeps no addresses of structs)."""
    text = re.sub(r"(?<![\w.])(?:__align__|alignas)\s*\(\s*\w+\s*\)", lambda m: " " * len(m.group(0)), text)
    out, start = [], 0
    for match in re.finditer(r"(?<![\w.])struct\s+([A-Za-z_]\w*)\s*\{", text):
        if match.start() < start or re.search(r"typedef\s*$", text[:match.start()]):
            continue
        end = closing_brace(text, match.end() - 1) - 1
        tail = re.match(r"\s*;", text[end + 1:]) if end >= 0 else None
        if tail is None:
            continue  # struct X { ... } x; : left as it is
        out.append(text[start:match.start()] + "typedef " + text[match.start():end + 1] + f" {match.group(1)}")
        start = end + 1
    return "".join(out) + text[start:]


def shared_memory_wrappers(text: str) -> str:
    """NVIDIA's samples' idiom for a template's dynamic shared memory, `template <class T> struct SharedMemory {
    __device__ operator T*() { extern __shared__ int __smem[]; return (T*)__smem; } };` used as
    `T* s = SharedMemory<T>();`: the struct (and its specialisations, template <> struct SharedMemory<double>)
    become one template function, NAME__get<T>(), returning the extern __shared__ array cast to T* (on a GPU every
    extern __shared__ array is the same bytes). Lines keep their numbers."""
    pattern = re.compile(r"template\s*<\s*(?:class|typename)\s+(\w+)\s*>\s*struct\s+(\w+)\s*\{")
    for match in list(pattern.finditer(text))[::-1]:
        param, name = match.group(1), match.group(2)
        end = closing_brace(text, match.end() - 1) - 1
        body = text[match.end():end]
        array = re.search(r"extern\s+__shared__\s+(\w+)\s+(\w+)\s*\[\s*\]", body)
        if end < 0 or array is None or not re.search(rf"operator\s+{param}\s*\*\s*\(\s*\)", body) or \
                re.search(r"operator\s*[^\s\w]", body):
            continue
        tail = re.match(r"\s*;", text[end + 1:])
        stop = end + 1 + (tail.end() if tail else 0)
        function = (f"template <class {param}> __device__ {param}* {name}__get() {{ extern __shared__ "
                    f"{array.group(1)} {array.group(2)}[]; return ({param}*){array.group(2)}; }}")
        text = text[:match.start()] + function + "\n" * text.count("\n", match.start(), stop) + text[stop:]
        text = _drop_specialisations(text, name)
        text = re.sub(rf"(?<![\w.]){name}\s*<([^<>;]*)>\s*\(\s*\)", rf"{name}__get<\1>()", text)
    return text


def _drop_specialisations(text: str, name: str) -> str:
    """`template <> struct NAME<double> { ... };` blanked (newlines kept)."""
    while match := re.search(rf"template\s*<\s*>\s*struct\s+{name}\s*<[^<>]*>\s*\{{", text):
        end = closing_brace(text, match.end() - 1) - 1
        if end < 0:
            break
        tail = re.match(r"\s*;", text[end + 1:])
        stop = end + 1 + (tail.end() if tail else 0)
        text = text[:match.start()] + "\n" * text.count("\n", match.start(), stop) + text[stop:]
    return text


def closing_brace(text: str, at: int) -> int:
    """The index just past the brace that closes the one at text[at] (-1 if none does)."""
    depth = 0
    for k in range(at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        if depth == 0:
            return k + 1
    return -1


def lower(text: str) -> Lowered:
    """`text` (comments and directives gone) as C that pycparser reads, and what the templates were."""
    lowered = Lowered(text)
    text = _launch_bounds(text)
    text = _templates(text, lowered)
    for word in ("class", "typename", "template"):
        if match := re.search(rf"(?<![\w.]){word}(?!\w)", text):
            raise UnsupportedSyntax(f"{word!r} outside a function template's parameters (classes and class "
                                    "templates are not in the subset the CPU executor runs)",
                                    line_of(text, match.start()))
    text = _casts(text)
    text = _default_arguments(text, lowered)
    text = _references(text)
    text = _braced_arguments(text)
    text = _calls(text, lowered)
    for word, replacement in _WORDS.items():
        text = re.sub(rf"(?<![\w.]){word}(?!\w)", replacement, text)
    lowered.text = text
    return lowered
