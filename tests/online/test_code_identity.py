"""The code identity covers what runs: comments, docstrings and blank lines are not part of it, code is."""
import ast
import io
import textwrap
import tokenize

import pytest

from online import code_identity
from online.code_identity import canonical_source

BASE = textwrap.dedent('''\
    """Module docstring."""
    import math  # a comment


    class P:
        """Class docstring, on
        several lines."""

        def select(self, x):
            """Method docstring."""
            s = "# not a comment"   # a comment after a string
            return math.floor(x) + len(s)

    async def g():
        \'\'\'single-quoted docstring\'\'\'; return "é"  # é, a comment after a multi-byte character
    ''')


def canon(text: str) -> bytes:
    return canonical_source(text.encode())


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("# a comment\n", "# another comment\n"),
    lambda s: s.replace('"""Method docstring."""', '"""A longer\n        method docstring."""'),
    lambda s: s.replace("several lines", "more lines"),
    lambda s: s.replace('"""Module docstring."""', '"""Module docstring, reworded."""'),
    lambda s: s.replace("single-quoted docstring", "reworded"),
    lambda s: s + "\n\n# a trailing comment\n",
    lambda s: s.replace("\n\n\n", "\n\n\n\n\n"),
    lambda s: s.replace("return math.floor(x) + len(s)", "return math.floor(x) + len(s)   "),
    lambda s: s.replace("\n", "\r\n"),
])
def test_an_edit_that_cannot_change_what_runs_keeps_the_identity(edit):
    assert canon(edit(BASE)) == canon(BASE)


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("math.floor(x)", "math.ceil(x)"),
    lambda s: s.replace('"# not a comment"', '"# not a comment!"'),
    lambda s: s.replace('return "é"', 'return "e"'),
    lambda s: s.replace("        return math", "        s = s * 2\n        return math"),
    lambda s: s + "\nEDITED = 1\n",
    lambda s: s.replace('"""Method docstring."""\n', '"""Method docstring."""\n        x = -x\n'),
    lambda s: s.replace("    def select", "def select"),                   # indentation is code
])
def test_an_edit_to_the_code_changes_the_identity(edit):
    changed = edit(BASE)
    assert changed != BASE and canon(changed) != canon(BASE)


def test_the_canonical_source_keeps_the_code_and_nothing_else():
    got = canon(BASE).decode()
    assert "docstring" not in got and "several" not in got and got.count("comment") == 1
    assert '"# not a comment"' in got and got.endswith('return "é"\n') and "\n\n" not in got
    # a string that is not a docstring (not a body's first statement) is code
    assert canon('x = 1\n"""not a docstring"""\n') != canon("x = 1\n")


def test_source_that_does_not_parse_is_hashed_as_it_is():
    assert canonical_source(b"def (:\n") == b"def (:\n"
    assert canonical_source(b"\xff\xfe not utf-8\n") == b"\xff\xfe not utf-8\n"


def _tokens(text: str, skip=frozenset()) -> list[str]:
    """The code's tokens, layout, comments and the strings starting at `skip` (line, column) aside."""
    layout = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
              tokenize.ENDMARKER}
    return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type not in layout and t.start not in skip]


def test_every_project_module_keeps_every_token_of_its_code():
    """On the project's own sources: the canonical source has the code's tokens, in order, and only them
    (a check that the cuts fall where they should, multi-byte characters included)."""
    from pathlib import Path

    root = Path(code_identity.__file__).parents[1]
    files = [p for pkg in code_identity.PROJECT_PACKAGES for p in (root / pkg).rglob("*.py")]
    assert len(files) > 50
    for path in files:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        docs = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                        and isinstance(first.value.value, str):
                    line = text.splitlines()[first.lineno - 1]
                    docs.add((first.lineno, len(line.encode()[:first.col_offset].decode())))
        cut = canonical_source(path.read_bytes()).decode()
        assert _tokens(cut) == _tokens(text, docs), path


def test_a_docstring_edit_in_a_policy_module_keeps_its_rows_current(tmp_path, monkeypatch):
    import sys

    monkeypatch.syspath_prepend(str(tmp_path))
    mod = tmp_path / "docedit_policy.py"
    mod.write_text('"""A policy."""\nX = 1  # one\n')
    monkeypatch.delitem(sys.modules, "docedit_policy", raising=False)
    code_identity.code_identity.cache_clear()
    code_identity._top_location.cache_clear()
    first = code_identity.code_identity("docedit_policy").digest
    mod.write_text('"""A policy, its docstring reworded."""\nX = 1  # another comment\n\n')
    code_identity.code_identity.cache_clear()
    assert code_identity.code_identity("docedit_policy").digest == first
    mod.write_text('"""A policy."""\nX = 2\n')
    code_identity.code_identity.cache_clear()
    assert code_identity.code_identity("docedit_policy").digest != first
    code_identity.code_identity.cache_clear()
    code_identity._top_location.cache_clear()


@pytest.mark.parametrize("a, b", [('X = """line1\n\nline2"""\n', 'X = """line1\nline2"""\n'),
                                  ('X = """line1   \nline2"""\n', 'X = """line1\nline2"""\n'),
                                  ("X = f\"\"\"{1}\n\n\"\"\"\n", "X = f\"\"\"{1}\n\"\"\"\n")])
def test_blank_lines_and_trailing_spaces_inside_a_string_literal_are_its_value(a, b):
    """A first version stripped them everywhere, so these edits of a literal kept the identity."""
    assert canon(a) != canon(b)
    assert canon(a + "\n\n# a comment\n") == canon(a)              # outside the literal they are still layout


def test_the_memo_of_a_modules_facts_gives_the_digest_parsing_gives(tmp_path, monkeypatch):
    """The canonical digests and imports are kept on disk by file content: a command reads and hashes the
    sources, parsing only what changed, and gets the same identity."""
    monkeypatch.setenv("TUTORDUEL_CACHE", str(tmp_path / "cache"))
    code_identity.code_identity.cache_clear()
    parsed = code_identity.code_identity("online.policies.coduel")
    memos = list((tmp_path / "cache" / "code").rglob("*"))
    assert sum(p.is_file() for p in memos) == len(parsed.modules)
    code_identity.code_identity.cache_clear()
    monkeypatch.setattr(code_identity, "canonical_source", lambda *a: pytest.fail("parsed a memoised module"))
    assert code_identity.code_identity("online.policies.coduel") == parsed
    code_identity.code_identity.cache_clear()


@pytest.mark.parametrize("damage", [b"", b"not a digest\n", b"\xff\xfe", b"0" * 64 + b"\nos; import x\n"])
def test_a_damaged_memo_is_recomputed_not_believed(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("TUTORDUEL_CACHE", str(tmp_path / "cache"))
    code_identity.code_identity.cache_clear()
    right = code_identity.code_identity("online.verify")
    for memo in (tmp_path / "cache" / "code").rglob("*"):
        if memo.is_file():
            memo.write_bytes(damage)
    code_identity.code_identity.cache_clear()
    assert code_identity.code_identity("online.verify") == right
    code_identity.code_identity.cache_clear()


def test_an_unwritable_memo_folder_costs_only_the_parse(tmp_path, monkeypatch):
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    monkeypatch.setenv("TUTORDUEL_CACHE", str(tmp_path / "cache"))
    code_identity.code_identity.cache_clear()
    with_memo_refused = code_identity.code_identity("online.verify")
    monkeypatch.setenv("TUTORDUEL_CACHE", str(tmp_path / "elsewhere"))
    code_identity.code_identity.cache_clear()
    assert code_identity.code_identity("online.verify") == with_memo_refused
    code_identity.code_identity.cache_clear()


def test_a_pipe_planted_at_a_memo_is_not_read(tmp_path, monkeypatch):
    import os

    monkeypatch.setenv("TUTORDUEL_CACHE", str(tmp_path / "cache"))
    code_identity.code_identity.cache_clear()
    right = code_identity.code_identity("online.verify")
    memo = next(p for p in (tmp_path / "cache" / "code").rglob("*") if p.is_file())
    memo.unlink()
    os.mkfifo(memo)
    code_identity.code_identity.cache_clear()
    assert code_identity.code_identity("online.verify") == right
    code_identity.code_identity.cache_clear()


def test_a_module_importing_a_non_ascii_name_is_memoised(tmp_path, monkeypatch):
    """Review finding: the memo was written as ASCII, and an import of `plugpkg.mód` crashed the identity."""
    import sys

    monkeypatch.setenv("TUTORDUEL_CACHE", str(tmp_path / "cache"))
    pkg = tmp_path / "src" / "plugpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from plugpkg.mód import X\n", encoding="utf-8")
    (pkg / "mód.py").write_text("X = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.delitem(sys.modules, "plugpkg", raising=False)
    code_identity.code_identity.cache_clear()
    code_identity._top_location.cache_clear()
    first = code_identity.code_identity("plugpkg")
    assert "plugpkg.mód" in first.modules
    code_identity.code_identity.cache_clear()
    assert code_identity.code_identity("plugpkg") == first          # read back from the memo
    code_identity.code_identity.cache_clear()
    code_identity._top_location.cache_clear()
