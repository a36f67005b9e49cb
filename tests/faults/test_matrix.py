"""The fault matrix (issue 10): hostile servers, broken pipelines and verifiers, load and state.

Each fault runs in a fresh interpreter twice, uninstrumented and instrumented (``fault_host.py``,
public API only, real servers on 127.0.0.1 or pipes), and the two are compared on what the host
sees: every step's return value (type and digest of its JSON form) or exception (type, message
digest, nested exceptions), its duration (generous bounds: a hang is a failure, speed is not
measured here) and the time from the program's last line to its exit. Every exported byte (spans
and metrics, serialized) and every log record (all loggers at DEBUG) is searched for the canaries
the hostile servers plant in arguments, results, tokens, headers, cursors and error messages.
Then: exact span counts and verdicts for 1,000 concurrent sessions (tasks and threads), and the
processor's state at 100,000 sessions and at the worst case (``load_host.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
HOST = HERE / "fault_host.py"
LOAD = HERE / "load_host.py"
#: A run that takes longer than this hung (every fault is bounded far below it).
RUN_BOUND_S = 120.0
#: From the program's last output line to its exit; a hung worker or exporter would exceed it.
EXIT_BOUND_S = 8.0

INPROC = [
    "echo",
    "schema_violation",
    "error_message",
    "huge_page",
    "long_chain",
    "loop_chain",
    "nan",
    "deep_nesting",
    "huge_name",
    "hang",
    "host_cancel",
    "verifier_raises_exception",
    "verifier_raises_cancelled",
    "verifier_raises_system_exit",
    "verifier_raises_keyboard_interrupt",
    "verifier_raises_generator_exit",
    "verifier_raises_custom_base",
    "verifier_hangs",
    "verifier_garbage",
    "verifier_malformed",
    "mcpserver_raises",
    "mcpserver_huge_result",
    "installed_names",
    "installed_nan",
    "installed_deep",
    "installed_nameless",
]
STDIO = [
    "stdio_echo",
    "stdio_mcpserver_raises",
    "stdio_crash",
    "stdio_hang",
    "stdio_host_cancel",
    "stdio_garbage",
    "stdio_nonutf8",
    "stdio_invalid_jsonrpc",
    "stdio_schema",
]
HTTP = [
    "http_echo",
    "http_error_message",
    "http_hang",
    "http_host_cancel",
    "http_garbage",
    "http_nonutf8",
    "http_invalid_jsonrpc",
    "http_schema",
    "http_cut_json",
    "http_cut_sse",
    "http_401",
    "http_403",
    "http_500",
    "http_503",
    "refused_port",
]
PIPELINES = ["collector_down", "collector_blackhole", "downstream_raises"]
PIPELINE_FAULTS = ["echo", "verifier_raises_exception", "http_echo"]
FAULTS = INPROC + STDIO + HTTP
TYPICAL, WORST = ("state", "100000", "1", "2000"), ("state", "8", "1100", "8")


def _run(program: Path, *args: str) -> dict[str, Any]:
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, str(program), *args],
            capture_output=True,
            text=True,
            timeout=RUN_BOUND_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"hung": True, "args": args}
    ended = time.monotonic()
    assert done.returncode == 0, (args, done.stderr[-3000:])
    out: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    out["wall_s"] = ended - started
    if "done_at" in out:
        out["exit_lag_s"] = ended - out["done_at"]
    return out


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, ...], dict[str, Any]]:
    """Every program of the matrix, four at a time (most of them mostly wait), longest first."""
    jobs: list[tuple[str, ...]] = [TYPICAL, ("concurrent", "1000"), WORST]
    jobs.extend(
        (mode, "memory", *group)
        for mode in ("plain", "instrumented")
        for group in (STDIO[::2], STDIO[1::2], INPROC, HTTP)  # stdio waits most: split it
    )
    jobs += [("instrumented", pipeline, *PIPELINE_FAULTS) for pipeline in PIPELINES]
    with ThreadPoolExecutor(4) as pool:
        futures: dict[tuple[str, ...], Future[dict[str, Any]]] = {
            job: pool.submit(_run, LOAD if job[0] in ("state", "concurrent") else HOST, *job)
            for job in jobs
        }
        results = {job: future.result() for job, future in futures.items()}
    for job, result in results.items():
        assert not result.get("hung"), f"{job[:2]} did not finish within {RUN_BOUND_S} s"
        print(f"{' '.join(job)[:70]:70} {result['wall_s']:6.1f} s")
    return results


def _fault(runs: dict[tuple[str, ...], dict[str, Any]], mode: str, pipeline: str, name: str) -> Any:
    for job, result in runs.items():
        if job[:2] == (mode, pipeline) and name in job[2:]:
            return result["faults"][name]
    raise KeyError(name)


def _seen(step: dict[str, Any]) -> Any:
    """What the host saw at one step, without durations."""
    if "raised" in step:
        raised = step["raised"]

        def shape(exc: dict[str, Any]) -> Any:
            children = [shape(c) for c in exc.get("children", [])]
            return (exc["type"], exc.get("code"), exc["digest"], children)

        return (step["label"], "raised", shape(raised))
    value = step["value"]
    return (step["label"], "value", value if not isinstance(value, dict) else value["digest"])


def _compare(plain: dict[str, Any], instrumented: dict[str, Any]) -> None:
    assert not instrumented["hung"]
    assert not plain["hung"]
    assert [_seen(s) for s in instrumented["steps"]] == [_seen(s) for s in plain["steps"]]
    for ours, theirs in zip(instrumented["steps"], plain["steps"], strict=True):
        assert ours["elapsed_s"] <= 3 * theirs["elapsed_s"] + 2.0, (ours, theirs)


@pytest.mark.parametrize("fault", FAULTS)
def test_the_host_sees_the_same(runs: dict[tuple[str, ...], dict[str, Any]], fault: str) -> None:
    _compare(_fault(runs, "plain", "memory", fault), _fault(runs, "instrumented", "memory", fault))


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("fault", PIPELINE_FAULTS)
def test_a_broken_pipeline_changes_nothing_for_the_host(
    runs: dict[tuple[str, ...], dict[str, Any]], pipeline: str, fault: str
) -> None:
    _compare(_fault(runs, "plain", "memory", fault), _fault(runs, "instrumented", pipeline, fault))


@pytest.mark.parametrize("fault", FAULTS)
def test_no_canary_is_exported_or_logged(
    runs: dict[tuple[str, ...], dict[str, Any]], fault: str
) -> None:
    telemetry = _fault(runs, "instrumented", "memory", fault)["telemetry"]
    assert telemetry["leaks"]["exported"] == []
    assert telemetry["leaks"]["our_logs"] == []
    # the host's own libraries may log what they received; we add nothing to that
    plain = _fault(runs, "plain", "memory", fault)["log_canaries"]
    assert set(telemetry["leaks"]["other_logs"]) <= set(plain)


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_no_canary_leaks_through_a_broken_pipeline(
    runs: dict[tuple[str, ...], dict[str, Any]], pipeline: str
) -> None:
    for fault in PIPELINE_FAULTS:
        leaks = _fault(runs, "instrumented", pipeline, fault)["telemetry"]["leaks"]
        assert (leaks["exported"], leaks["our_logs"]) == ([], []), fault


def test_every_program_exits_promptly(runs: dict[tuple[str, ...], dict[str, Any]]) -> None:
    lags = {job[:3]: result["exit_lag_s"] for job, result in runs.items() if "exit_lag_s" in result}
    assert len(lags) == len(runs) - 3  # every fault program, not the load programs
    assert max(lags.values()) < EXIT_BOUND_S, lags
    for group in (STDIO[::2], STDIO[1::2], INPROC, HTTP):  # instrumented exits about as promptly
        plain, ours = (lags[(mode, "memory", group[0])] for mode in ("plain", "instrumented"))
        assert ours < plain + 3.0, (group[0], plain, ours)


#: The call span's verdict and reason (and the catalog verdict) that each fault must give.
VERDICTS: dict[str, tuple[str, str | None, str | None]] = {
    "echo": ("unverified", "no_outcome_verifier", "converged"),
    "schema_violation": ("tool_failed", "output_schema_violation", "converged"),
    "error_message": ("protocol_error", "jsonrpc_-32602", "converged"),
    "huge_page": ("unverified", "no_outcome_verifier", "converged"),
    "loop_chain": ("stale_catalog", "catalog_cursor_loop", "incomplete"),
    "nan": ("unverified", "no_outcome_verifier", "converged"),
    "hang": ("effect_unknown", "timeout", "converged"),
    "stdio_crash": ("effect_unknown", "process_exit", "converged"),
    "stdio_hang": ("effect_unknown", "timeout", "converged"),
    "http_hang": ("effect_unknown", "timeout", "converged"),
    "http_error_message": ("protocol_error", "jsonrpc_-32602", "converged"),
    "mcpserver_raises": ("tool_failed", "is_error", "converged"),
    "stdio_mcpserver_raises": ("tool_failed", "is_error", "converged"),
    "mcpserver_huge_result": ("unverified", "no_outcome_verifier", "converged"),
    **{
        name: ("unverified", "verifier_inconclusive", "converged")
        for name in INPROC
        if name.startswith("verifier_")
    },
}
OUTCOME_REASONS = {
    "verifier_hangs": "verifier_timeout",
    "verifier_garbage": "verifier_returned_garbage",
    "verifier_malformed": "verifier_malformed_receipt",
}
HANDSHAKE_VERDICTS = {
    "http_401": ("needs_auth", "invalid_token"),
    "http_403": ("needs_auth", "invalid_token"),
    "http_500": ("transport_error", "http_500"),
    "http_503": ("transport_error", "http_503"),
    "refused_port": ("transport_error", "connection_refused"),
}


def _call_spans(fault: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in fault["telemetry"]["spans"] if s["name"].startswith("tools/call")]


@pytest.mark.parametrize("fault", sorted(VERDICTS))
def test_verdicts(runs: dict[tuple[str, ...], dict[str, Any]], fault: str) -> None:
    [call] = _call_spans(_fault(runs, "instrumented", "memory", fault))
    assert (call["verdict"], call["reason"], call["catalog"]) == VERDICTS[fault]
    if fault.startswith("verifier_"):
        assert call["outcome_reason"] == OUTCOME_REASONS.get(fault, "verifier_raised")


@pytest.mark.parametrize("fault", sorted(HANDSHAKE_VERDICTS))
def test_handshake_verdicts(runs: dict[tuple[str, ...], dict[str, Any]], fault: str) -> None:
    spans = _fault(runs, "instrumented", "memory", fault)["telemetry"]["spans"]
    [handshake] = [s for s in spans if s["name"] == "initialize"]
    assert (handshake["verdict"], handshake["reason"]) == HANDSHAKE_VERDICTS[fault]


@pytest.mark.parametrize(
    "fault",
    [
        "stdio_garbage",
        "stdio_nonutf8",
        "stdio_invalid_jsonrpc",
        "stdio_schema",
        "http_garbage",
        "http_nonutf8",
        "http_invalid_jsonrpc",
        "http_schema",
        "http_cut_json",
        "http_cut_sse",
    ],
)
def test_broken_answers_are_never_green(
    runs: dict[tuple[str, ...], dict[str, Any]], fault: str
) -> None:
    [call] = _call_spans(_fault(runs, "instrumented", "memory", fault))
    assert call["verdict"] not in (None, "healthy")
    assert call["catalog"] != "converged"  # the peer never listed its tools


def test_long_cursor_chains_are_judged(runs: dict[tuple[str, ...], dict[str, Any]]) -> None:
    fault = _fault(runs, "instrumented", "memory", "long_chain")
    [call] = _call_spans(fault)
    assert call["catalog"] in ("converged", "incomplete")
    assert sum(s["name"] == "tools/list" for s in fault["telemetry"]["spans"]) == 1100


@pytest.mark.parametrize("fault", ["host_cancel", "stdio_host_cancel", "http_host_cancel"])
def test_a_host_cancellation_after_the_write_is_silence(
    runs: dict[tuple[str, ...], dict[str, Any]], fault: str
) -> None:
    first, retry = _call_spans(_fault(runs, "instrumented", "memory", fault))
    assert (first["verdict"], first["effect_unknown"]) == ("effect_unknown", True)
    assert retry["retry"] is True


def _installed(runs: dict[tuple[str, ...], dict[str, Any]], fault: str) -> tuple[Any, Any]:
    spans = _fault(runs, "instrumented", "memory", fault)["telemetry"]["spans"]
    [install] = [s for s in spans if s["name"] == "mcp_health.install"]
    [call] = [s for s in spans if s["name"].startswith("tools/call")]
    return install, call


def test_installing_names_instead_of_tools_is_unverifiable(
    runs: dict[tuple[str, ...], dict[str, Any]],
) -> None:
    install, call = _installed(runs, "installed_names")
    assert (install["catalog"], install["catalog_reason"]) == ("unverifiable", "tool_not_an_object")
    assert call["catalog"] == "unverifiable"


@pytest.mark.parametrize("fault", ["installed_nan", "installed_deep", "installed_nameless"])
def test_an_undigestable_installed_set_is_unverifiable(
    runs: dict[tuple[str, ...], dict[str, Any]], fault: str
) -> None:
    install, call = _installed(runs, fault)
    reasons = {"digest_unrepresentable"} | ({"tool_without_name"} if "nameless" in fault else set())
    assert install["catalog"] == "unverifiable"
    assert install["catalog_reason"] in reasons
    assert call["catalog"] == "unverifiable"


def test_a_huge_tool_name_is_capped(runs: dict[tuple[str, ...], dict[str, Any]]) -> None:
    fault = _fault(runs, "instrumented", "memory", "huge_name")
    [call] = _call_spans(fault)
    assert call["name_len"] <= 300
    assert call["bytes"] < 20_000
    assert fault["telemetry"]["max_label_len"] <= 300


def test_a_raising_downstream_processor_does_not_stop_the_others(
    runs: dict[tuple[str, ...], dict[str, Any]],
) -> None:
    for fault in PIPELINE_FAULTS:
        telemetry = _fault(runs, "instrumented", "downstream_raises", fault)["telemetry"]
        assert [s["verdict"] for s in telemetry["spans"] if s["name"].startswith("tools/call")]


def test_collectors_down_or_blackholed_still_export_in_memory(
    runs: dict[tuple[str, ...], dict[str, Any]],
) -> None:
    for pipeline in ("collector_down", "collector_blackhole"):
        for fault in PIPELINE_FAULTS:
            [call] = _call_spans(_fault(runs, "instrumented", pipeline, fault))
            assert call["verdict"] == "unverified"


def test_a_thousand_concurrent_sessions(runs: dict[tuple[str, ...], dict[str, Any]]) -> None:
    load = runs[("concurrent", "1000")]
    assert load["names"] == {
        "server/discover": 1000,
        "tools/list": 1000,
        "tools/call echo": 1000,
        "mcp_health.session.end": 1000,
    }
    assert (load["verdicts"], load["catalogs"], load["sessions"]) == (
        {"healthy": 1000},
        {"converged": 1000},
        1000,
    )


def test_state_at_a_hundred_thousand_sessions(
    runs: dict[tuple[str, ...], dict[str, Any]],
) -> None:
    typical = runs[TYPICAL]
    print(f"typical: {typical['bytes_per_session']} B/session, RSS {typical['rss_kib']} KiB")
    assert typical["verdicts"] == {"unverified": 100_000}
    assert typical["bytes_per_session"] < 4096
    assert typical["rss_kib"] < 400_000  # bounded by max_sessions, not by the sessions seen


def test_worst_case_state_is_a_small_constant(
    runs: dict[tuple[str, ...], dict[str, Any]],
) -> None:
    worst = runs[WORST]
    print(f"worst case: {worst['bytes_per_session']} B/session")
    assert worst["bytes_per_session"] < 24_576  # closed keys, channel state (issue 25)
