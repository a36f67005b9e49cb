"""The pure core: evidence, canonical digest and the three classifiers.

Rule of this package: stdlib and ``rfc8785`` only (plus ``orjson`` when the optional ``[fast]``
extra is present, see ``jcs.py``). No OpenTelemetry, no ``mcp``, no clock reads, no I/O. Times
are passed in as data (integer nanoseconds since the Unix epoch). A test imports every module here
with ``opentelemetry`` and ``mcp`` blocked to keep it that way.
"""
