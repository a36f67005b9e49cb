"""Receipts the model cannot forge: a policy's arguments are data, never structure (issue 26).

The arguments a verifier reads were chosen by the model, which a prompt injection can steer. With
the real policy loader, the real verifiers, real files and a real HTTP server on 127.0.0.1: no
receipt passes on a file or URL that the policy's literal parts do not name, an argument that
tries to leave them gives a ``failed`` receipt with its own reason code, a policy that lets an
argument choose the host is refused when it loads, redirects stay on their origin, and a huge
file is never read whole.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from tests.outcomes.destinations import build_destination_server
from tests.support.processor_helpers import instrumented_pipeline

from otel_mcp_health import OutcomePolicy, OutcomePolicyError
from otel_mcp_health import attributes as A
from otel_mcp_health.cli import main as cli_main
from otel_mcp_health.instrumentation import flush_receipts
from otel_mcp_health.verifiers import CallContext, Receipt, Verifier, clear_verifiers, run_verifier

SECRET = "top secret, outside the policy's directory"


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    clear_verifiers()
    yield
    clear_verifiers()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``out/`` (the policy's directory, with ``ok.txt``), a secret file next to it, and a
    symlink inside ``out/`` that points at the secret."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "ok.txt").write_text("ok", encoding="utf-8")
    (tmp_path / "secret.txt").write_text(SECRET, encoding="utf-8")
    (out / "link.txt").symlink_to(tmp_path / "secret.txt")
    return tmp_path


def policy(tmp_path: Path, entry: str, tool: str = "t") -> OutcomePolicy:
    path = tmp_path / "outcomes.toml"
    path.write_text(f'[[outcome]]\ntool = "{tool}"\n{entry}\n', encoding="utf-8")
    return OutcomePolicy.load(path)


def verify(loaded: OutcomePolicy, **arguments: Any) -> Receipt:
    entry = loaded.match("t")
    assert entry is not None
    assert isinstance(entry.rule.choice, Verifier)
    return run_verifier(entry.rule.choice, CallContext(tool="t", arguments=arguments))


def outcome(receipt: Receipt) -> tuple[str, str | None]:
    return receipt.result.value, receipt.reason


# ---- files -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("../secret.txt", "argument_unsafe"),  # a separator and a dot segment in one value
        ("..", "argument_unsafe"),
        (".", "argument_unsafe"),
        ("sub/ok.txt", "argument_unsafe"),
        ("ok.txt\0", "argument_unsafe"),
        ("link.txt", "path_outside_base"),  # a symlink inside the directory, to a file outside
    ],
)
def test_a_file_outside_the_policys_directory_never_passes(
    tree: Path, name: str, reason: str
) -> None:
    loaded = policy(tree, f'verify = "file"\npath = "{tree}/out/{{name}}"')
    assert outcome(verify(loaded, name="ok.txt")) == ("passed", None)
    assert outcome(verify(loaded, name=name)) == ("failed", reason)


def test_a_name_too_long_for_the_filesystem_is_absent(tree: Path) -> None:
    """No file can have a 5,000-byte name: the receipt is ``failed`` (``file_absent``) or, for a
    database, ``database_unavailable``, not ``verifier_raised`` (which read ``unverified``)."""
    loaded = policy(tree, f'verify = "file"\npath = "{tree}/out/{{name}}"')
    assert outcome(verify(loaded, name="x" * 5000)) == ("failed", "file_absent")
    entry = f'verify = "sqlite"\ndatabase = "{tree}/out/{{db}}"\nquery = "select 1"'
    assert outcome(verify(policy(tree, entry), db="x" * 5000)) == (
        "inconclusive",
        "database_unavailable",
    )


def test_an_absolute_value_never_passes(tree: Path) -> None:
    loaded = policy(tree, f'verify = "file"\npath = "{tree}/out/{{name}}"')
    assert outcome(verify(loaded, name=str(tree / "secret.txt"))) == ("failed", "argument_unsafe")
    assert outcome(verify(loaded, name="/etc/hostname")) == ("failed", "argument_unsafe")


def test_dot_segments_in_the_middle_of_a_path_never_pass(tree: Path) -> None:
    loaded = policy(tree, f'verify = "file"\npath = "{tree}/out/{{dir}}/{{name}}"')
    assert outcome(verify(loaded, dir="..", name="secret.txt")) == ("failed", "argument_unsafe")


def test_a_database_outside_the_policys_directory_is_never_opened(tree: Path) -> None:
    entry = f'verify = "sqlite"\ndatabase = "{tree}/out/{{db}}"\nquery = "select 1"'
    loaded = policy(tree, entry)
    assert outcome(verify(loaded, db="../secret.txt")) == ("failed", "argument_unsafe")
    assert outcome(verify(loaded, db="link.txt")) == ("failed", "path_outside_base")


@pytest.mark.parametrize("template", ["{path}", "{dir}/report.csv", "report-{n}.csv"])
def test_a_file_template_whose_directory_an_argument_chooses_is_refused(
    tmp_path: Path, template: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(OutcomePolicyError) as refused:
        policy(tmp_path, f'verify = "file"\npath = "{template}"')
    assert "entry 1, key 'path': expects a literal directory" in str(refused.value.problems[0])
    assert cli_main(["outcomes", str(tmp_path / "outcomes.toml")]) == 2
    assert "entry 1, key 'path'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "template", ["/{dir}/{name}", "//{dir}/{name}", "/./{dir}/{name}", "/srv/../{dir}/{name}"]
)
@pytest.mark.parametrize("key", ["path", "database"])
def test_a_template_under_the_filesystem_root_is_refused(
    tmp_path: Path, template: str, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The root is no base directory: ``/{dir}/{name}`` with ``etc`` and ``hostname`` would
    name any file on the machine, as ``{path}`` does."""
    kind = 'verify = "file"' if key == "path" else 'verify = "sqlite"\nquery = "select 1"'
    with pytest.raises(OutcomePolicyError) as refused:
        policy(tmp_path, f'{kind}\n{key} = "{template}"')
    assert f"entry 1, key '{key}': expects a literal directory" in str(refused.value.problems[0])
    assert cli_main(["outcomes", str(tmp_path / "outcomes.toml")]) == 2
    assert f"entry 1, key '{key}'" in capsys.readouterr().err


@pytest.mark.anyio
async def test_a_traversal_through_the_real_client_is_false_success(tree: Path) -> None:
    """End to end: the tool writes the file a traversal names; the receipt still fails."""
    policy(tree, f'verify = "file"\npath = "{tree}/out/{{name}}"', "write_report").install()
    arguments = {"path": str(tree / "planted.txt"), "name": "../planted.txt", "content": "x"}
    with instrumented_pipeline() as pipeline:
        async with Client(build_destination_server()) as client:
            await client.list_tools()
            await client.call_tool("write_report", arguments)
        assert await anyio.to_thread.run_sync(flush_receipts, 10.0)
        attrs = dict(pipeline.last("tools/call write_report").attributes or {})
    assert (tree / "planted.txt").exists()  # the file is there, but not where the policy looks
    assert (attrs[A.OUTCOME_RESULT], attrs[A.OUTCOME_REASON]) == ("failed", "argument_unsafe")
    assert attrs[A.VERDICT] == "false_success"


# ---- a file's size ---------------------------------------------------------------------------
def test_a_huge_sparse_file_is_refused_quickly_never_read_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    huge = out / "huge.bin"
    with huge.open("wb"):
        pass
    os.truncate(huge, 1 << 30)  # 1 GiB of zeros that takes no disk space
    loaded = policy(tmp_path, f'verify = "file"\npath = "{out}/{{name}}"\nsha256 = "{"0" * 64}"')
    started = time.perf_counter()
    receipt = verify(loaded, name="huge.bin")
    elapsed = time.perf_counter() - started
    assert outcome(receipt) == ("inconclusive", "file_too_large")
    assert elapsed < 0.5, elapsed


def test_a_file_within_the_cap_is_hashed_and_max_bytes_sets_the_cap(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "r.bin").write_bytes(b"x" * 4096)
    digest = hashlib.sha256(b"x" * 4096).hexdigest()
    entry = f'verify = "file"\npath = "{out}/{{name}}"\nsha256 = "{digest}"'
    assert outcome(verify(policy(tmp_path, entry), name="r.bin")) == ("passed", None)
    capped = policy(tmp_path, entry + "\nmax_bytes = 4095")
    assert outcome(verify(capped, name="r.bin")) == ("inconclusive", "file_too_large")


# ---- URLs ------------------------------------------------------------------------------------
class Site:
    """An HTTP server on 127.0.0.1 that records the paths it was asked for: ``/orders/<id>/status``
    answers 200, ``/status`` 200 (what a traversal would reach), ``/moved`` redirects to the
    ``target`` URL, anything else 404."""

    def __init__(self) -> None:
        self.requested: list[str] = []
        self.target = ""
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.requested.append(self.path)
                if self.path == "/moved":
                    self.send_response(302)
                    self.send_header("Location", site.target)
                elif self.path.startswith("/orders/") or self.path in ("/status", "/here"):
                    self.send_response(200)
                else:
                    self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    @contextmanager
    def running(self) -> Iterator[Site]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture
def site() -> Iterator[Site]:
    with Site().running() as running:
        yield running


@pytest.fixture
def other_site() -> Iterator[Site]:
    with Site().running() as running:
        yield running


@pytest.mark.parametrize("value", ["..", "."])
def test_a_dot_segment_from_a_url_value_is_refused_unrequested(
    tmp_path: Path, site: Site, value: str
) -> None:
    loaded = policy(tmp_path, f'verify = "http"\nurl = "{site.base}/orders/{{id}}/status"')
    assert outcome(verify(loaded, id="42")) == ("passed", None)
    assert outcome(verify(loaded, id=value)) == ("failed", "argument_unsafe")
    assert site.requested == ["/orders/42/status"]  # the traversal never went out


@pytest.mark.parametrize(
    "url",
    [
        "{url}",
        "http://{host}/status",
        "http://127.0.0.1:{port}/status",
        "https://pages.example.com{path}",
        "http://user@{host}/",
    ],
)
def test_a_url_whose_host_an_argument_chooses_is_refused_at_load(
    tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(OutcomePolicyError) as refused:
        policy(tmp_path, f'verify = "http"\nurl = "{url}"')
    problem = str(refused.value.problems[0])
    assert problem.startswith("entry 1, key 'url': expects a literal scheme, host and port")
    assert problem.endswith("an argument may not choose the host"), problem
    assert cli_main(["outcomes", str(tmp_path / "outcomes.toml")]) == 2
    assert "entry 1, key 'url'" in capsys.readouterr().err


def test_a_url_whose_scheme_is_upper_case_is_checked(tmp_path: Path, site: Site) -> None:
    """A scheme is case-insensitive: a policy that loads with ``HTTP://`` also requests it
    (before, it loaded, then every receipt was ``unsupported_url``)."""
    url = site.base.replace("http://", "HTTP://") + "/{page}"
    assert outcome(verify(policy(tmp_path, f'verify = "http"\nurl = "{url}"'), page="here")) == (
        "passed",
        None,
    )
    assert site.requested == ["/here"]


@pytest.mark.parametrize("path", ["/orders/../orders/{id}/status", "/orders/./{id}/status"])
def test_a_url_template_with_a_literal_dot_segment_is_refused_at_load(
    tmp_path: Path, site: Site, path: str
) -> None:
    """Values may not make a dot segment, so one in the literal text would fail every call
    (``argument_unsafe``, a ``false_success`` of a healthy call): refused when it loads."""
    with pytest.raises(OutcomePolicyError) as refused:
        policy(tmp_path, f'verify = "http"\nurl = "{site.base}{path}"')
    assert str(refused.value.problems[0]).startswith("entry 1, key 'url': expects no . or ..")


def test_a_redirect_is_not_followed_by_default(tmp_path: Path, site: Site) -> None:
    site.target = f"{site.base}/here"
    loaded = policy(tmp_path, f'verify = "http"\nurl = "{site.base}/{{page}}"')
    assert outcome(verify(loaded, page="moved")) == ("failed", "http_302")
    assert site.requested == ["/moved"]


def test_a_redirect_to_another_origin_is_never_followed(
    tmp_path: Path, site: Site, other_site: Site
) -> None:
    site.target = f"{other_site.base}/here"
    entry = f'verify = "http"\nurl = "{site.base}/{{page}}"'
    assert outcome(verify(policy(tmp_path, entry), page="moved")) == ("failed", "http_302")
    assert other_site.requested == []
    loaded = policy(tmp_path, entry + "\nfollow_redirects = true")
    site.target = f"{site.base}/here"
    assert outcome(verify(loaded, page="moved")) == ("passed", None)  # same origin: followed
    site.target = f"{other_site.base}/here"
    assert outcome(verify(loaded, page="moved")) == ("failed", "redirect_off_origin")
    assert other_site.requested == []


@pytest.fixture
def stalling_site() -> Iterator[str]:
    """``/moved`` redirects to ``/here`` on the same origin with a body that claims 1 GiB, sends
    one byte and stalls until the test ends; ``/here`` answers 200."""
    done = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/moved":
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(302)
            self.send_header("Location", "/here")
            self.send_header("Content-Length", str(1 << 30))
            self.end_headers()
            self.wfile.write(b"x")
            self.wfile.flush()
            done.wait(30)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        done.set()
        server.shutdown()
        server.server_close()


def test_a_followed_redirect_never_reads_its_body(tmp_path: Path, stalling_site: str) -> None:
    """A redirect's body is not read: one that is huge or never ends neither fills the memory
    nor holds the verifier (before, urllib read it whole before following)."""
    entry = f'verify = "http"\nurl = "{stalling_site}/{{page}}"\nfollow_redirects = true'
    loaded = policy(tmp_path, entry + "\ntimeout = 2")
    started = time.perf_counter()
    assert outcome(verify(loaded, page="moved")) == ("passed", None)
    assert time.perf_counter() - started < 1.0
