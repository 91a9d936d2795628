"""No function or method in rmtnet is over 80 lines: counted from its ``def`` line to its last line (docstring
included, decorators not), for every ``def`` and ``async def`` at any depth — module functions, methods, functions
nested in either. A long procedure is split along its seams into named helpers, so that each reads like the steps it
implements."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rmtnet"
MAX_LINES = 80


def _functions(tree, prefix=""):
    """``(qualified name, first line, number of lines)`` of every function in ``tree``, outermost first; a nested
    one is named through its classes and functions (``Class.method``, ``function.<locals>.inner``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            yield name, node.lineno, node.end_lineno - node.lineno + 1
            yield from _functions(node, name + ".<locals>.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")
        else:                                # functions inside if/try/with blocks at any level
            yield from _functions(node, prefix)


def _too_long(source, max_lines=MAX_LINES):
    return [(name, line, n) for name, line, n in _functions(ast.parse(source)) if n > max_lines]


def test_the_count_runs_from_def_to_the_last_line_at_any_depth():
    def statements(indent, n):
        return [" " * indent + f"x{i} = {i}" for i in range(n)]

    source = "\n".join([
        "import functools",
        "@functools.cache",                                    # line 2: decorators are not counted
        "def short():",                                        # line 3
        '    """A docstring."""',
        *statements(4, 78),                                    # def + docstring + 78 = 80 lines: allowed
        "class C:",
        "    if True:",                                        # line 84
        "        def long(self):",                             # line 85: to "return inner", 82 lines
        "            def inner():",                            # line 86: 80 lines, allowed
        *statements(16, 79),
        "            return inner",
        "async def later():",                                  # line 167: 81 lines
        *statements(4, 80),
    ])
    found = {name: (line, n) for name, line, n in _functions(ast.parse(source))}
    assert found == {"short": (3, 80), "C.long": (85, 82), "C.long.<locals>.inner": (86, 80), "later": (167, 81)}
    assert [name for name, _, _ in _too_long(source)] == ["C.long", "later"]


def test_no_function_is_over_80_lines():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for name, line, n in _too_long(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(ROOT)}:{line} {name} ({n} lines)")
    assert not offenders, (f"{len(offenders)} function(s) over {MAX_LINES} lines; split each along its seams into "
                           f"named helpers:\n  " + "\n  ".join(offenders))
