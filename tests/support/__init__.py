"""Helpers shared by several suites, imported as ``tests.support.<module>``.

Suite-local helpers stay beside their tests and import as ``tests.<suite>.<module>`` (for
example ``tests.integration.mcp_health_servers``). Programs that run in their own process are
started by path and import only the modules beside them (Python puts a script's own directory
first on ``sys.path``), or are started as ``python -m tests.<suite>.<program>`` from the
repository root; no module here edits ``sys.path``.
"""
