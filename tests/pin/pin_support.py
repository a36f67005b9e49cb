"""Helpers of the ``pin`` suite: run ``otel-mcp-health pin`` in this process, build sources."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from otel_mcp_health.cli import main
from tests.check.check_support import Checked
from tests.pin.pin_server import CANARY_DESCRIPTION, CANARY_SCHEMA, catalog

HERE = Path(__file__).resolve().parent
SERVER = HERE / "pin_server.py"
CANARIES = (CANARY_DESCRIPTION, CANARY_SCHEMA)


def pin(*argv: str | Path) -> Checked:
    """Run ``otel-mcp-health pin ARGV`` in this process (the real CLI entry point)."""
    out, err = io.StringIO(), io.StringIO()
    code = main(["pin", *map(str, argv)], out=out, err=err)
    return Checked(code, out.getvalue(), err.getvalue())


def live(variant: str) -> list[str]:
    """The command line of our stdio server serving ``variant``."""
    return ["--", sys.executable, str(SERVER), variant]


def tools_file(tmp: Path, variant: str, shape: str = "result") -> Path:
    """``variant``'s catalog as a tools/list file: a result object, a bare array, or JSON-RPC."""
    tools: Any = catalog(variant)
    document = {
        "result": {"tools": tools},
        "array": tools,
        "rpc": {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}},
    }[shape]
    path = tmp / f"{variant}-{shape}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def manifest(tools: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """An MCPB manifest (0.3) stating ``tools``."""
    return {
        "manifest_version": "0.3",
        "name": "pin-bundle",
        "version": "1.0.0",
        "description": "a bundle",
        "author": {"name": "tests"},
        "server": {"type": "python", "entry_point": "server/main.py"},
        "tools": tools,
        **extra,
    }


def bundle(tmp: Path, document: dict[str, Any], *, name: str = "b.mcpb") -> Path:
    """A ``.mcpb`` zip holding ``document`` as its root ``manifest.json`` and a server file."""
    path = tmp / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(document))
        archive.writestr("server/main.py", "print('hello')\n")
    return path


def no_canary(*texts: str) -> None:
    """No description or schema text in any of ``texts``."""
    for text in texts:
        for canary in CANARIES:
            assert canary not in text
