# ruff: noqa: SIM300 - tests assert `expected == actual`
"""What the runtime acknowledges is durable, and what it writes holds no secret."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import httpx
import pytest
import respx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from killpoint.runtime import Agent, CheckpointFailed, RunStatus, Store
from killpoint.runtime.store import normalise_url
from tests.helpers import error_response, function_call, make_model, message_item, serve, snapshot


def drop_runs_table(url: str) -> None:
    """Drop kp_runs behind the runtime's back (another connection, no foreign-key checks)."""
    engine = create_engine(normalise_url(url))
    try:
        with engine.begin() as conn:
            if engine.dialect.name == "postgresql":
                conn.execute(text("DROP TABLE kp_runs CASCADE"))
            else:
                conn.execute(text("DROP TABLE kp_runs"))
    finally:
        engine.dispose()


@pytest.mark.parametrize("mode", ["runs", "tool-batch"])
def test_a_failed_final_write_is_an_error_not_completed(
    openai_mock: respx.MockRouter, store_url: str, mode: str
) -> None:
    """The model's final answer arrives, but the table the terminal write needs is gone:
    the caller gets CheckpointFailed (naming COMPLETED), never a COMPLETED RunOutput."""

    def step() -> str:
        """Step."""
        return "stepped"

    def final_answer(request: httpx.Request) -> list[dict[str, object]]:
        drop_runs_table(store_url)
        return [message_item("all done")]

    route, _ = serve(openai_mock, [[function_call("c1", "step", {})], final_answer])
    agent = Agent("durable", make_model(), store_url, tools=[step], checkpoint=mode)

    with pytest.raises(CheckpointFailed) as caught:
        agent.run("go", session_id="s")

    assert 2 == route.call_count
    assert "(COMPLETED) did not land" in str(caught.value)


SECRET_PREFIX = "sk-killpoint-secret-"


def test_the_api_key_is_never_written(
    openai_mock: respx.MockRouter,
    store_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A run that errors, continues and completes with a secret API key: the key is sent to
    the API (Authorization header) but appears in no stored row, in no byte of the SQLite
    files (main, -wal, -shm), in no log record at DEBUG, and in no error or output."""
    caplog.set_level(logging.DEBUG)
    secret = SECRET_PREFIX + uuid.uuid4().hex
    route, _ = serve(
        openai_mock,
        [
            [function_call("c1", "step", {})],
            error_response(500),
            [message_item("done")],
        ],
    )

    def step() -> str:
        """Step."""
        return "stepped"

    agent = Agent(
        "secretive", make_model(api_key=secret), store_url, tools=[step], checkpoint="tool-batch"
    )

    failed = agent.run("go", session_id="s")
    out = agent.continue_run(failed.run_id, "s")

    assert (RunStatus.ERROR, RunStatus.COMPLETED) == (failed.status, out.status)
    assert [f"Bearer {secret}"] * 3 == [c.request.headers["authorization"] for c in route.calls]
    needle = secret.encode()
    assert needle not in repr(snapshot(store_url)).encode()
    assert needle not in f"{failed!r}{out!r}{agent!r}".encode()
    assert [] == [r.getMessage() for r in caplog.records if secret in r.getMessage()]
    assert secret not in caplog.text
    assert any(r.name.startswith("openai") for r in caplog.records)  # DEBUG was captured
    url = make_url(store_url)
    if url.get_backend_name() == "sqlite":
        files = [Path(f"{url.database}{suffix}") for suffix in ("", "-wal", "-shm")]
        assert Path(str(url.database)).exists()
        leaked = [str(f) for f in files if f.exists() and needle in f.read_bytes()]
        assert [] == leaked
        Store(store_url).dispose()
        agent.db.dispose()  # closing the last connection checkpoints the WAL into the file
        assert needle not in Path(str(url.database)).read_bytes()
