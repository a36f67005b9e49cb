"""The one error of ``otel-mcp-health pin``: a usage or input problem (exit code 2).

Its message names the option or file and what is wrong with it, never a description, schema or
header value: the command's output is meant to be pasted into a pull request.
"""

from __future__ import annotations


class PinInputError(Exception):
    """A command line, source or pin file that ``pin`` cannot use (exit code 2); nothing is
    written."""
