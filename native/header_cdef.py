"""The cffi declarations of the types and constants C shares with Python, read from the public
headers at build time, so a record's layout is written once: in its header.

A header marks what Python sees with two comment lines::

    /* cdef: begin */
    #define OMDP_RT_OPRA_MSG 1
    typedef struct omdp_stamps { int64_t intended; ... } omdp_stamps_t;
    /* cdef: end */

Inside a block: ``#define NAME value`` becomes ``#define NAME ...`` (cffi asks the compiler
for the value); structs, typedefs and opaque types pass as written, less their comments and
``_Atomic`` (the same size, alignment and representation for the naturally aligned integers
it qualifies); an array length written with the headers' integer constants
(``[OMDP_REPLAY_MAX_LINE + 1]``) is computed here, as cffi's parser needs a number. cffi then
checks every struct against the compiler when the module is built, so the declarations Python
uses cannot disagree with C. Anything else in a block (a function-like macro, another
directive, an inline function) is refused with the header's name. The functions Python may
call stay in ``native/cdef/*.cdef``.

Headers are emitted in the order of their ``#include "omdp/..."`` lines (a header after every
header it includes), so a type is declared before a struct uses it.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

BEGIN = "/* cdef: begin */"
END = "/* cdef: end */"

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)(\(?)\s*(.*?)\s*$")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"omdp/(\w+)\.h"', re.M)
_INT_SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b")
_ARRAY = re.compile(r"\[([^\]]*)\]")
# the <stdint.h> limits a header may write a constant with
_KNOWN = {"INT8_MAX": 2**7 - 1, "INT16_MAX": 2**15 - 1, "INT32_MAX": 2**31 - 1, "INT64_MAX": 2**63 - 1,
          "UINT8_MAX": 2**8 - 1, "UINT16_MAX": 2**16 - 1, "UINT32_MAX": 2**32 - 1, "UINT64_MAX": 2**64 - 1}


class HeaderError(ValueError):
    """A marked block cffi cannot take, named by header."""


def strip_comments(text: str) -> str:
    """The text less its C comments (a block comment leaves a space, as in C)."""
    return _COMMENT.sub(lambda m: " " if m.group(0).startswith("/*") else "", text)


def marked_blocks(text: str, where: str) -> list[str]:
    """The text of every ``cdef: begin`` ... ``cdef: end`` block, in order; an unclosed or
    nested block is refused."""
    blocks, start = [], None
    for number, line in enumerate(text.splitlines(), 1):
        mark = line.strip()
        if mark == BEGIN:
            if start is not None:
                raise HeaderError(f"{where}:{number}: a cdef block opened inside another")
            start, body = number, []
        elif mark == END:
            if start is None:
                raise HeaderError(f"{where}:{number}: a cdef block closed that was not opened")
            blocks.append("\n".join(body))
            start = None
        elif start is not None:
            body.append(line)
    if start is not None:
        raise HeaderError(f"{where}:{start}: a cdef block not closed")
    return blocks


def _evaluate(expr: str, values: dict[str, int], where: str) -> int:
    """An integer constant expression of literals and known names, as C computes it for the
    non-negative values headers use."""
    text = _INT_SUFFIX.sub(r"\1", expr.strip())

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in values:
            return values[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            a, b = walk(node.left), walk(node.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.LShift: lambda: a << b, ast.RShift: lambda: a >> b, ast.BitOr: lambda: a | b,
                   ast.BitAnd: lambda: a & b}
            if type(node.op) in ops:
                return ops[type(node.op)]()
            if isinstance(node.op, ast.Div) and a >= 0 and b > 0:
                return a // b
        raise HeaderError(f"{where}: {expr.strip()!r} is not an integer constant of the headers")

    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise HeaderError(f"{where}: {expr.strip()!r} is not an integer constant of the headers") from None
    return walk(tree)


def integer_constants(headers: dict[str, str]) -> dict[str, int]:
    """Every object-like ``#define`` of the headers whose value is an integer constant
    expression (of literals, <stdint.h> limits and each other), by name."""
    raw: dict[str, str] = {}
    for text in headers.values():
        for line in strip_comments(text.replace("\\\n", " ")).splitlines():
            m = _DEFINE.match(line)
            if m and not m.group(2) and m.group(3):
                raw[m.group(1)] = m.group(3)
    values = dict(_KNOWN)
    pending = dict(raw)
    while pending:
        progressed = False
        for name, expr in list(pending.items()):
            try:
                values[name] = _evaluate(expr, values, name)
            except HeaderError:
                continue
            del pending[name]
            progressed = True
        if not progressed:
            break                      # what is left is not an integer (a string, a cast, a macro call)
    return values


def block_cdef(block: str, values: dict[str, int], where: str) -> str:
    """One marked block as cffi declarations (module docstring)."""
    out = []
    for line in strip_comments(block.replace("\\\n", " ")).splitlines():
        if not line.strip():
            continue
        if line.lstrip().startswith("#"):
            m = _DEFINE.match(line)
            if not m or m.group(2) or not m.group(3):
                raise HeaderError(f"{where}: {line.strip()!r}: a cdef block holds only constants, not other directives")
            out.append(f"#define {m.group(1)} ...")
            continue
        if re.search(r"\b(static|inline)\b", line):
            raise HeaderError(f"{where}: {line.strip()!r}: a cdef block holds no inline functions")
        line = re.sub(r"\b_Atomic\s+", "", line)
        line = _ARRAY.sub(lambda m: m.group(0) if not m.group(1).strip() or m.group(1).strip().isdigit()
                          else f"[{_evaluate(m.group(1), values, where)}]", line)
        out.append(line.rstrip())
    return "\n".join(out)


def include_order(headers: dict[str, str]) -> list[str]:
    """Header names (stems), each after the omdp headers it includes; otherwise by name."""
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "open":
            raise HeaderError(f"{name}.h: an include cycle: {' -> '.join(chain + (name,))}")
        state[name] = "open"
        for dep in sorted(set(_INCLUDE.findall(headers[name]))):
            if dep in headers:
                visit(dep, chain + (name,))
        state[name] = "done"
        order.append(name)

    for name in sorted(headers):
        visit(name, ())
    return order


def header_cdef(paths: list[Path]) -> str:
    """The cffi declarations of every marked block of these headers, in include order."""
    headers = {p.stem: p.read_text() for p in paths}
    values = integer_constants(headers)
    parts = []
    for name in include_order(headers):
        blocks = marked_blocks(headers[name], f"{name}.h")
        if blocks:
            parts.append(f"/* {name}.h */")
            parts.extend(block_cdef(b, values, f"{name}.h") for b in blocks)
    return "\n".join(parts) + "\n"
