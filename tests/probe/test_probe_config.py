"""The probe's configuration loader: what it accepts, and what it refuses without quoting values."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from otel_mcp_health.probe import ProbeConfigError, load_config

GOOD = """
[probe]
listen = "127.0.0.1:9469"
min_interval = 20
max_concurrent = 2

[module.fast]
era = "modern"
timeout = 5
max_pages = 10
call = false

[module.full]

[[target]]
name = "github"
transport = "streamable_http"
url = "https://api.example.com/mcp"
module = "full"
interval = 30
headers = { Authorization = { env = "GH_TOKEN", prefix = "Bearer " }, X-Key = { file = "/run/k" } }
[target.canary]
tool = "search"
arguments = { q = "status" }
verify = "not_required"

[[target]]
name = "local"
transport = "stdio"
command = ["python", "server.py"]
env = { API_TOKEN = { env = "LOCAL_TOKEN" } }
"""


def _problems(write: Callable[[str], Path], text: str) -> list[str]:
    with pytest.raises(ProbeConfigError) as caught:
        load_config(write(text))
    return list(caught.value.problems)


def test_a_full_configuration_is_read(config_file: Callable[[str], Path]) -> None:
    config = load_config(config_file(GOOD))
    assert (config.listen, config.min_interval_s, config.max_concurrent) == (
        "127.0.0.1:9469",
        20,
        2,
    )
    assert list(config.modules) == ["fast", "full"]
    assert config.modules["fast"].era == "modern"
    assert config.modules["full"].timeout_s == 10
    github, local = config.targets["github"], config.targets["local"]
    assert (github.module, github.interval_s, local.module, local.interval_s) == (
        "full",
        30,
        "fast",
        60,
    )
    assert github.headers["Authorization"].env == "GH_TOKEN"
    assert github.headers["X-Key"].file == "/run/k"
    assert github.canary is not None
    assert github.canary.arguments == {"q": "status"}
    assert local.command == ("python", "server.py")
    assert "/run/k" not in repr(config)


SECRET = "sk-live-canary-7d1e"


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        (f'headers = {{ Authorization = "Bearer {SECRET}" }}', "written inline"),
        (f'url = "https://user:{SECRET}@api.example.com/mcp"', "user:password@"),
        (f'url = "https://api.example.com/mcp?api_key={SECRET}"', "query"),
        (f'headers = {{ Authorization = {{ env = "X", value = "{SECRET}" }} }}', "exactly one of"),
        (f'token = "{SECRET}"', "unknown key"),
    ],
)
def test_an_inline_secret_is_refused_without_being_quoted(
    config_file: Callable[[str], Path], fragment: str, expected: str
) -> None:
    url = "" if fragment.startswith("url") else 'url = "https://api.example.com/mcp"\n'
    text = f'[module.m]\n[[target]]\nname = "t"\ntransport = "streamable_http"\n{url}{fragment}\n'
    problems = _problems(config_file, text)
    assert any(expected in p for p in problems), problems
    assert all(SECRET not in p for p in problems)


T = '[[target]]\nname = "t"\ntransport = "stdio"\n'
X = T + 'command = ["x"]\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (X, "[module.NAME]"),
        ("[module.m]\n" + T, "'command': is required"),
        ('[module.m]\n[[target]]\nname = "t"\ntransport = "ftp"\nurl = "x"\n', "expects one of"),
        ("[module.m]\n" + X + 'module = "n"\n', "names no [module.NAME]"),
        ('[module.m]\nera = "newest"\n' + X, "expects one of auto, legacy, modern"),
        ("[module.m]\n" + X.replace('"t"', '"a b"'), "a name of"),
        ("[module.m]\n" + X + X, "repeats"),
        ('[probe]\nlisten = "nowhere"\n[module.m]\n' + X, "HOST:PORT"),
        ("[module.m]\n" + X + 'headers = { A = { env = "B" } }\n', "does not apply to transport"),
        ("not toml = = =", "not valid TOML"),
    ],
)
def test_a_bad_configuration_names_table_and_key(
    config_file: Callable[[str], Path], text: str, expected: str
) -> None:
    problems = _problems(config_file, text)
    assert any(expected in p for p in problems), problems
