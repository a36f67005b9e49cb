"""The version matrix: the instrumentation against every supported SDK line (``make matrix``).

The newest cell -- the latest mcp 2.x, wrapt 2.x, OpenTelemetry and FastMCP -- is the project's
own ``.venv``, where ``make test`` runs the full suite. The sessions here are the other cells; each
runs the scenario tables (``tests/matrix``: every transport, failures, processor verdicts,
verifiers and outcomes; the same expected verdicts on every cell) and, on the 2.x cells, the
integration and processor scenario modules too. ``otel_floor`` pins every OpenTelemetry
distribution to the floor ``pyproject.toml`` declares (read from it) and also runs the modules
that fail below that floor. The reference MCP servers always run from the project's ``.venv``
(``MCP_HEALTH_SERVER_PYTHON``), so an old client talks to the same server as the newest one.

Virtual environments are cached outside the checkout (``reuse_venv``; set ``NOX_ENVDIR`` to move
them), so a second run installs nothing new.

``make matrix-newest`` (``nox -t newest``) runs every agent-framework cell again against each
framework's newest release, asked of the index when the cell runs (``*_newest`` sessions, never
part of ``make test``): what a user installing today gets, next to the pinned cells that gate CI
(docs/frameworks.md#re-verifying).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True
nox.options.envdir = os.environ.get(
    "NOX_ENVDIR",
    str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "otel-mcp-health-nox"),
)
nox.options.sessions = [
    "mcp_oldest_1x",
    "mcp_latest_1x",
    "mcp_oldest_2x",
    "wrapt_1x",
    "otel_floor",
    "model_clients",
]

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
#: The scenario tables every cell runs.
TABLES = ["tests/matrix"]
#: The differential (exported spans and metrics against the golden of the line): on the latest
#: mcp 1.x cell; the newest 2.x cell is ``.venv``. The oldest cells export differently.
DIFFERENTIAL = "tests/differential"
#: The runnable examples (``examples/``, run by ``tests/examples``): the cells that install a
#: framework with an example run it there, with the plain ``ClientSession`` one on their mcp line.
EXAMPLES = "tests/examples"
#: The 2.x scenario modules (real servers, every transport and failure, processor, verifiers,
#: outcomes), on the 2.x cells besides the newest.
SCENARIOS_2X = [
    "tests/integration",
    "tests/processor/test_scenarios.py",
    "tests/outcomes",
    "tests/verifiers",
]
#: The LLM clients the 2.x scenarios read the model's requests of (tests/integration/test_answer_*),
#: as the ``test`` extra in pyproject.toml gives them to the newest cell.
SCENARIO_CLIENTS = ["openai >= 2", "anthropic >= 0.60"]
#: What broke below the OpenTelemetry floor (pyproject.toml says how), and what reads or writes
#: the SDK's private span fields, on the floor cell.
OTEL_FLOOR_CHECKS = [
    "tests/processor/test_configurator.py",
    "tests/processor/test_zero_code.py",
    "tests/processor/test_sdkspan.py",
    "tests/processor/test_start_writes.py",
]


#: Prints the versions the cell resolved (its record in the CI log).
_VERSIONS = (
    "from importlib.metadata import version as v, PackageNotFoundError as E\n"
    "for n in ('mcp', 'wrapt', 'fastmcp', 'fastmcp-slim', 'langchain-mcp-adapters', 'langgraph',\n"
    "          'opentelemetry-api', 'opentelemetry-sdk', 'opentelemetry-instrumentation',\n"
    "          'openai-agents', 'pydantic-ai-slim', 'google-adk', 'strands-agents',\n"
    "          'llama-index-tools-mcp', 'smolagents', 'mcpadapt', 'crewai-tools'):\n"
    "    try: print(n, v(n))\n"
    "    except E: pass"
)


def _server_python() -> str:
    """The project's own interpreter (mcp 2.x) that runs the reference servers."""
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv if venv.exists() else sys.executable)


def _otel_floor() -> list[str]:
    """``NAME == FLOOR`` for each OpenTelemetry distribution ``pyproject.toml`` requires (the
    runtime dependencies and the ``testkit`` extra): its ``>=`` bound, so the cell cannot drift."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = []
    for dep in project["dependencies"] + project["optional-dependencies"]["testkit"]:
        found = re.fullmatch(r"(opentelemetry-[a-z-]+) >= ([^,\s]+).*", dep)
        if found:
            pins.append(f"{found[1]} == {found[2]}")
    return pins


def _cell(
    session: nox.Session, pins: list[str], paths: list[str], required: tuple[str, ...] = ()
) -> None:
    """``required``: the framework modules the cell exists for (tests/matrix/conftest.py fails
    the cell if one collects no test)."""
    session.install("-e", ".[testkit]", *pins)
    session.run("python", "-c", _VERSIONS)
    env = {
        "MCP_HEALTH_SERVER_PYTHON": _server_python(),
        "MCP_HEALTH_REQUIRED_FRAMEWORKS": ",".join(required),
    }
    session.run("pytest", "-q", "-p", "no:cacheprovider", *paths, *session.posargs, env=env)


@nox.session(python=PYTHON)
def mcp_oldest_1x(session: nox.Session) -> None:
    """The oldest supported mcp 1.x (its FastMCP of the time)."""
    # mcp 1.19 imports a pydantic internal that pydantic 2.13 removed: the pydantic of its time.
    _cell(session, ["mcp == 1.19.0", "fastmcp == 2.13.3", "pydantic == 2.12.5"], TABLES)


@nox.session(python=PYTHON)
def mcp_latest_1x(session: nox.Session) -> None:
    """The latest mcp 1.x, the latest FastMCP on 1.x and LangChain's agents (langchain-mcp-adapters
    pins mcp < 2; its agent loop is langgraph's)."""
    pins = ["mcp == 1.30.0", "fastmcp == 3.4.11", *LANGCHAIN_PINS]
    _cell(
        session,
        pins,
        [*TABLES, EXAMPLES, DIFFERENTIAL],
        ("test_langchain_default.py", "test_langchain_sse.py", "test_model_request_langchain.py"),
    )


#: The LLM clients too heavy for the newest cell (OpenAI and Anthropic are there): their hooks'
#: tests (``tests/model_requests``), each module required so a broken install fails the cell.
MODEL_CLIENT_PINS = ["google-genai == 3.6.1", "litellm == 1.110.2", "boto3 == 1.44.18"]


@nox.session(python=PYTHON)
def model_clients(session: nox.Session) -> None:
    """The hooks on Google GenAI, LiteLLM and Bedrock (boto3) against the scripted LLM API."""
    session.install("-e", ".[test]", *MODEL_CLIENT_PINS)
    session.run("python", "-c", _VERSIONS)
    required = "test_google_genai.py,test_litellm.py,test_bedrock.py"
    env = {"MCP_HEALTH_SERVER_PYTHON": _server_python(),
           "MCP_HEALTH_REQUIRED_MODEL_CLIENTS": required}  # fmt: skip
    session.run("pytest", "-q", "-p", "no:cacheprovider", "tests/model_requests", env=env)


@nox.session(python=PYTHON)
def mcp_oldest_2x(session: nox.Session) -> None:
    """The oldest mcp 2.x."""
    _cell(session, ["mcp == 2.0.0", "mcp-types == 2.0.0"], TABLES)


@nox.session(python=PYTHON)
def wrapt_1x(session: nox.Session) -> None:
    """The latest mcp 2.x and FastMCP with wrapt 1.x."""
    pins = ["mcp >= 2.3, < 3", "fastmcp >= 4.2", "wrapt == 1.17.3", *SCENARIO_CLIENTS]
    _cell(session, pins, TABLES + SCENARIOS_2X)


@nox.session(python=PYTHON)
def otel_floor(session: nox.Session) -> None:
    """The oldest OpenTelemetry the dependency ranges allow, with the latest mcp 2.x."""
    # fastmcp-slim 4.2.1 and later require opentelemetry-api >= 1.45.2: 4.2.0 is the newest
    # FastMCP that installs beside the floor.
    pins = [
        "mcp >= 2.3, < 3",
        "fastmcp-slim[client,server] == 4.2.0",
        *SCENARIO_CLIENTS,
        *_otel_floor(),
    ]
    _cell(session, pins, TABLES + SCENARIOS_2X + OTEL_FLOOR_CHECKS)


#: The agent-framework cells (docs/frameworks.md): each installs one framework's release the
#: hooks were verified on (its ``==`` pins) and runs its own agent loop against the reference
#: servers (``tests/matrix/test_framework_*``). The mcp line is the framework's own pin. LangChain
#: runs in ``mcp_latest_1x``; ``langchain`` here is its newest cell only.
FRAMEWORK_CELLS: dict[str, list[str]] = {
    "openai_agents": ["openai-agents == 0.24.0"],
    # it supports both SDK lines: the same module on mcp 1.x
    "openai_agents_1x": ["openai-agents == 0.24.0", "mcp < 2"],
    "pydantic_ai": ["pydantic-ai-slim[mcp,openai] == 2.68.0"],
    "google_adk": ["google-adk[mcp] == 2.13.0"],
    "strands": ["strands-agents == 1.62.0"],
    "llama_index": ["llama-index-tools-mcp == 0.6.0", "llama-index-llms-openai == 0.8.3"],
    # mcpadapt imports a name only mcp 1.x has, and smolagents[mcp] does not cap mcp
    "smolagents": ["smolagents[mcp,openai] == 1.26.0", "mcpadapt == 0.1.19", "mcp < 2"],
    "crewai": ["crewai-tools[mcp] == 1.15.30"],
    # frameworks without a hook: only their model's requests tell what it was offered
    # semantic-kernel requires mcp < 2; autogen's MCP tools fail to import on mcp 2.x
    "semantic_kernel": ["semantic-kernel == 1.45.0", "mcp < 2"],
    "autogen": ["autogen-agentchat == 0.7.5", "autogen-ext[mcp,openai] == 0.7.5", "mcp < 2"],
    "haystack": ["haystack-ai == 3.4.1", "mcp-haystack == 2.1.1"],
    "dspy": ["dspy == 3.4.1", "litellm == 1.110.2", "mcp == 2.3.0"],
}
#: The framework modules of a cell when not ``test_framework_{name}.py`` plus, where it exists,
#: ``test_model_request_{name}.py`` (the framework through its real model client) and the
#: hook-shape checks (``test_framework_shapes.py``, for hooked frameworks).
CELL_MODULES = {
    "langchain": ["test_langchain_default.py", "test_langchain_sse.py"],
    "pydantic_ai": [
        "test_framework_pydantic_ai.py",
        "test_framework_pydantic_ai_wrapped.py",
        "test_model_request_pydantic_ai.py",
    ],
    "semantic_kernel": ["test_model_request_semantic_kernel.py"],
    "autogen": ["test_model_request_autogen.py"],
    "haystack": ["test_model_request_haystack.py"],
    "dspy": ["test_model_request_dspy.py"],
}
#: Frameworks with install hooks (their cells run the hook-shape checks too).
HOOKED = {"openai_agents", "pydantic_ai", "google_adk", "strands", "llama_index", "smolagents",
          "crewai", "langchain"}  # fmt: skip
#: LangChain's pins as ``mcp_latest_1x`` has them (its newest cell swaps the ``==`` ones).
LANGCHAIN_PINS = [
    "langchain-mcp-adapters == 0.3.2",
    "langgraph == 1.2.24",
    "langchain-openai == 1.8.1",
]
EXAMPLE_CELLS = {"pydantic_ai", "openai_agents"}
#: ``name[extras] == version``: a framework pin a newest cell swaps for the newest release.
_PINNED = re.compile(r"([A-Za-z0-9._-]+)(\[[^\]]*\])? == \S+")


def newest_release(distribution: str) -> str:
    """The newest release of ``distribution`` the index offers this Python (what ``pip install``
    picks unpinned, pre-releases left out), asked when the cell runs."""
    done = subprocess.run(  # noqa: S603 - pip, with a distribution name of this file
        [sys.executable, "-m", "pip", "index", "versions", "--json", distribution],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip index versions {distribution}: {done.stderr[-500:]}")
    return str(json.loads(done.stdout)["latest"])


def newest_pins(pins: list[str]) -> list[str]:
    """``pins`` with every framework ``==`` pin moved to that framework's newest release; the
    other requirements (a cell's SDK line, ``mcp < 2``) stay."""

    def swap(pin: str) -> str:
        found = _PINNED.fullmatch(pin)
        if found is None:
            return pin
        return f"{found[1]}{found[2] or ''} == {newest_release(found[1])}"

    return [swap(pin) for pin in pins]


def _framework_cell(name: str, pins: list[str], *, newest: bool) -> None:
    base = name.removesuffix("_1x")
    own = CELL_MODULES.get(base) or [f"test_framework_{base}.py"]
    if (ROOT / "tests" / "matrix" / f"test_model_request_{base}.py").exists():
        own = list(dict.fromkeys([*own, f"test_model_request_{base}.py"]))
    # a hooked framework's cell also checks its hooks' shapes on the real classes
    shapes = ["test_framework_shapes.py"] if base in HOOKED else []
    modules = [f"tests/matrix/{m}" for m in [*own, *shapes]]
    paths = [*modules, EXAMPLES] if name in EXAMPLE_CELLS else modules

    def cell(session: nox.Session) -> None:
        chosen = newest_pins(pins) if newest else pins
        _cell(session, chosen, paths, tuple(Path(m).name for m in modules))

    which = "its newest release (asked of the index)" if newest else "its verified release"
    cell.__doc__ = f"The {name.replace('_', '-')} agent loop on {which}."
    session_name = f"framework_{name}_newest" if newest else f"framework_{name}"
    tags = ["newest"] if newest else ["frameworks"]
    nox.session(python=PYTHON, name=session_name, tags=tags, default=not newest)(cell)


for _name, _pins in FRAMEWORK_CELLS.items():
    _framework_cell(_name, _pins, newest=False)
nox.options.sessions += [f"framework_{name}" for name in FRAMEWORK_CELLS]
for _name, _pins in {"langchain": LANGCHAIN_PINS, **FRAMEWORK_CELLS}.items():
    _framework_cell(_name, _pins, newest=True)


@nox.session(python=PYTHON)
def newest(session: nox.Session) -> None:
    """The newest cell in a clean venv (``make test`` runs it in ``.venv``): the full suite."""
    session.install("-e", ".[test]")
    session.run("pytest", "-q", "-m", "not pipeline", *session.posargs)
