"""The outcome policy file (issue 18): parsing, matching, every kind against real destinations.

Real destinations (a file, a sqlite database, an HTTP server on 127.0.0.1, a Python function),
the real instrumented ``mcp.Client`` against the destination server, the real processor: the
policy must give the verdicts the in-code verifiers give. A bad file installs nothing and warns
once, naming the file, the entry and the key; no value of a policy or a call ever reaches a span
or a log line.
"""

from __future__ import annotations

import hashlib
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from tests.outcomes import policy_verifiers
from tests.outcomes.destinations import PublishTarget, build_destination_server, sha256_text
from tests.support.processor_helpers import Pipeline, instrumented_pipeline

from otel_mcp_health import OutcomePolicy, OutcomePolicyError, register_verifier
from otel_mcp_health import attributes as A
from otel_mcp_health.instrumentation import flush_receipts
from otel_mcp_health.verifiers import (
    CallContext,
    Verifier,
    clear_verifiers,
    install_from_env,
    run_verifier,
    verifier_for,
)
from otel_mcp_health.verifiers._registry import rules
from otel_mcp_health.verifiers._templates import Template, TemplateError

ENV = "OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES"
CANARY = "canary-policy-7be01c"


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    clear_verifiers()
    yield
    clear_verifiers()


def load(tmp_path: Path, text: str, name: str = "outcomes.toml") -> OutcomePolicy:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return OutcomePolicy.load(path)


def ctx(tool: str = "t", **arguments: Any) -> CallContext:
    return CallContext(tool=tool, arguments=arguments)


def chosen(policy: OutcomePolicy, tool: str, **match: Any) -> Verifier:
    entry = policy.match(tool, **match)
    assert entry is not None
    assert isinstance(entry.rule.choice, Verifier)
    return entry.rule.choice


# ---- parsing ----------------------------------------------------------------------------------
EVERY_KIND = """
[[outcome]]
tool = "search_*"
read_only = true
verify = "not_required"

[[outcome]]
tool = "export_report"
server = "reports-*"
verify = "file"
path = "/srv/out/{name}.csv"
sha256 = "{sha256}"

[[outcome]]
tool = "publish"
verify = "http"
url = "https://pages.example.test/{slug}"
status = 201
timeout = 2

[[outcome]]
tool = "insert_order"
verify = "sqlite"
database = "/var/lib/shop/{db}"
query = "select 1 from orders where id = :order_id and note <> ':not_a_parameter'"

[[outcome]]
tool = "custom"
verify = "python"
callable = "tests.outcomes.policy_verifiers:report_exists"
timeout = 0.5
"""


def test_every_kind_builds_the_objects_of_the_code_api(tmp_path: Path) -> None:
    policy = load(tmp_path, EVERY_KIND)
    assert [(e.index, e.kind) for e in policy.entries] == [
        (1, "not_required"),
        (2, "file"),
        (3, "http"),
        (4, "sqlite"),
        (5, "python"),
    ]
    assert policy.entries[0].rule.choice == "not_required"
    methods = [e.rule.choice.method for e in policy.entries[1:]]  # type: ignore[union-attr]
    assert methods == ["file_digest", "http_status", "sqlite_row", "callable"]
    assert [e.reads for e in policy.entries] == [
        (),
        ("name", "sha256"),
        ("slug",),
        ("db", "order_id"),  # a quoted ':not_a_parameter' is not a parameter
        (),
    ]
    assert chosen(policy, "custom").timeout == 0.5
    assert chosen(policy, "publish").timeout > 2  # the request's own timeout answers first


def test_templates_name_top_level_arguments_only() -> None:
    assert Template.parse("/out/{name}.csv").expand({"name": "q3"}) == "/out/q3.csv"
    assert Template.parse("/out/{{literal}}/{n}").expand({"n": 7}) == "/out/{literal}/7"
    url = Template.parse("http://h/pages/{slug}")
    assert url.expand_url({"slug": "a/b?c"}) == "http://h/pages/a%2Fb%3Fc"
    for bad in ("{a.b}", "{a[0]}", "{a!r}", "{a:>9}", "{}", "{open", "close}"):
        with pytest.raises(TemplateError):
            Template.parse(bad)


# ---- matching ---------------------------------------------------------------------------------
MATCHING = """
[[outcome]]
tool = "*"
read_only = true
verify = "not_required"

[[outcome]]
tool = "export_*"
server = "reports-*"
verify = "file"
path = "/srv/out/{path}"

[[outcome]]
tool = "export_*"
verify = "http"
url = "http://127.0.0.1:9/{path}"

[[outcome]]
tool = "delete_*"
read_only = false
verify = "python"
callable = "tests.outcomes.policy_verifiers:report_exists"
"""


def test_first_match_wins_by_tool_server_and_read_only(tmp_path: Path) -> None:
    load(tmp_path, MATCHING).install()
    assert verifier_for("anything", read_only=True) == "not_required"
    assert verifier_for("anything", read_only=False) is None
    by_server = verifier_for("export_q3", server="reports-eu")
    assert isinstance(by_server, Verifier)
    assert by_server.method == "file_digest"
    other = verifier_for("export_q3", server="billing")
    assert isinstance(other, Verifier)
    assert other.method == "http_status"
    nameless = verifier_for("export_q3", server=None)  # a server glob needs a server name
    assert isinstance(nameless, Verifier)
    assert nameless.method == "http_status"
    assert verifier_for("Export_q3") is None  # globs are case-sensitive
    assert verifier_for("delete_row", read_only=None) is not None  # no hint: may have an effect
    assert verifier_for("delete_row", read_only=True) == "not_required"  # entry 1 came first


def test_tools_registered_in_code_keep_their_verifier(tmp_path: Path) -> None:
    load(tmp_path, MATCHING).install()
    register_verifier("export_q3", policy_verifiers.report_exists, method="in_code")
    in_code = verifier_for("export_q3", server="reports-eu")
    assert isinstance(in_code, Verifier)
    assert in_code.method == "in_code"


# ---- every kind against its real destination, through the instrumented client -----------------
def _policy_for(kind: str, target: PublishTarget, where: Path) -> str:
    """The policy of one kind; a file's or database's directory is literal (``where``)."""
    entries = {
        "file": f'verify = "file"\npath = "{where}/{{name}}"\nsha256 = "{{sha}}"',
        "sqlite": f'verify = "sqlite"\ndatabase = "{where}/{{dbname}}"\n'
        'query = "select version from tickets where id = :id"',
        "http": f'verify = "http"\nurl = "{target.base}/pages/{{slug}}"',
        "python": 'verify = "python"\ncallable = "tests.outcomes.policy_verifiers:report_exists"',
    }
    tool = {"file": "write_report", "python": "write_report", "sqlite": "insert_ticket"}
    glob = tool.get(kind, "publish_page")
    return f'[[outcome]]\ntool = "{glob}*"\nserver = "destination-server"\n{entries[kind]}\n'


def _arguments(kind: str, n: int, tmp_path: Path, database: Path, target: PublishTarget) -> Any:
    """Arguments that target a destination nothing delivered to yet (``n`` tells them apart)."""
    if kind in ("file", "python"):
        content, name = f"Q{n} {CANARY}", f"report-{n}-{CANARY}.txt"
        path = str(tmp_path / name)
        return {"path": path, "name": name, "content": content, "sha": sha256_text(content)}
    if kind == "sqlite":
        return {"db": str(database), "dbname": database.name, "id": f"T-{n}-{CANARY}"}
    return {"base": target.base, "slug": f"release-{n}-{CANARY}"}


_TOOLS = {"file": "write_report", "python": "write_report", "sqlite": "insert_ticket"}
_METHODS = {
    "file": "file_digest",
    "python": "callable",
    "sqlite": "sqlite_row",
    "http": "http_status",
}


async def _call(pipeline: Pipeline, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with Client(build_destination_server()) as client:
        await client.list_tools()
        result = await client.call_tool(tool, arguments)
        assert result.is_error is False  # the application sees the tool's own result
    assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
    return dict(pipeline.last(f"tools/call {tool}").attributes or {})


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["file", "sqlite", "http", "python"])
async def test_each_kind_gives_healthy_and_false_success(
    tmp_path: Path, database: Path, publish_target: PublishTarget, kind: str
) -> None:
    load(tmp_path, _policy_for(kind, publish_target, tmp_path)).install()
    tool = _TOOLS.get(kind, "publish_page")
    with instrumented_pipeline() as pipeline:
        good = await _call(pipeline, tool, _arguments(kind, 1, tmp_path, database, publish_target))
        arguments = _arguments(kind, 2, tmp_path, database, publish_target)
        bad = await _call(pipeline, f"{tool}_broken", arguments)
    assert (good[A.OUTCOME_METHOD], good[A.OUTCOME_RESULT], good[A.VERDICT]) == (
        _METHODS[kind],
        "passed",
        "healthy",
    )
    assert (bad[A.OUTCOME_RESULT], bad[A.VERDICT], bad[A.CALL_FIRST_FAILED_LAYER]) == (
        "failed",
        "false_success",
        "outcome",
    )


def test_file_kind_checks_the_digest(tmp_path: Path) -> None:
    report = tmp_path / "q3.csv"
    report.write_text("Q3 numbers", encoding="utf-8")
    digest = sha256_text("Q3 numbers")
    entry = f'verify = "file"\npath = "{tmp_path}/{{name}}.csv"\nsha256 = "sha256:{digest}"'
    policy = load(tmp_path, f'[[outcome]]\ntool = "*"\n{entry}\n')
    verifier = chosen(policy, "export")
    assert run_verifier(verifier, ctx(name="q3")).result.value == "passed"
    report.write_text("Q4 numbers", encoding="utf-8")
    assert run_verifier(verifier, ctx(name="q3")).reason == "digest_mismatch"
    assert run_verifier(verifier, ctx(name="q9")).reason == "file_absent"


def test_sqlite_kind_is_read_only_and_never_creates_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "absent.db"
    policy = load(
        tmp_path,
        f'[[outcome]]\ntool = "*"\nverify = "sqlite"\ndatabase = "{tmp_path}/{{db}}"\n'
        'query = "delete from tickets where id = :id"\n',
    )
    verifier = chosen(policy, "insert")
    absent = run_verifier(verifier, ctx(db=missing.name, id="T-1"))
    assert (absent.result.value, absent.reason) == ("inconclusive", "database_unavailable")
    assert not missing.exists()


@pytest.mark.anyio
async def test_the_python_callable_reads_server_and_read_only_hint(tmp_path: Path) -> None:
    policy_verifiers.SEEN.clear()
    load(
        tmp_path,
        '[[outcome]]\ntool = "write_*"\nverify = "python"\n'
        'callable = "tests.outcomes.policy_verifiers:record_context"\n',
    ).install()
    with instrumented_pipeline() as pipeline:
        arguments = {"path": str(tmp_path / "r.txt"), "content": "x"}
        attrs = await _call(pipeline, "write_report", arguments)
    assert (attrs[A.OUTCOME_METHOD], attrs[A.VERDICT]) == ("context_seen", "healthy")
    assert policy_verifiers.SEEN == [("write_report", "destination-server", None)]


# ---- a call that cannot fill the templates ----------------------------------------------------
FILE_OF_NAME = 'verify = "file"\npath = "/srv/{name}.csv"'


@pytest.mark.parametrize(
    ("entry", "arguments", "reason"),
    [
        (FILE_OF_NAME, {}, "argument_missing"),
        (FILE_OF_NAME, {"name": ["a"]}, "argument_not_scalar"),
        (FILE_OF_NAME, {"name": True}, "argument_not_scalar"),
        (
            'verify = "http"\nurl = "http://127.0.0.1:9/{slug}"',
            {"slug": None},
            "argument_not_scalar",
        ),
        ('verify = "sqlite"\ndatabase = "/x.db"\nquery = "select :id"', {}, "argument_missing"),
        ('verify = "file"\npath = "/x/{p}"\nsha256 = "{sha}"', {"p": "x"}, "argument_missing"),
    ],
)
def test_a_missing_argument_is_inconclusive_never_an_exception(
    tmp_path: Path, entry: str, arguments: dict[str, Any], reason: str
) -> None:
    verifier = chosen(load(tmp_path, f'[[outcome]]\ntool = "*"\n{entry}\n'), "t")
    receipt = verifier.fn(ctx(**arguments))  # the verifier itself answers, it does not raise
    assert (receipt.result.value, receipt.reason) == ("inconclusive", reason)  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_missing_argument_reads_unverified(tmp_path: Path) -> None:
    load(
        tmp_path, '[[outcome]]\ntool = "write_report"\nverify = "file"\npath = "/srv/{file}"\n'
    ).install()
    with instrumented_pipeline() as pipeline:
        attrs = await _call(pipeline, "write_report", {"path": str(tmp_path / "r"), "content": "x"})
    assert (attrs[A.OUTCOME_RESULT], attrs[A.OUTCOME_REASON]) == (
        "inconclusive",
        "argument_missing",
    )
    assert (attrs[A.VERDICT], attrs[A.REASON]) == ("unverified", "verifier_inconclusive")


def test_an_unimportable_callable_is_unavailable_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    policy = load(
        tmp_path,
        '[[outcome]]\ntool = "a"\nverify = "python"\ncallable = "no_such_module_x:check"\n'
        '[[outcome]]\ntool = "b"\nverify = "python"\n'
        'callable = "tests.outcomes.policy_verifiers:NOT_A_FUNCTION"\n',
    )
    with caplog.at_level(logging.WARNING, logger="otel_mcp_health"):
        for tool in ("a", "a", "b"):
            receipt = run_verifier(chosen(policy, tool), ctx(tool))
            assert (receipt.result.value, receipt.reason) == (
                "inconclusive",
                "verifier_unavailable",
            )
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2, warnings  # one per entry, not one per call
    assert "entry 1, key 'callable'" in warnings[0]
    assert "ModuleNotFoundError" in warnings[0]
    assert "entry 2, key 'callable'" in warnings[1]
    assert "not callable" in warnings[1]


# ---- bad files --------------------------------------------------------------------------------
GOOD_ENTRY = '[[outcome]]\ntool = "lookup"\nverify = "not_required"\n\n'


def _second(body: str) -> str:
    """A file whose first entry is good and whose second is ``body`` (after its tool)."""
    return f'{GOOD_ENTRY}[[outcome]]\ntool = "x"\n{body}\n'


BAD_FILES = [
    ("missing", None, "no such file"),
    ("not toml", f'[[outcome]]\ntool = "{CANARY}\n', "not valid TOML (at line 2"),
    ("unknown verify", _second(f'verify = "{CANARY}"'), "entry 2, key 'verify': unknown verifier"),
    (
        "unknown key",
        _second(f'verify = "file"\npath = "p"\nsha = "{CANARY}"'),
        "entry 2, key 'sha': unknown key",
    ),
    ("missing key", _second('verify = "http"'), "entry 2, key 'url': missing"),
    (
        "wrong type",
        _second(f'verify = "http"\nurl = "http://h/"\nstatus = "{CANARY}"'),
        "entry 2, key 'status': expects an HTTP status",
    ),
    (
        "bad url",
        _second(f'verify = "http"\nurl = "ftp://{CANARY}"'),
        "entry 2, key 'url': expects an http",
    ),
    (
        "bad template",
        _second(f'verify = "file"\npath = "/{CANARY}/{{a.b}}"'),
        "entry 2, key 'path': a placeholder names one argument",
    ),
    (
        "bad sha256",
        _second(f'verify = "file"\npath = "p"\nsha256 = "{CANARY}"'),
        "entry 2, key 'sha256': expects 64 hex digits",
    ),
    (
        "bad reference",
        _second(f'verify = "python"\ncallable = "{CANARY}"'),
        "entry 2, key 'callable': expects package.module:function",
    ),
    (
        "unknown entry point",
        _second(f'verify = "entry_point"\nname = "{CANARY}"'),
        "entry 2, key 'name': no installed distribution",
    ),
    (
        "bad timeout",
        _second('verify = "file"\npath = "p"\ntimeout = -1'),
        "entry 2, key 'timeout': expects a positive number",
    ),
    (
        "no tool",
        f'{GOOD_ENTRY}[[outcome]]\nverify = "not_required"\n',
        "entry 2, key 'tool': missing",
    ),
    (
        "not an array",
        '[outcome]\ntool = "x"\nverify = "not_required"\n',
        "key 'outcome': expects [[outcome]] tables",
    ),
    ("top-level key", f'{GOOD_ENTRY}verifiers = "{CANARY}"\n', "key 'verifiers': unknown key"),
]


@pytest.mark.parametrize(
    ("text", "problem"), [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES]
)
def test_a_bad_file_warns_once_and_installs_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    text: str | None,
    problem: str,
) -> None:
    path = tmp_path / "outcomes.toml"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    monkeypatch.setenv(ENV, str(path))
    with caplog.at_level(logging.DEBUG, logger="otel_mcp_health"):
        assert install_from_env() is None
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, caplog.text
    message = warnings[0].getMessage()
    assert str(path) in message
    assert problem in message
    assert "no outcome verifier from it" in message
    assert CANARY not in caplog.text
    assert rules() == ()
    assert verifier_for("lookup") is None  # not even the good entry: calls read unverified
    with pytest.raises(OutcomePolicyError) as raised:
        OutcomePolicy.load(path)
    assert CANARY not in str(raised.value) + "".join(str(p) for p in raised.value.problems)


def test_instrument_installs_the_file_and_uninstrument_forgets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "outcomes.toml"
    path.write_text(GOOD_ENTRY, encoding="utf-8")
    monkeypatch.setenv(ENV, str(path))
    register_verifier("in_code", policy_verifiers.report_exists)
    with instrumented_pipeline():
        assert verifier_for("lookup") == "not_required"
    assert verifier_for("lookup") is None
    monkeypatch.delenv(ENV)
    with instrumented_pipeline():
        assert verifier_for("lookup") is None


# ---- nothing of a policy or a call leaves the process -----------------------------------------
def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.anyio
async def test_no_path_url_or_argument_reaches_a_span_or_a_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = _closed_port()
    load(
        tmp_path,
        f"""
[[outcome]]
tool = "write_report"
verify = "file"
path = "{tmp_path}/{{name}}"
sha256 = "{hashlib.sha256(b"other bytes").hexdigest()}"

[[outcome]]
tool = "write_report_broken"
verify = "python"
callable = "tests.outcomes.policy_verifiers:raises_with_the_path"

[[outcome]]
tool = "publish_page*"
verify = "http"
url = "http://127.0.0.1:{port}/{CANARY}/{{slug}}"

[[outcome]]
tool = "insert_ticket*"
verify = "sqlite"
database = "{tmp_path}/{CANARY}.db"
query = "select 1 from t where id = :id"
""",
    ).install()
    report = str(tmp_path / f"{CANARY}.txt")
    arguments = {"path": report, "name": f"{CANARY}.txt", "content": CANARY, "slug": CANARY}
    arguments["id"] = CANARY
    arguments |= {"base": "http://127.0.0.1:9", "db": str(tmp_path / "absent.db")}
    with caplog.at_level(logging.DEBUG), instrumented_pipeline() as pipeline:
        async with Client(build_destination_server()) as client:
            await client.list_tools()
            for tool in (
                "write_report",
                "write_report_broken",
                "publish_page_broken",
                "insert_ticket_broken",
            ):
                await client.call_tool(tool, arguments)
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
        spans = pipeline.spans()
    reasons = {
        s.name: (s.attributes or {}).get(A.OUTCOME_REASON) for s in spans if "tools/call" in s.name
    }
    assert reasons == {
        "tools/call write_report": "digest_mismatch",
        "tools/call write_report_broken": "verifier_raised",
        "tools/call publish_page_broken": "unreachable",
        "tools/call insert_ticket_broken": "database_unavailable",
    }
    exported = repr([(s.name, dict(s.attributes or {}), s.events, s.status) for s in spans])
    assert CANARY not in exported
    logged = caplog.text + repr([(r.msg, r.args) for r in caplog.records])
    assert CANARY not in logged
