"""Run one example agent zero-code and print the verdicts its exported spans carry.

    python examples/run.py NAME [--python PYTHON]      # make example NAME=...

The example runs under ``opentelemetry-instrument`` with the ``mcp_health`` configurator, the
outcome policy ``examples/outcomes.toml`` and the console span exporter, exactly as a user would
run their agent (only the exporter differs: ``--otlp`` also sends the same spans over OTLP/HTTP to
``OTEL_EXPORTER_OTLP_ENDPOINT``, default the bundled collector's 127.0.0.1:4318). The agent's own
output is passed through; the spans the console exporter printed are read back and their
verdicts shown as a table, which is what a backend shows for ``mcp_health.verdict``.

A framework example needs its framework: by default it runs in the project's nox venv of that
framework (``noxfile.py``, created with ``nox -s SESSION --install-only`` when missing), or in
``--python``. The demo's MCP server runs under ``DEMO_SERVER_PYTHON`` (default: this interpreter,
which must have mcp 2.x). Exit code: the example's own, ``1`` when no verdict was exported,
``2`` when the example's framework is neither here nor creatable (no nox).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: Each example: (the nox session whose venv has its framework, the module it needs).
EXAMPLES: dict[str, tuple[str | None, str]] = {
    "plain_session": (None, "mcp"),
    "langchain_agent": ("mcp_latest_1x", "langchain_mcp_adapters"),
    "pydantic_ai_agent": ("framework_pydantic_ai", "pydantic_ai"),
    "openai_agents_agent": ("framework_openai_agents", "agents"),
}
ZERO_CODE = {
    "OTEL_PYTHON_CONFIGURATOR": "mcp_health",
    "OTEL_TRACES_EXPORTER": "console",
    "OTEL_METRICS_EXPORTER": "none",
    "OTEL_LOGS_EXPORTER": "none",
    "OTEL_INSTRUMENTATION_MCP_HEALTH_OUTCOMES": str(HERE / "outcomes.toml"),
}
COLUMNS = ("span", "verdict", "reason", "next action")
KEYS = ("mcp_health.verdict", "mcp_health.reason", "mcp_health.next_action")


def _nox_python(name: str, session: str, module: str) -> Path:
    """The interpreter of ``session``'s venv, created (installed only) when it is missing."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    envdir = Path(os.environ.get("NOX_ENVDIR", cache / "otel-mcp-health-nox"))
    python = envdir / session / "bin" / "python"
    if python.exists():
        return python
    if importlib.util.find_spec("nox") is None:
        # e.g. a venv with only the wheel installed (README.md#install): say what to do instead
        print(
            f"run.py: {name} needs the module {module!r}, which this interpreter lacks, and nox, "
            f"which creates the {session} venv, is missing too: run it with make example "
            f"NAME={name}, or pass --python an interpreter that has it",
            file=sys.stderr,
        )
        raise SystemExit(2)
    print(f"run.py: creating the {session} venv (nox, once)", file=sys.stderr)
    nox = [sys.executable, "-m", "nox", "-s", session, "--install-only"]
    subprocess.run(nox, cwd=ROOT, check=True)
    return python


def _python(name: str, chosen: str | None) -> Path:
    if chosen is not None:
        return Path(chosen)
    session, module = EXAMPLES[name]
    if session is None or importlib.util.find_spec(module) is not None:
        return Path(sys.executable)
    return _nox_python(name, session, module)


def _spans(stdout: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The console exporter's span objects (each a JSON block from ``{`` to ``}`` at column 0)
    and the agent's own lines, in order."""
    spans: list[dict[str, Any]] = []
    own: list[str] = []
    block: list[str] | None = None
    for line in stdout.splitlines():
        if block is None and line == "{":
            block = [line]
        elif block is not None:
            block.append(line)
            if line == "}":
                spans.append(json.loads("\n".join(block)))
                block = None
        else:
            own.append(line)
    return spans, own


def _table(spans: list[dict[str, Any]]) -> list[str]:
    judged = [s for s in spans if KEYS[0] in s.get("attributes", {})]
    judged.sort(key=lambda s: str(s.get("start_time")))
    rows = [(s["name"], *(str(s["attributes"].get(k)) for k in KEYS)) for s in judged]
    widths = [max(len(r[i]) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [COLUMNS, *rows]
    ]


#: ``--otlp``: the same spans also go over OTLP/HTTP (the bundled collector listens on 4318).
OTLP = {
    "OTEL_TRACES_EXPORTER": "console,otlp",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    "OTEL_EXPORTER_OTLP_TIMEOUT": "2",
}


def run(name: str, python: Path, *, otlp: bool = False) -> int:
    """Run example ``name`` with ``python`` zero-code; print its output and the verdicts."""
    instrument = python.parent / "opentelemetry-instrument"
    env = {**os.environ, **ZERO_CODE, "OTEL_SERVICE_NAME": f"example-{name.replace('_', '-')}"}
    if otlp:
        env = {**env, **OTLP}
        env.setdefault("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    env.setdefault("DEMO_SERVER_PYTHON", sys.executable)
    print(f"example {name}: opentelemetry-instrument {python} examples/{name}.py (zero-code)")
    command = [str(instrument), str(python), str(HERE / f"{name}.py")]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    spans, own = _spans(proc.stdout)
    print("\n".join(own))
    sys.stderr.write(proc.stderr)
    lines = _table(spans)
    print("\nverdicts on the exported spans (mcp_health.verdict, what your backend receives):")
    print("\n".join(lines))
    if proc.returncode:
        return proc.returncode
    return 0 if len(lines) > 1 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(EXAMPLES))
    parser.add_argument("--python", help="the interpreter that has the example's framework")
    parser.add_argument(
        "--otlp", action="store_true", help="also export over OTLP/HTTP (OTEL_EXPORTER_OTLP_*)"
    )
    args = parser.parse_args()
    return run(args.name, _python(args.name, args.python), otlp=args.otlp)


if __name__ == "__main__":
    raise SystemExit(main())
