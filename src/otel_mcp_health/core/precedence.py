"""The fold's precedence table (docs/architecture.md#precedence): whose value wins.

The precedence table is data (after h11's state tables): a row per *reading* of a fact, a column
per observed field, and in each cell the rule that decides whether the reading's value replaces
what an earlier fact wrote (docs/architecture.md#precedence):

* ``SET``: an observation of this very thing; the latest one wins.
* ``KEEP``: an inference; written only where nothing was recorded yet (``None``).
* ``OVER_OK``: a transport failure; replaces ``ok`` or nothing, never another failure.
* ``NEXT``: the second step of a sequence; written only over ``False`` (the write is visible
  only once the SDK entered its span block, which sets ``write_started`` to ``False``).

Readings in :data:`FIRST_CLASSIFICATION` (an exception the request raised) apply only while the
request's ``error_type`` is unset: several nested layers see the same exception, and the first
classification wins. What a fact *means* may depend on what came before (a cancellation after
the answer is no silence); the reading says that, the table says who wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType
from typing import Final


class Overwrite(Enum):
    """Whether a reading's value replaces what is recorded (module docstring)."""

    SET = "set"
    KEEP = "keep"
    OVER_OK = "over_ok"
    NEXT = "next"


#: The cells of the table, by the names the module docstring gives them.
SET, KEEP, OVER_OK, NEXT = Overwrite.SET, Overwrite.KEEP, Overwrite.OVER_OK, Overwrite.NEXT
#: The column of the exception type a reading records.
EXCEPTION_TYPE: Final = "exception_type"
_EXC = EXCEPTION_TYPE
#: reading -> {field: rule}. The columns a row leaves out it never writes.
PRECEDENCE: Final[Mapping[str, Mapping[str, Overwrite]]] = MappingProxyType(
    {
        "http_response": {
            "http_status": SET,
            "http_json_body": SET,
            "transport_outcome": SET,
            "written": SET,
            "auth_error": SET,
            "auth_scope": SET,
            "session_id": SET,
        },
        "http_rejected": {
            "answered": SET,
            "error_type": SET,
            "transport_outcome": OVER_OK,
            _EXC: SET,
        },
        "oauth_failed": {
            "auth_error": SET,
            "error_type": SET,
            "transport_outcome": SET,
            "written": SET,
            _EXC: SET,
        },
        "transport_failed": {
            "transport_outcome": SET,
            "error_type": KEEP,
            "written": SET,
            _EXC: SET,
        },
        "sdk_entered": {"sdk_entered": SET, "write_started": KEEP},
        "write_started": {"write_started": NEXT},
        "sdk_exit": {"written": KEEP},
        "sdk_exit_closed": {"written": SET},
        "result": {
            "answered": SET,
            "written": KEEP,
            "transport_outcome": KEEP,
            "is_error": SET,
            "error_type": SET,
        },
        "output_schema": {"output_schema_valid": SET},
        "outcome": {"outcome": SET},
        "handshake": {"handshake": SET},
        "page": {"page": SET},
        # an exception, first classification only
        "timeout": {
            _EXC: SET,
            "timed_out": SET,
            "written": KEEP,
            "transport_outcome": KEEP,
            "error_type": SET,
        },
        "closed": {_EXC: SET, "written": KEEP, "transport_outcome": OVER_OK, "error_type": SET},
        "http_collapsed": {
            _EXC: SET,
            "answered": SET,
            "error_type": SET,
            "transport_outcome": OVER_OK,
        },
        "rpc_error": {
            _EXC: SET,
            "answered": SET,
            "transport_outcome": KEEP,
            "written": KEEP,
            "error_code": SET,
            "error_type": SET,
        },
        "cancelled": {
            _EXC: SET,
            "cancelled": SET,
            "error_type": SET,
            "written": SET,
            "timed_out": SET,
            "transport_outcome": KEEP,
        },
        "invalid_result": {_EXC: SET, "result_valid": SET, "error_type": SET},
        "raised": {_EXC: SET, "error_type": SET},
    }
)
FIRST_CLASSIFICATION: Final = frozenset(
    {"timeout", "closed", "http_collapsed", "rpc_error", "cancelled", "invalid_result", "raised"}
)
