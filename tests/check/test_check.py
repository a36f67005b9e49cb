"""``otel-mcp-health check`` against real servers: third-party ones, and ours failing each layer.

The verdicts come from the judged spans (the same instrumentation and processor as an agent's),
so these tests pin what an operator sees: the JSON shape, the words, and the exit code.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from tests.check.check_servers import CANARY_ARG, CANARY_CURSOR, TOKEN
from tests.check.check_support import check, stdio

LAYERS = ("transport", "authorization", "protocol", "execution", "outcome")


# ---- the JSON shape, exactly ------------------------------------------------------------------
def test_json_shape_of_a_healthy_call_on_the_typescript_reference_server(
    everything: list[str],
) -> None:
    result = check(
        "--json",
        "--watch",
        "1",
        "--call",
        "get-sum",
        "--args",
        '{"a": 2, "b": 3}',
        "--outcome-not-required",
        *everything,
    )
    report = result.json()
    assert result.code == 0, report
    assert set(report) == {
        "target",
        "session",
        "catalog",
        "call",
        "verdict",
        "reason",
        "nextAction",
        "timedOut",
        "elapsedSeconds",
        "error",
    }
    assert report["session"] == {
        "protocolVersion": report["session"]["protocolVersion"],
        "era": "initialize",  # the 2026 probe was refused: the fallback to initialize
        "listChanged": True,
        "serverName": "mcp-servers/everything",
        "transport": "pipe",
        "connected": True,
    }
    assert report["session"]["protocolVersion"].startswith("20")
    catalog = report["catalog"]
    assert set(catalog) == {
        "verdict",
        "reason",
        "pages",
        "toolCount",
        "digest",
        "notifications",
        "rediscovered",
        "discoveryStopped",
        "approval",
    }
    assert catalog["approval"] is None  # no approved catalog (--pins) given
    assert catalog["verdict"] == "converged"
    assert catalog["pages"] >= 1
    assert catalog["toolCount"] >= 10
    assert catalog["digest"].startswith("sha256:")
    # This server announces a tool-list change right after the handshake: --watch re-lists.
    assert catalog["notifications"] >= 1
    assert catalog["rediscovered"] >= 1
    assert report["call"] == {
        "tool": "get-sum",
        "verdict": "healthy",
        "reason": "outcome_not_required",
        "nextAction": "none",
        "firstFailedLayer": "none",
        "layers": {
            "transport": "passed",
            "authorization": "not_applicable",
            "protocol": "passed",
            "execution": "passed",
            "outcome": "passed",
        },
        "outcomeMethod": "not_required",
        "catalogVerdict": "converged",
        "approval": None,
        "approvalPartial": False,
        "listed": True,
    }
    assert (report["verdict"], report["nextAction"]) == ("healthy", "none")
    assert report["timedOut"] is False
    assert report["error"] is None


def test_without_watch_the_reference_servers_own_signal_leaves_the_catalog_stale(
    everything: list[str],
) -> None:
    result = check("--json", *everything)
    report = result.json()
    assert result.code == 1
    assert report["catalog"]["verdict"] == "stale"
    assert report["catalog"]["reason"] == "signal_after_discovery"
    assert report["catalog"]["rediscovered"] == 0
    assert "call" not in report
    assert (report["verdict"], report["reason"], report["nextAction"]) == (
        "stale_catalog",
        "catalog_signal_after_discovery",
        "bounded_rediscovery",
    )


def test_python_server_from_pypi_in_both_eras(time_server: list[str]) -> None:
    args = ("--call", "get_current_time", "--args", '{"timezone": "UTC"}', "--outcome-not-required")
    modern = check("--json", *args, *time_server)
    assert modern.code == 0, modern.out + modern.err
    assert modern.json()["session"]["era"] == "server/discover"
    assert modern.json()["session"]["serverName"] == "mcp-time"
    assert modern.json()["verdict"] == "healthy"
    legacy = check("--json", "--era", "legacy", *args, *time_server)
    assert legacy.code == 0, legacy.out
    assert legacy.json()["session"]["era"] == "initialize"
    assert legacy.json()["catalog"]["verdict"] == "converged"


def test_without_a_call_a_converged_session_exits_0(time_server: list[str]) -> None:
    result = check("--json", *time_server)
    report = result.json()
    assert result.code == 0
    assert (report["verdict"], report["reason"]) == ("converged", "ok")
    assert report["nextAction"] == "none"
    assert "call" not in report


def test_a_call_nobody_can_verify_is_unverified(time_server: list[str]) -> None:
    result = check(
        "--json", "--call", "get_current_time", "--args", '{"timezone": "UTC"}', *time_server
    )
    assert result.code == 1
    assert result.json()["call"]["layers"]["outcome"] == "unobserved"
    assert (result.json()["verdict"], result.json()["nextAction"]) == (
        "unverified",
        "add_outcome_verifier",
    )


# ---- our servers, one failing layer each ------------------------------------------------------
def _verdict(result_json: dict[str, object]) -> tuple[object, object]:
    return result_json["verdict"], result_json["nextAction"]


def test_file_verifier_passes_and_catches_a_false_success(tmp_path: Path) -> None:
    content = f"report {CANARY_ARG}"
    digest = hashlib.sha256(content.encode()).hexdigest()
    target = tmp_path / "out.txt"
    args = f'{{"path": "{target}", "content": "{content}"}}'
    good = check(
        "--json",
        "--call",
        "write_file",
        "--args",
        args,
        "--verify-file",
        f"{target}:{digest}",
        *stdio("healthy"),
    )
    assert good.code == 0, good.out
    assert good.json()["call"]["outcomeMethod"] == "file_digest"
    assert _verdict(good.json()) == ("healthy", "none")
    missing = tmp_path / "never.txt"
    args = f'{{"path": "{missing}", "content": "{content}"}}'
    bad = check(
        "--json",
        "--call",
        "write_nothing",
        "--args",
        args,
        "--verify-file",
        str(missing),
        *stdio("healthy"),
    )
    assert bad.code == 1
    assert bad.json()["call"]["firstFailedLayer"] == "outcome"
    assert _verdict(bad.json()) == ("false_success", "verify_destination")
    for text in (good.out, bad.out, good.err, bad.err):
        assert CANARY_ARG not in text


def test_http_verifier(http_base: str) -> None:
    result = check(
        "--json",
        "--url",
        f"{http_base}/mcp",
        "--call",
        "lookup",
        "--verify-http",
        f"{http_base}/down",
        "--verify-status",
        "503",
    )
    assert result.code == 0, result.out
    assert result.json()["call"]["outcomeMethod"] == "http_status"
    failing = check(
        "--json",
        "--url",
        f"{http_base}/mcp",
        "--call",
        "lookup",
        "--verify-http",
        f"{http_base}/down",
    )
    assert _verdict(failing.json()) == ("false_success", "verify_destination")


def test_is_error_fails_the_execution_layer() -> None:
    result = check(
        "--json", "--call", "fail", "--args", f'{{"x": "{CANARY_ARG}"}}', *stdio("healthy")
    )
    assert result.code == 1
    assert result.json()["call"]["firstFailedLayer"] == "execution"
    assert _verdict(result.json()) == ("tool_failed", "inspect_tool")
    assert CANARY_ARG not in result.out


def test_jsonrpc_error_fails_the_protocol_layer() -> None:
    result = check(
        "--json", "--call", "reject", "--args", f'{{"x": "{CANARY_ARG}"}}', *stdio("healthy")
    )
    assert result.json()["call"]["firstFailedLayer"] == "protocol"
    assert result.json()["reason"] == "jsonrpc_-32602"
    assert result.json()["error"] is None  # the failed call is the finding, not a check error
    assert _verdict(result.json()) == ("protocol_error", "fix_request_contract")
    assert CANARY_ARG not in result.out + result.err


def test_a_cursor_loop_is_cut_off_and_judged_incomplete() -> None:
    result = check("--json", *stdio("loop"))
    report = result.json()
    assert result.code == 1
    assert report["catalog"]["discoveryStopped"] == "cursor_loop"
    assert report["catalog"]["pages"] == 3  # first page, the looping page, and its repeat
    assert (report["catalog"]["verdict"], report["catalog"]["reason"]) == (
        "incomplete",
        "cursor_loop",
    )
    assert _verdict(report) == ("stale_catalog", "resume_discovery")
    assert CANARY_CURSOR not in result.out


def test_the_page_cap_bounds_discovery() -> None:
    result = check("--json", "--max-pages", "1", *stdio("healthy"))
    assert result.json()["catalog"]["discoveryStopped"] == "page_cap"
    assert result.json()["catalog"]["pages"] == 1
    assert result.json()["catalog"]["reason"] == "cursor_remaining"


def test_list_changed_without_relisting_is_stale_and_watch_relists() -> None:
    stale = check("--json", "--era", "legacy", *stdio("announce"))
    assert stale.json()["catalog"]["notifications"] == 1
    assert stale.json()["catalog"]["reason"] == "signal_after_discovery"
    assert _verdict(stale.json()) == ("stale_catalog", "bounded_rediscovery")
    watched = check("--json", "--era", "legacy", "--watch", "0.5", *stdio("announce"))
    assert watched.json()["catalog"]["rediscovered"] >= 1
    assert watched.json()["catalog"]["verdict"] == "converged"
    assert watched.code == 0


def test_a_signal_during_the_call_makes_the_call_stale() -> None:
    result = check(
        "--json",
        "--era",
        "legacy",
        "--call",
        "announce",
        "--outcome-not-required",
        *stdio("healthy"),
    )
    assert result.json()["call"]["catalogVerdict"] == "stale"
    assert _verdict(result.json()) == ("stale_catalog", "bounded_rediscovery")


@pytest.mark.parametrize(
    ("path", "reason", "action"),
    [
        ("/authn", "invalid_token", "refresh_token_once"),
        ("/authn-scope", "http_401", "refresh_token_once"),
        ("/authz", "insufficient_scope", "request_scope"),
    ],
)
def test_authorization_failures_at_the_handshake(
    http_base: str, path: str, reason: str, action: str
) -> None:
    result = check("--json", "--url", f"{http_base}{path}")
    session = result.json()["session"]
    assert result.code == 1
    assert session["firstFailedLayer"] == "authorization"
    assert session["layers"] == {
        "transport": "passed",
        "authorization": "failed",
        "protocol": "unobserved",
        "execution": "unobserved",
        "outcome": "unobserved",
    }
    assert (session["verdict"], session["reason"]) == ("needs_auth", reason)
    assert _verdict(result.json()) == ("needs_auth", action)


def test_a_5xx_fails_the_transport_layer(http_base: str) -> None:
    result = check("--json", "--url", f"{http_base}/down")
    assert result.json()["session"]["firstFailedLayer"] == "transport"
    assert result.json()["reason"] == "http_503"
    assert _verdict(result.json()) == ("transport_error", "retry_within_budget")


def test_a_refused_port_fails_the_transport_layer() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        port = sock.getsockname()[1]
        result = check("--json", "--url", f"http://127.0.0.1:{port}/mcp")
    assert result.json()["session"]["layers"]["transport"] == "failed"
    assert result.json()["reason"] == "connection_refused"
    assert _verdict(result.json()) == ("transport_error", "retry_within_budget")


def test_header_credentials_are_used_and_never_printed_or_exported(
    http_base: str, tmp_path: Path
) -> None:
    denied = check("--json", "--url", f"{http_base}/secure")
    assert _verdict(denied.json()) == ("needs_auth", "refresh_token_once")
    allowed = check(
        "--url",
        f"{http_base}/secure",
        "--header",
        f"Authorization=Bearer {TOKEN}",
        "--call",
        "lookup",
        "--outcome-not-required",
    )
    assert allowed.code == 0, allowed.out
    assert "HEALTHY" in allowed.out
    assert TOKEN not in allowed.out + allowed.err
    # The spans exported over OTLP/file carry no header value either: export to a file.
    from tests.check.check_export import exported_bytes

    exported = exported_bytes(
        [
            "--url",
            f"{http_base}/secure",
            "--header",
            f"Authorization=Bearer {TOKEN}",
            "--call",
            "lookup",
            "--args",
            f'{{"q": "{CANARY_ARG}"}}',
        ],
        tmp_path,
    )
    assert b"tools/call lookup" in exported
    assert TOKEN.encode() not in exported
    assert CANARY_ARG.encode() not in exported


def test_timeout_bounds_the_whole_check() -> None:
    result = check(
        "--json", "--timeout", "2", "--", sys.executable, "-c", "import time; time.sleep(30)"
    )
    assert result.code == 1
    assert result.json()["timedOut"] is True
    assert result.json()["elapsedSeconds"] < 6
    assert result.json()["verdict"] != "healthy"


def test_human_output_for_a_person_on_call(http_base: str) -> None:
    result = check("--url", f"{http_base}/authz")
    assert "the server refused the credentials" in result.out
    assert "ask for the missing permission (scope); retrying will not help" in result.out
    assert "handshake failed at the authorization layer" in result.out
    assert "the server asks for scope: tools:call admin" in result.out
    assert check("--json", "--url", f"{http_base}/authz").json()["session"]["requiredScopes"] == [
        "tools:call",
        "admin",
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "give either --url URL or -- COMMAND ARGS"),
        (["--url", "http://127.0.0.1:9/mcp", "--", "x"], "not both"),
        (["--header", "X=1", "--", "x"], "--header applies to --url only"),
        (["--url", "http://127.0.0.1:9/mcp", "--header", "novalue"], "NAME=VALUE"),
        (["--args", "{}", "--", "x"], "need --call"),
        (["--call", "t", "--args", "[1]", "--", "x"], "--args expects a JSON object"),
        (["--timeout", "0", "--", "x"], "--timeout expects a positive number"),
        (["--max-pages", "0", "--", "x"], "--max-pages"),
        (["--call", "t", "--verify-http", "ftp://x", "--", "x"], "--verify-http expects"),
        (["--call", "t", "--verify-http", "http://h:99999/", "--", "x"], "--verify-http expects"),
        (["--call", "t", "--verify-http", "http://h/x:404", "--", "x"], "--verify-status STATUS"),
        (["--call", "t", "--verify-status", "404", "--", "x"], "applies to --verify-http only"),
        (["--call", "t", "--verify-http", "http://h/", "--verify-status", "7", "--", "x"], "100"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str) -> None:
    result = check(*argv)
    assert result.code == 2
    assert message in result.err
    assert result.out == ""


def test_a_header_value_never_appears_in_a_usage_error() -> None:
    result = check("--header", f"Authorization=Bearer {TOKEN}", "--", "x")
    assert result.code == 2
    assert TOKEN not in result.err


def test_progress_line_only_on_a_terminal_and_exit_code_from_the_real_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "otel_mcp_health", "check", *stdio("healthy")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CONVERGED" in proc.stdout
    assert "otel-mcp-health check: discovering" not in proc.stderr  # stderr is not a TTY


class _Terminal:
    """A stderr that says it is a terminal."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        return

    def isatty(self) -> bool:
        return True


def test_progress_line_on_a_terminal() -> None:
    import io

    from otel_mcp_health.cli import main

    terminal = _Terminal()
    code = main(["check", *stdio("healthy")], out=io.StringIO(), err=terminal)  # type: ignore[arg-type]
    assert code == 0
    assert "\rotel-mcp-health check: handshake" in terminal.text
    assert "otel-mcp-health check: discovering tools" in terminal.text
    assert terminal.text.endswith("\r")  # the line is cleared before the report


def test_a_server_that_cannot_start_is_never_green() -> None:
    result = check("--json", "--", "/nonexistent/mcp-server")
    report = result.json()
    assert result.code == 1
    assert (report["verdict"], report["reason"]) == ("unverified", "no_evidence")
    assert report["error"] == "FileNotFoundError"
    assert report["session"]["connected"] is False
    human = check("--", "/nonexistent/mcp-server")
    assert "the server could not be started or reached" in human.out
    assert "check the command or URL" in human.out


def test_watch_in_the_2026_era_listens_and_relists() -> None:
    result = check("--json", "--watch", "1.5", *stdio("listen"))
    report = result.json()
    assert result.code == 0, report
    assert report["session"]["era"] == "server/discover"
    assert report["session"]["listChanged"] is True
    assert report["catalog"]["notifications"] == 1  # over the subscriptions/listen stream
    assert report["catalog"]["rediscovered"] == 1
    assert report["catalog"]["verdict"] == "converged"
    assert 1.5 <= report["elapsedSeconds"] < 10  # the whole window is watched
    assert report["error"] is None


def test_watch_on_a_server_without_subscriptions_ends_on_time() -> None:
    result = check("--json", "--watch", "0.5", *stdio("healthy"))
    report = result.json()
    assert result.code == 0, report
    assert report["catalog"]["notifications"] == 0
    assert 0.5 <= report["elapsedSeconds"] < 10


def test_forcing_the_2026_era_on_a_server_that_only_knows_initialize(
    everything: list[str],
) -> None:
    result = check("--json", "--era", "modern", *everything)
    report = result.json()
    assert result.code == 1
    assert report["session"]["era"] is None  # adopted without a handshake
    assert report["session"]["protocolVersion"] == "2026-07-28"
    assert (report["catalog"]["verdict"], report["catalog"]["reason"]) == (
        "incomplete",
        "page_failed",
    )
    assert report["catalog"]["pages"] == 1
    assert (report["verdict"], report["nextAction"]) == ("stale_catalog", "resume_discovery")


def test_the_target_never_shows_user_info_of_the_url() -> None:
    result = check("--json", "--timeout", "3", "--url", f"http://user:{TOKEN}@127.0.0.1:9/mcp")
    assert result.json()["target"] == "http://127.0.0.1:9/mcp"
    assert TOKEN not in result.out + result.err


def test_a_call_that_outlives_the_timeout_is_silence_not_success() -> None:
    result = check("--json", "--timeout", "3", "--call", "slow", *stdio("healthy"))
    report = result.json()
    assert result.code == 1
    assert report["call"]["firstFailedLayer"] == "execution"
    assert report["call"]["layers"]["protocol"] == "unobserved"  # no envelope arrived
    assert (report["verdict"], report["nextAction"]) == ("effect_unknown", "reconcile_before_retry")
    assert report["elapsedSeconds"] < 8
