"""One TLS context per process: what the forkserver gives every worker."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_after_sharing_every_openai_client_gets_the_same_tls_context() -> None:
    # In a fresh interpreter: sharing patches httpcore2 for the rest of the process.
    code = textwrap.dedent(
        """
        import openai
        from killpoint.workers.tls import share_tls_context

        def context():
            client = openai.AsyncOpenAI(api_key="unused")
            return client._client._transport._pool._ssl_context

        print(context() is context())
        share_tls_context()
        share_tls_context()
        print(context() is context())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.split()
    assert out == ["False", "True"]
