"""The code identity of a policy's runs: a digest of the code of every module a run executes.

A run row depends on the replay loop and on the policy. Both are followed through their imports,
read statically from the source (``import`` and ``from ... import`` statements anywhere in a
module, lazy imports inside functions included), within this project's packages and the
policy's own top-level package; the digest covers the code of every module reached: its source
with comments and docstrings cut out, and trailing spaces and blank lines dropped outside string
literals (``canonical_source``), so an edit that cannot change what runs leaves stored rows valid.
Third-party libraries are identified by their versions in the row, not by the digest.

Why the import closure and not the whole package: editing one competitor, the diagnostics or a
command elsewhere must not invalidate every stored row of every other policy,
while any edit that can change a policy's pairs (its module, the belief or kernel code it
calls, the schedule, the scoring, the world reader) must. ``online.registry`` is included for
its parsing rules; it names policies as strings, so it does not pull every policy in.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import io
import os
import re
import tokenize
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

PROJECT_PACKAGES = ("tdmodels", "inference", "online", "diagnostics", "tutorduel")
RUNNER_MODULES = ("online.replay",)
_HEX64 = re.compile(r"[0-9a-f]{64}")
_MODULE_NAME = re.compile(r"[^\W\d][\w.*]*")


class CodeIdentity(NamedTuple):
    """The digest of a policy's code: the source of every module in its static import closure."""
    digest: str              # 12 hex digits
    modules: tuple           # the module names hashed, sorted


@lru_cache(maxsize=None)
def _top_location(top: str) -> tuple[Path | None, bool]:
    """(folder holding the top-level package, True) or (the single module's file, False); nothing imported."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None, False
    if spec is None:
        return None, False
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0]).parent, True
    return (Path(spec.origin), False) if spec.origin and spec.origin.endswith(".py") else (None, False)


def _source_file(name: str) -> Path | None:
    """The .py file of module `name`, found from its top-level package's folder without importing it."""
    where, is_package = _top_location(name.split(".")[0])
    if where is None:
        return None
    if not is_package:
        return where if "." not in name else None
    rel = Path(*name.split("."))
    for path in (where / rel.with_suffix(".py"), where / rel / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(name: str, path: Path, tree: ast.AST) -> set[str]:
    """Absolute names of the modules (or module attributes) a module's source imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)     # `from pkg import module`
    return out


def _docstrings(tree: ast.AST) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the docstrings of a module, its classes and functions sit: ((line, byte), (line, byte)) spans."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                spans.append(((first.lineno, first.col_offset), (first.end_lineno, first.end_col_offset)))
    return spans


def _comments(lines: list[bytes]) -> tuple[list[tuple[tuple[int, int], tuple[int, int]]], set[int]]:
    """Where the comments sit, as byte spans (tokenize counts characters; the AST, bytes), and the rows whose
    line break lies inside a token (a multi-line string literal: its blank lines and trailing spaces are
    part of its value, so they stay)."""
    text = [ln.decode("utf-8") for ln in lines]
    readline = io.StringIO("".join(text)).readline
    spans, inside = [], set()
    for tok in tokenize.generate_tokens(readline):
        if tok.type == tokenize.COMMENT:
            (row, col), (_, end) = tok.start, tok.end
            line = text[row - 1]
            spans.append(((row, len(line[:col].encode())), (row, len(line[:end].encode()))))
        elif tok.start[0] < tok.end[0] and tok.type not in (tokenize.NL, tokenize.NEWLINE):
            inside.update(range(tok.start[0], tok.end[0]))
    return spans, inside


def canonical_source(source: bytes, tree: ast.AST | None = None) -> bytes:
    """A module's source with its comments and docstrings cut out, trailing spaces stripped and blank
    lines dropped (outside multi-line string literals, where they are the literal's value): what the
    digest covers. Code, string literals elsewhere, names and indentation stay, so any edit that can
    change what runs changes it (a module that reads its own ``__doc__`` to decide a pair would escape
    this; none does). Falls back to the bytes as they are when the source does not tokenize."""
    try:
        tree = ast.parse(source) if tree is None else tree
        lines = source.splitlines(keepends=True)
        docs = _docstrings(tree)
        comments, inside = _comments(lines)
    except (SyntaxError, ValueError, UnicodeDecodeError, tokenize.TokenError):
        return source
    for (r0, _), (r1, _) in docs:                 # a docstring's own lines are cut, not kept
        inside.difference_update(range(r0, r1 + 1))
    keep = [bytearray(ln) for ln in lines]
    for (r0, c0), (r1, c1) in sorted(docs + comments, reverse=True):      # from the end, so earlier offsets hold
        if r0 == r1:
            del keep[r0 - 1][c0:c1]
        else:
            del keep[r1 - 1][:c1]
            del keep[r0 - 1][c0:]
            for r in range(r0, r1 - 1):
                keep[r].clear()
    out = []
    for row, ln in enumerate(keep, start=1):
        text = bytes(ln).rstrip(b"\r\n") if row in inside else bytes(ln).rstrip()
        if text or row in inside or row - 1 in inside:      # a literal's blank lines are its value
            out.append(text)
    return b"\n".join(out) + b"\n"


def cache_root() -> Path:
    """The toolkit's cache folder on this machine: $TUTORDUEL_CACHE, else ~/.cache/tutorduel."""
    return Path(os.environ.get("TUTORDUEL_CACHE") or Path.home() / ".cache" / "tutorduel")


@lru_cache(maxsize=1)
def _rules() -> bytes:
    """A digest of this module's own source: the memo of a module's facts holds under these rules only."""
    return hashlib.sha256(Path(__file__).read_bytes()).digest()


def _facts_path(name: str, path: Path, source: bytes) -> Path:
    key = b"\0".join([b"tutorduel-code-facts-2", _rules(), name.encode(), str(path.name == "__init__.py").encode(),
                       source])
    d = hashlib.sha256(key).hexdigest()
    return cache_root() / "code" / d[:2] / d[2:]


def _read_facts(path: Path) -> tuple[bytes, frozenset] | None:
    """A memo written by `_module_facts`, or None where it is missing or not one (nothing in it is run; a
    pipe or a device planted at its name is not read)."""
    from tdmodels.file_read import UnreadableFileError, read_regular

    try:
        text = read_regular(path, 1 << 20).decode("utf-8")
    except (OSError, UnreadableFileError, UnicodeDecodeError):
        return None
    digest, _, rest = text.partition("\n")
    names = frozenset(filter(None, rest.split("\n")))
    if not (_HEX64.fullmatch(digest) and all(_MODULE_NAME.fullmatch(n) for n in names)):
        return None
    return bytes.fromhex(digest), names


def _module_facts(name: str, path: Path) -> tuple[bytes, frozenset] | None:
    """(SHA-256 of module `name`'s canonical source, the modules it imports), None where its file cannot be
    read or parsed. Both depend on the name and the file's bytes alone, so they are kept on disk under a
    digest of those (the cache folder, best effort): a command that needs a policy's code identity then
    reads and hashes the files, and parses only those that changed."""
    try:
        source = path.read_bytes()
    except OSError:
        return None
    memo = _facts_path(name, path, source)
    facts = _read_facts(memo)
    if facts is not None:
        return facts
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    facts = hashlib.sha256(canonical_source(source, tree)).digest(), frozenset(_imports(name, path, tree))
    from tdmodels.atomic_file import save_cache_file

    save_cache_file(memo, (facts[0].hex() + "\n" + "\n".join(sorted(facts[1])) + "\n").encode("utf-8"))
    return facts


def _closure(roots: tuple[str, ...], packages: tuple[str, ...]) -> dict[str, bytes]:
    """Module name -> SHA-256 of its canonical source, for every module reached from `roots` within `packages`."""
    seen: dict[str, bytes] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name.split(".")[0] not in packages:
            continue
        path = _source_file(name)
        facts = None if path is None else _module_facts(name, path)
        if facts is None:
            continue
        seen[name], imports = facts
        todo.extend(imports)
        parent = name.rpartition(".")[0]
        if parent:
            todo.append(parent)                       # a package's __init__ runs before its modules
    return seen


@lru_cache(maxsize=None)
def code_identity(policy_module: str) -> CodeIdentity:
    """The code identity of runs of a policy defined in module `policy_module` (cached per process:
    the code this process loaded)."""
    packages = PROJECT_PACKAGES + (policy_module.split(".")[0],)
    sources = _closure(RUNNER_MODULES + (policy_module,), packages)
    h = hashlib.sha256(b"tutorduel-code-2\0")      # 2: canonical sources (1 hashed the files' bytes)
    for name in sorted(sources):
        h.update(name.encode() + b"\0" + sources[name])
    return CodeIdentity(h.hexdigest()[:12], tuple(sorted(sources)))


def policy_code(target_class) -> CodeIdentity:
    """The code identity of a policy class's runs."""
    return code_identity(target_class.__module__)
