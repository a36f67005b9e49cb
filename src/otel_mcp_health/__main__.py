"""``python -m otel_mcp_health``: the same CLI as ``otel-mcp-health``."""

from otel_mcp_health.cli import main

raise SystemExit(main())
