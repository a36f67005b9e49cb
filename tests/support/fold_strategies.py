"""Hypothesis strategies of the fold's inputs: a request's seed, its facts and its transport."""

from __future__ import annotations

from hypothesis import strategies as st

from otel_mcp_health.core import facts as F
from otel_mcp_health.core.evidence import Page
from otel_mcp_health.core.observations import Observed
from otel_mcp_health.core.vocabulary import AuthError, TransportOutcome

_TEXT = st.text(max_size=6)
_OPT_TEXT = st.none() | _TEXT
_OPT_BOOL = st.none() | st.booleans()
_OUTCOMES = st.sampled_from([o.value for o in TransportOutcome])
FACTS = st.one_of(
    st.builds(
        F.HttpResponse,
        st.integers(100, 599),
        st.booleans(),
        st.none() | st.sampled_from(AuthError),
        st.lists(_TEXT.filter(lambda t: t.strip() == t and " " not in t and t), max_size=2).map(
            tuple
        ),
        _OPT_TEXT,
    ),
    st.builds(
        F.HttpFailure,
        _TEXT,
        st.none() | st.integers(400, 599),
        st.none() | _OUTCOMES,
        _OPT_BOOL,
        st.booleans(),
    ),
    st.builds(F.SdkEntered, st.booleans()),
    st.just(F.WriteStarted()),
    st.builds(F.SdkExit, st.none() | st.sampled_from(F.Failure)),
    st.builds(F.Result, _OPT_BOOL),
    st.builds(F.Raised, st.sampled_from(F.Failure), _TEXT, st.integers(-33000, 33000)),
    st.builds(F.OutputSchema, st.booleans()),
    st.builds(
        F.HandshakeResult,
        _OPT_TEXT,
        _OPT_TEXT,
        st.booleans(),
        st.booleans(),
        _OPT_TEXT,
        _OPT_TEXT,
        _OPT_TEXT,
    ),
    st.builds(
        F.PageResult,
        st.builds(Page, cursor=_OPT_TEXT, next_cursor=_OPT_TEXT),
        st.integers(0, 9),
        _OPT_TEXT,
        _OPT_TEXT,
        st.none() | st.integers(0, 9),
    ),
)
SEEDS = st.builds(
    Observed,
    method=st.sampled_from(["tools/call", "tools/list", "initialize", "server/discover"]),
    tool_name=_OPT_TEXT,
    read_only=_OPT_BOOL,
    request_id=_OPT_TEXT,
)
NETWORKS = st.sampled_from([None, "pipe", "tcp"])
