"""No secret in any output, in no escaped form either: a runtime whose workers print
OPENAI_API_KEY and the store URL (tests/harness/leaky_runtime.py), run by `killpoint
matrix`, `replay`, `check-adapter`, `report` and pytest with `--junitxml`. The terminal,
the JSON (its `command` too), the HTML, the JUnit XML and the kept worker logs hold neither
the key nor the store password, raw or escaped (the key has `é`, `"`, `<` and `&` in it)."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from killpoint.redaction import forms

REPO = Path(__file__).resolve().parents[2]
KEY = 'sk-tést"<&>Kp4Zr9Qw'
PASSWORD = 'pw-Vé"9&Lm2Xq'  # the session's server trusts any password: it is only carried
LEAKY = "tests.harness.leaky_runtime:LEAKY"
CELL_ARGS = ("--scenarios", "research", "--modes", "tool-batch", "--points", "after-checkpoint:1")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": KEY},
    )  # fmt: skip


def killpoint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run("-m", "killpoint.cli.main", *args, cwd=cwd)


def escaped(secret: str) -> set[str]:
    """Every form a secret takes once escaped: JSON, HTML (named and numeric), XML, a URL."""
    return {f for f in forms(secret) if len(f) >= 6} | {
        secret.replace('"', "&quot;"),
        secret.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;"),
        secret.replace('"', "&#x22;"),
    }


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest) -> str:
    if request.param == "sqlite":
        return "sqlite"
    url = str(request.getfixturevalue("pg_url"))
    return make_url(url).set(password=PASSWORD).render_as_string(hide_password=False)


@pytest.mark.slow
def test_no_secret_in_any_output(tmp_path: Path, store: str) -> None:
    work = tmp_path / "work"
    outputs: dict[str, str] = {}

    def keep(name: str, result: subprocess.CompletedProcess[str]) -> None:
        outputs[f"{name} stdout"] = result.stdout
        outputs[f"{name} stderr"] = result.stderr

    matrix = killpoint(
        "matrix", "--runtime", LEAKY, *CELL_ARGS, "--keep", "all", "--store", store,
        "--work-dir", str(work), "--json", str(tmp_path / "m.json"),
        "--report", str(tmp_path / "m.html"), cwd=tmp_path,
    )  # fmt: skip
    keep("matrix", matrix)
    assert 1 == matrix.returncode, matrix.stderr  # the resume fails: unexpected
    document = json.loads((tmp_path / "m.json").read_text())
    (cell,) = document["cells"]
    assert "***" in cell["stderr_tail"]  # the workers' lines are there, masked
    keep("replay", killpoint("replay", cell["id"], "--store", store, "--keep", "--work-dir",
                             str(work), cwd=tmp_path))  # fmt: skip
    keep("check-adapter", killpoint("check-adapter", "--runtime", LEAKY, "--store", store,
                                    "--work-dir", str(work), cwd=tmp_path))  # fmt: skip
    keep("report", killpoint("report", str(tmp_path / "m.json"), "-o", str(tmp_path / "r.html"),
                             cwd=tmp_path))  # fmt: skip
    (tmp_path / "test_leaky.py").write_text(
        "def test_leaky(crash):\n"
        f"    crash.check({LEAKY!r}, 'research', modes='tool-batch', points='after-checkpoint:1',"
        f" store={store!r}, keep='all')\n"
    )
    keep("pytest", run("-m", "pytest", "-p", "no:cacheprovider",
                       "--junitxml", str(tmp_path / "junit.xml"), "test_leaky.py", "-rA",
                       cwd=tmp_path))  # fmt: skip
    assert "1 failed" in outputs["pytest stdout"], outputs["pytest stdout"]
    files = [tmp_path / n for n in ("m.json", "m.html", "r.html", "junit.xml")]
    logs = [p for p in work.rglob("*.log")]
    assert logs  # kept worker logs
    for path in [*files, *logs]:
        outputs[str(path)] = path.read_bytes().decode("utf-8", "replace")
    # Some worker log shows the masked key (the model folder's logs hold requests only).
    assert any("key=***" in outputs[str(p)] for p in logs), [str(p) for p in logs]
    secrets = escaped(KEY) | (escaped(PASSWORD) if store != "sqlite" else set())
    leaks = sorted(
        (name, form) for name, text in outputs.items() for form in secrets if form in text
    )
    assert [] == leaks
    # Control characters made visible on every terminal; every output within its bounds.
    raw = sorted(
        n for n, text in outputs.items() if n.endswith(("stdout", "stderr")) and "\x1b" in text
    )
    assert [] == raw
    assert (tmp_path / "m.json").stat().st_size < 5_000_000
    assert (tmp_path / "m.html").stat().st_size < 5_000_000
    assert all(p.stat().st_size <= 4 * 1024 * 1024 for p in logs)
    assert any("bytes cut here" in outputs[str(p)] for p in logs)  # a worker's, bounded


@pytest.mark.parametrize(
    "url",
    [
        "postgres://user:{pw}@db.example:5432/app",
        "postgresql+psycopg://user:{pw}@db.example/app",
        "mysql://user:{pw}@db.example/app",
        "sqlite://u:{pw}@/store.db",
        "postgresql+psycopg://user@db.example/app?sslmode=require&password={pw}",
        "postgresql+psycopg://user:{pw}@[::1:5432/app",
        "'postgresql://user:{pw}@db.example/app': connection refused",
    ],
)
def test_every_url_spelling_is_masked_in_messages(url: str) -> None:
    from killpoint.redaction import redact

    for password in ("s3cr@t/x:y", "pw"):
        text = url.format(pw=password)
        assert password not in redact(text).replace("user", "").replace("sslmode", ""), text


def test_a_registered_password_is_masked_anywhere_and_in_every_escaped_form() -> None:
    from killpoint.redaction import redact, redact_tree, remember_url

    remember_url("postgresql+psycopg://u:r%C3%A9%22gistered@h/db")
    plain = 'ré"gistered'
    document = {"a": [f"printed {plain} alone"], plain: 1}
    masked = json.dumps(redact_tree(document))
    assert "gistered" not in masked
    for form in escaped(plain):
        assert "gistered" not in redact(f"x {form} y"), form


def test_environment_values_with_secret_names_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    from killpoint.redaction import redact

    for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "MY_SECRET_THING", "DB_PASSWORD"):
        monkeypatch.setenv(name, f"value-of-{name.lower()}")
    monkeypatch.setenv("HOME_DIRECTORY_NAME", "not-a-secret-value")
    text = redact(" ".join(f"value-of-{n.lower()}" for n in ("OPENAI_API_KEY", "GITHUB_TOKEN",
                  "MY_SECRET_THING", "DB_PASSWORD")) + " not-a-secret-value")  # fmt: skip
    assert "*** *** *** *** not-a-secret-value" == text


def test_a_secret_cut_short_before_it_was_masked_is_masked_up_to_the_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A finding previews a tool's arguments and a report shortens its lines before any
    output masks them: a long key cut through leaves a piece no whole-key match finds, and
    that piece is masked wherever a cut mark ends or begins it."""
    from killpoint.redaction import redact
    from killpoint.report.text import clip_head, cut
    from killpoint.values.sentences import value

    key = "sk-proj-" + "Qx7vL2mN9pR4tY6wZ1bC3dF5gH8jK0sA" * 5  # 168 characters, as project keys
    monkeypatch.setenv("OPENAI_API_KEY", key)
    call = f'charge({{"customer":"{key}","amount_cents":1999}})'
    for text in (
        cut(call, 90),  # ends "…"
        value(call, 70),  # a repr, ending "..."
        clip_head(f"the key {key}", 40),  # "… (N chars)" after the piece
        f"[120 characters cut] …{key[-30:]}, then more",  # a piece of its end after a mark
        json.dumps({"args": call})[:100],  # cut with no mark at all, at the text's end
    ):
        masked = redact(text)
        assert "***" in masked, (text, masked)
        # No run of the key's characters longer than its constant prefix survives.
        assert not any(key[i : i + 9] in masked for i in range(len(key) - 9)), masked
    # Ordinary text that only ends the way a key begins, or is cut, is left alone.
    assert "sk-pro: see the notes..." == redact("sk-pro: see the notes...")
    assert "wait... then sk-proj-x" == redact("wait... then sk-proj-x")
