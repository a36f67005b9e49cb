"""The small mcp 1.x in-process server (the 1.x SDK's FastMCP) that the matrix's in-process table
and the differential run drive: a tool that works and one that fails."""

from __future__ import annotations

from typing import Any


def in_process_server_1x() -> Any:
    """A FastMCP server of the 1.x SDK: ``create_ticket`` answers, ``fail`` answers isError."""
    from mcp.server.fastmcp import FastMCP

    app = FastMCP("in-process")

    @app.tool()
    def create_ticket(title: str, priority: str) -> str:
        return "created"

    @app.tool()
    def fail() -> str:
        raise ValueError("boom")  # FastMCP answers isError

    return app
