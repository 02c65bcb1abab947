"""model_transport runs on its smallest input and prints a figure for every case."""

from __future__ import annotations

from tests.benchmarks.smoke import figure, run_benchmark


def test_it_prints_the_cost_of_a_request_by_each_transport() -> None:
    out = run_benchmark("model_transport", "--requests", "3")
    assert figure(out, "requests per case:") == 3
    for case in ("the model alone:", "mock, openai SDK:", "local, httpx streamed:"):
        assert figure(out, case) > 0
