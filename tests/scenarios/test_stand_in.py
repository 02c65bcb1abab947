# ruff: noqa: SIM300 - tests assert `expected == actual`
"""The stand-in provider: a built-in scenario's model behind a key check, for a command it
runs pointed at it."""

from __future__ import annotations

import os
import subprocess
import sys

ASK = """
import os, sys, httpx
url = os.environ["OPENAI_BASE_URL"] + "/responses"
body = {"model": "m", "input": "Research it."}
bad = httpx.post(url, json=body, headers={"authorization": "Bearer nope"})
good = httpx.post(url, json=body, headers={"authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
print(bad.status_code, good.status_code, good.json()["output"][0]["name"], good.text.startswith("{\\n"))
sys.exit(7)
"""


def stand_in(*args: str, key: str | None = "sk-stand-in-key") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    if key is not None:
        env["OPENAI_API_KEY"] = key
    return subprocess.run(
        [sys.executable, "-m", "killpoint.scenarios.stand_in", *args],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_it_answers_only_its_key_and_passes_on_the_commands_status() -> None:
    done = stand_in("research", "--", sys.executable, "-c", ASK)
    assert 7 == done.returncode, done.stderr
    assert "401 200 search True" == done.stdout.strip()


def test_without_a_key_or_a_scenario_it_says_what_to_give() -> None:
    done = stand_in("research", "--", "true", key=None)
    assert 2 == done.returncode
    assert "set OPENAI_API_KEY" in done.stderr
    done = stand_in("no-such", "--", "true")
    assert 2 == done.returncode
    assert "unknown scenario 'no-such'" in done.stderr
