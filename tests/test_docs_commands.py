"""Every command README.md, docs/plugin.md and docs/history.md show in their `sh` blocks
names what exists: a `killpoint` command line that the command's own parser accepts,
`--crash-*` options the pytest plugin declares, `-m` markers it registers, benchmark
modules that import.
(docs/adapters.md's commands are run for real by tests/test_adapters_guide.py.)"""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from killpoint.cli.main import build_parser
from killpoint.engine.option_table import PYTEST, on
from killpoint.plugin.corpus_items import OPTIONS as CORPUS_OPTIONS
from killpoint.plugin.keys import MATRIX_MARKER

REPO = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/plugin.md", "docs/history.md")
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)


def commands(page: str) -> list[str]:
    found = []
    for block in SH_BLOCK.findall((REPO / page).read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.partition(" #")[0].strip()
            if line and not line.startswith("#"):
                found.append(line)
    return found


ALL = [(page, c) for page in PAGES for c in commands(page)]


def test_the_pages_show_commands() -> None:
    assert {c.split()[0] for _, c in ALL} >= {"killpoint", "pytest", "make", "python"}


@pytest.mark.parametrize(("page", "command"), ALL, ids=[c[:60] for _, c in ALL])
def test_each_command_names_what_exists(page: str, command: str) -> None:
    words = shlex.split(command.replace("[", "").replace("]", ""))
    if words[0] == "killpoint":
        try:
            build_parser().parse_args(words[1:])
        except SystemExit:
            pytest.fail(f"{page}: `{command}` is refused by killpoint's parser")
    elif words[0] == "pytest":
        known = {o.pytest_flag for o in on(PYTEST)} | set(CORPUS_OPTIONS)
        for word in words[1:]:
            if word.startswith("--crash-"):
                assert word.partition("=")[0] in known, f"{page}: {word} in `{command}`"
        if "-m" in words:
            assert words[words.index("-m") + 1] == MATRIX_MARKER, f"{page}: `{command}`"
    elif words[:2] == ["python", "-m"]:
        assert importlib.util.find_spec(words[2]) is not None, f"{page}: `{command}`"
    elif words[0] == "make":
        targets = re.findall(r"^([a-z]+):", (REPO / "Makefile").read_text(), re.M)
        assert words[1] in targets, f"{page}: `{command}`"
