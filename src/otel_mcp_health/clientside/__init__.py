"""The client side the commands share: an instrumented ``mcp`` client run against one server.

``check``, ``pin``, ``probe`` and ``demo`` each build the pipeline an instrumented agent has and
read the product's verdicts back from the judged spans; this package is that common ground, one
module per concern: :mod:`.command_line` (what a run was asked to do, validated: usage errors,
the bounds, the verifier shorthands, a missing MCP SDK), :mod:`.pipeline` (the providers, the
product's processor, the instrumentation), :mod:`.driver` (handshake, discovery, watch, call)
and :mod:`.span_report` (the report read from the judged spans). Importing the package imports
nothing optional; :mod:`.driver` needs the MCP SDK.
"""
