"""Every code block on the docs site (docs/) and in the README runs.

Blocks are tagged: ``python`` blocks are executed, ``bash`` blocks are command lines, ``text``
blocks are output or pictures (not code). An untagged block fails. A page's blocks run in order
in one private folder (its own worlds folder and run store, the real sample and the published curves beside them as
``tutorduel-site-sample.json`` and ``tutorduel-site-curves.json``), so a later block may use what an earlier one made. A block
marked ``<!-- slow -->`` on the line before it (a long MCMC run) runs in the slow set only, where
its whole page runs again; no later block may depend on it. A ``bash``
line is ``[VAR=value ...] tutorduel ARGS`` (run in this process through the command line's
``main``; it must exit 0) or one of the README's two install commands (run by CI itself:
``.ci/run`` calls ``scripts/test.sh``, and the quick start's own commands are checked to parse).
Pages under docs/results/ record measurements that take minutes to hours: their commands are
parsed by the current command line (every option known, every value in range), not run. A
python block whose first line is ``# NAME.py`` is a file the page asks you to save: it is
written, then imported by the blocks after it. The site itself is built with ``mkdocs build
--strict``.
"""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tutorduel.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
BLOCK = re.compile(r"^(<!-- slow -->\n)?```([\w-]*)\n(.*?)^```", re.S | re.M)
INSTALL_COMMANDS = {"bash scripts/quickstart.sh", "bash scripts/test.sh"}


def pages():
    return sorted(DOCS.rglob("*.md")) + [README]


def blocks(page: Path, slow: bool = True):
    """(tag, body) of the page's blocks; `slow` False leaves out the blocks marked <!-- slow -->."""
    return [(m.group(2), m.group(3)) for m in BLOCK.finditer(page.read_text()) if slow or not m.group(1)]


def command_lines(body: str) -> list[str]:
    """The commands of a bash block: continuation lines joined, comments and blank lines dropped."""
    joined = body.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def split_env(line: str) -> tuple[dict, list[str]]:
    words = shlex.split(line)
    env = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        k, _, v = words.pop(0).partition("=")
        env[k] = v
    return env, words


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", pages(), ids=page_id)
def test_every_block_is_tagged(page):
    tags = {tag for tag, _ in blocks(page)}
    assert tags <= {"python", "bash", "text"}, f"{page_id(page)}: blocks tagged {sorted(tags)}"


RUNNABLE = [p for p in pages() if "results" not in p.parts]
HAS_SLOW = [p for p in RUNNABLE if "<!-- slow -->" in p.read_text()]


@pytest.mark.parametrize("page", RUNNABLE, ids=page_id)
def test_page_runs(page, tmp_path, monkeypatch, sample_path, curves_path, capsys):
    """The page's blocks, but those marked <!-- slow --> (long MCMC; the slow set runs the whole page)."""
    run_page(page, blocks(page, slow=False), tmp_path, monkeypatch, (sample_path, curves_path), capsys)


@pytest.mark.slow
@pytest.mark.parametrize("page", HAS_SLOW, ids=page_id)
def test_page_runs_whole(page, tmp_path, monkeypatch, sample_path, curves_path, capsys):
    run_page(page, blocks(page), tmp_path, monkeypatch, (sample_path, curves_path), capsys)


def run_page(page, page_blocks, tmp_path, monkeypatch, published, capsys):
    if not any(tag in ("python", "bash") for tag, _ in page_blocks):
        return
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TUTORDUEL_WORLDS", str(tmp_path / "worlds"))
    monkeypatch.setenv("TUTORDUEL_STORE", str(tmp_path / "runs"))
    monkeypatch.syspath_prepend(str(tmp_path))
    sample_path, curves_path = published
    (tmp_path / "tutorduel-site-sample.json").write_bytes(sample_path.read_bytes())
    (tmp_path / "tutorduel-site-curves.json").write_bytes(curves_path.read_bytes())
    namespace = {"__name__": "__docs__"}
    for n, (tag, body) in enumerate(page_blocks):
        where = f"{page_id(page)}, block {n + 1}"
        if tag == "python":
            first = body.splitlines()[0]
            saved = re.fullmatch(r"# (\w+\.py)", first.strip())
            if saved:
                (tmp_path / saved.group(1)).write_text(body)
                continue
            exec(compile(body, where, "exec"), namespace)
        elif tag == "bash":
            for line in command_lines(body):
                if line in INSTALL_COMMANDS:
                    continue
                env, words = split_env(line)
                assert words[:1] == ["tutorduel"], f"{where}: {line!r} is not a tutorduel command"
                for k, v in env.items():
                    monkeypatch.setenv(k, str(tmp_path) if v == "." else v)
                assert main(words[1:]) == 0, f"{where}: {line!r} failed:\n{capsys.readouterr().err[-2000:]}"
    for mod in [m for m in sys.modules if getattr(sys.modules[m], "__file__", None)
                and str(tmp_path) in str(sys.modules[m].__file__)]:
        del sys.modules[mod]


@pytest.mark.parametrize("page", sorted((DOCS / "results").glob("*.md")), ids=page_id)
def test_results_commands_parse(page):
    parser = build_parser()
    for tag, body in blocks(page):
        if tag == "bash":
            for line in command_lines(body):
                env, words = split_env(line)
                if words[:3] == ["python", "-m", "benchmarks.run"]:
                    from benchmarks.run import parse
                    parse(words[3:])
                    continue
                if words[:1] == ["python"]:
                    assert (ROOT / words[1]).is_file(), f"{page_id(page)}: {line!r}: no such script"
                    continue
                assert words[:1] == ["tutorduel"], f"{page_id(page)}: {line!r} is not a tutorduel command"
                parser.parse_args(words[1:])


def test_readme_install_commands_are_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in ci
    readme = {line for tag, body in blocks(README) if tag == "bash" for line in command_lines(body)}
    assert INSTALL_COMMANDS <= readme
    quick = [line.strip() for line in (ROOT / "scripts" / "quickstart.sh").read_text().splitlines()
             if line.strip().startswith("tutorduel ")]
    assert quick
    for line in quick:
        build_parser().parse_args(shlex.split(line.replace('"$@"', ""))[1:])


def test_the_site_builds_strict(tmp_path):
    exe = Path(sys.executable).with_name("mkdocs")
    out = subprocess.run([str(exe), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                         capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    assert (tmp_path / "site" / "howto" / "validate-beliefs" / "index.html").is_file()
    api = (tmp_path / "site" / "api" / "online" / "index.html").read_text()
    assert "run_sweep" in api and "Parameters" in api


@pytest.mark.parametrize("package", ["tdmodels", "inference", "online", "diagnostics"])
def test_the_api_pages_cover_every_exported_name(package):
    import importlib

    exported = importlib.import_module(package)._EXPORTS
    page, _, apart = (DOCS / "api" / f"{package}.md").read_text().partition("\n## From their modules\n")
    documented = set(re.findall(r"^::: [\w.]+\.(\w+)$", page, re.M))
    assert documented == set(exported)
    for module, name in re.findall(r"^::: ([\w.]+)\.(\w+)$", apart, re.M):     # named after their module: not exported
        assert callable(getattr(importlib.import_module(module), name)) and name not in exported
