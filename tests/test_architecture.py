"""The pure core stays pure: stdlib + rfc8785 (+ optional orjson), no OpenTelemetry, no mcp, no
clock, no I/O."""

from __future__ import annotations

import ast
import subprocess
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from tests.support.review import ModuleSizeReview

CORE = Path(__file__).resolve().parents[1] / "src" / "otel_mcp_health" / "core"
MODULES = sorted(p.stem for p in CORE.glob("*.py") if p.stem != "__init__")
ALLOWED_THIRD_PARTY = {"rfc8785", "orjson"}  # orjson: the optional [fast] extra (core/jcs.py)
FORBIDDEN_CALLS = {
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "perf_counter"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("date", "today"),
}
FORBIDDEN_NAMES = {"open", "input", "print"}
FORBIDDEN_MODULES = {
    "os",
    "io",
    "socket",
    "subprocess",
    "pathlib",
    "random",
    "secrets",
    "asyncio",
    "logging",
    "time",
}  # a threading.Lock is neither clock nor I/O


def test_core_imports_with_opentelemetry_and_mcp_blocked() -> None:
    imports = "; ".join(f"import otel_mcp_health.core.{m}" for m in MODULES)
    code = (
        "import sys; sys.modules['opentelemetry'] = None; sys.modules['mcp'] = None; "
        "sys.modules['wrapt'] = None; sys.modules['orjson'] = None; " + imports
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("module", MODULES)
def test_core_module_has_no_clock_reads_and_no_io(module: str) -> None:
    tree = ast.parse((CORE / f"{module}.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for name in names:
                top = name.split(".")[0]
                assert top not in FORBIDDEN_MODULES, f"{module} imports {name}"
                if top not in sys.stdlib_module_names and top != "otel_mcp_health":
                    assert top in ALLOWED_THIRD_PARTY, f"{module} imports {name}"
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                assert (func.value.id, func.attr) not in FORBIDDEN_CALLS, f"{module} reads a clock"
            if isinstance(func, ast.Name):
                assert func.id not in FORBIDDEN_NAMES, f"{module} calls {func.id}()"


#: Short functions, files of one concern: the limits hold for every module of the package, the
#: pure core and the shells alike (a function's length runs from its ``def`` to its last line,
#: decorators excluded). A module past ``REVIEW_MODULE_LINES`` is a review signal, reported as a
#: ``ModuleSizeReview`` warning in the run's warnings summary: a prompt to split it by concept,
#: never to squeeze it under the line. Past ``MAX_MODULE_LINES`` it fails. The test's own mark
#: keeps the warning a warning even under ``-W error``.
PACKAGE = Path(__file__).parents[1] / "src" / "otel_mcp_health"
REVIEW_MODULE_LINES = 400
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 40
PACKAGE_MODULES = sorted(PACKAGE.rglob("*.py"))


def test_the_walk_reaches_every_subpackage() -> None:
    measured = {path.parent.relative_to(PACKAGE).as_posix() for path in PACKAGE_MODULES}
    assert {".", "core", "instrumentation", "_codec", "check", "demo", "verifiers"} <= measured


@pytest.mark.filterwarnings("always::tests.support.review.ModuleSizeReview")
@pytest.mark.parametrize(
    "path", PACKAGE_MODULES, ids=[p.relative_to(PACKAGE).as_posix() for p in PACKAGE_MODULES]
)
def test_functions_and_modules_stay_small(path: Path) -> None:
    name = path.relative_to(PACKAGE).as_posix()
    source = path.read_text(encoding="utf-8")
    lines = len(source.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{name} has {lines} lines (at most {MAX_MODULE_LINES})"
    if lines > REVIEW_MODULE_LINES:
        warnings.warn(
            f"{name} has {lines} lines (review past {REVIEW_MODULE_LINES}: split by concept)",
            ModuleSizeReview,
            stacklevel=1,
        )
    long_functions = [
        f"{node.name} (line {node.lineno}) has {length} lines"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > MAX_FUNCTION_LINES
    ]
    assert not long_functions, f"{name}: {'; '.join(long_functions)} (at most {MAX_FUNCTION_LINES})"


#: The floors of the package (docs/architecture.md): each room may import only the rooms named
#: here (and itself). ``instrumentation`` and ``processor`` are siblings that never import each
#: other; ``_codec`` sits under both and imports neither; ``core`` imports nothing of ours.
#: ``frameworks`` and ``instrumentation`` call each other (the instrumentor registers the
#: framework hooks, which report installs through it): the one arrow that climbs back up.
#: ``__init__`` is the package's public face (a name imported from ``otel_mcp_health`` that is
#: not a room, or ``import otel_mcp_health``); the commands sit above it, on ``clientside``, and
#: ``cli`` above the commands. Every module of the package belongs to a room listed here.
LAYERS: dict[str, set[str]] = {
    "core": set(),
    "attributes": set(),
    "version": set(),
    "package": set(),
    "environment_variables": set(),
    "_pipes": set(),
    "_hook_shape": set(),
    "_sdkspan": set(),
    "_files": {"core"},
    "_codec": {"core", "attributes"},
    "_options": {"core", "environment_variables"},
    "verifiers": {"core", "environment_variables", "_files"},
    "processor": {"core", "attributes", "_codec", "_options", "_sdkspan", "version"},
    "instrumentation": {
        "core",
        "attributes",
        "_codec",
        "_options",
        "_files",
        "_hook_shape",
        "_sdkspan",
        "verifiers",
        "frameworks",
        "model_requests",
        "package",
        "version",
    },
    "frameworks": {"instrumentation", "core", "attributes", "_hook_shape"},
    "model_requests": {"instrumentation", "frameworks", "core", "attributes", "_hook_shape"},
    "configurator": {"processor"},
    "__init__": {"instrumentation", "processor", "verifiers", "version"},
    "clientside": {"__init__", "core", "attributes"},
    "check": {"__init__", "clientside", "core"},
    "pin": {"clientside", "core", "attributes", "_files"},
    "probe": {"__init__", "clientside", "core", "attributes", "_files"},
    "demo": {"__init__", "clientside", "core", "attributes", "instrumentation", "verifiers"},
    "cli": {"check", "pin", "probe", "demo", "verifiers", "core", "_files", "_pipes", "version"},
    "__main__": {"cli"},
}


def _room(path: Path) -> str:
    """The room a module lives in: its subpackage, or its own name at the package root."""
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _source(path: Path, planted: Mapping[Path, str] | None) -> str:
    """A module's source: the planted text when a test plants one, else the file's."""
    if planted is not None and path in planted:
        return planted[path]
    return path.read_text(encoding="utf-8")


def _rooms_imported(path: Path, planted: Mapping[Path, str] | None = None) -> set[str]:
    """Every room of ours the module imports, lazily or not (``from otel_mcp_health import x``
    names room ``x`` when ``x`` is one, else the package's ``__init__``)."""
    rooms: set[str] = set()
    for node in ast.walk(ast.parse(_source(path, planted))):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
            if node.module == "otel_mcp_health":
                modules = [f"otel_mcp_health.{a.name}" for a in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] != "otel_mcp_health":
                continue
            is_room = len(parts) > 1 and (
                (PACKAGE / parts[1]).is_dir() or (PACKAGE / f"{parts[1]}.py").is_file()
            )
            rooms.add(parts[1] if is_room else "__init__")
    return rooms


def _unlisted_rooms(paths: Iterable[Path]) -> set[str]:
    """The rooms of ``paths`` that ``LAYERS`` does not list."""
    return {_room(p) for p in paths} - set(LAYERS)


def _outside_floors(
    room: str, paths: Iterable[Path], planted: Mapping[Path, str] | None = None
) -> dict[str, list[str]]:
    """Per module of ``room``, the rooms it imports beyond its floors."""
    return {
        p.relative_to(PACKAGE).as_posix(): sorted(bad)
        for p in paths
        if (bad := _rooms_imported(p, planted) - LAYERS[room] - {room})
    }


def test_every_module_belongs_to_a_room_of_layers() -> None:
    """A new module, subpackage or root module fails here until ``LAYERS`` gives it its floors."""
    assert not _unlisted_rooms(PACKAGE_MODULES), "rooms missing from LAYERS"


def test_a_module_in_an_unlisted_room_is_caught() -> None:
    planted = [PACKAGE / "newroom" / "__init__.py", PACKAGE / "newmodule.py"]
    assert _unlisted_rooms([*PACKAGE_MODULES, *planted]) == {"newroom", "newmodule"}


@pytest.mark.parametrize("room", sorted(LAYERS))
def test_each_room_imports_only_the_floors_below_it(room: str) -> None:
    """A module's imports stay inside the rooms its floor may reach; the names of the offending
    modules and rooms are in the failure."""
    modules = [p for p in PACKAGE_MODULES if _room(p) == room]
    assert modules, f"room {room} has no module: update LAYERS"
    climbing = _outside_floors(room, modules)
    assert not climbing, f"{room} imports outside its floors: {climbing}"


@pytest.mark.parametrize(
    ("module", "line", "climbs_to"),
    [
        ("processor/_planted.py", "from otel_mcp_health.check import run", "check"),
        ("core/_planted.py", "import otel_mcp_health", "__init__"),
        ("clientside/_planted.py", "from otel_mcp_health.probe import run", "probe"),
        ("instrumentation/_planted.py", "from otel_mcp_health import processor", "processor"),
    ],
)
def test_a_planted_upward_import_is_caught(module: str, line: str, climbs_to: str) -> None:
    path = PACKAGE / module
    found = _outside_floors(_room(path), [path], {path: f"def f():\n    {line}\n"})
    assert found == {module: [climbs_to]}


def _module_name(path: Path) -> list[str]:
    """The dotted name of the module at ``path``, as parts (a package is its ``__init__``)."""
    parts = [PACKAGE.name, *path.relative_to(PACKAGE).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _is_package(parts: Sequence[str]) -> bool:
    return PACKAGE.parent.joinpath(*parts).is_dir()


def _private_imports(path: Path, planted: Mapping[Path, str] | None = None) -> list[str]:
    """Every import, lazy or not, relative or not, by statement or by a call with a constant
    name (:func:`_imported_by_call`), of a private module or name (``_x``) that belongs to
    another package than the module's own (or one of its parents): a package's ``_x`` is its own
    to change. A private name of a module belongs to that module's package."""
    me = _module_name(path)
    home = me if path.name == "__init__.py" else me[:-1]
    found = []
    for node in ast.walk(ast.parse(_source(path, planted))):
        if isinstance(node, ast.Import):
            targets = [a.name.split(".") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = home[: len(home) - node.level + 1] if node.level else []
            module = [*base, *(node.module.split(".") if node.module else [])]
            targets = [[*module, a.name] for a in node.names]
        elif (name := _imported_by_call(node)) is not None:
            targets = [name.split(".")]
        else:
            continue
        for target in targets:
            if target[0] != PACKAGE.name:
                continue
            for i, part in enumerate(target[1:], start=1):
                owner = target[:i] if _is_package(target[:i]) else target[: i - 1]
                if part.startswith("_") and not part.startswith("__") and me[: len(owner)] != owner:
                    found.append(".".join(target))
                    break
    return found


_IMPORT_FUNCTIONS = frozenset({"__import__", "import_module"})


def _imported_by_call(node: ast.AST) -> str | None:
    """The module a call imports by name, ``importlib.import_module("a.b")`` or
    ``__import__("a.b")`` (either spelled bare or as an attribute), when the name is a constant
    absolute one; a computed or relative name is not read."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = node.args[0]
    if called not in _IMPORT_FUNCTIONS or not isinstance(first, ast.Constant):
        return None
    name = first.value
    return name if isinstance(name, str) and not name.startswith(".") else None


#: Private imports across packages that stand until the module they reach gets a public name,
#: each with where it is: an entry that no longer occurs fails, so the list only shrinks.
KNOWN_PRIVATE_IMPORTS: dict[str, list[str]] = {}


def test_no_module_imports_a_private_module_of_another_package() -> None:
    found = {
        p.relative_to(PACKAGE).as_posix(): imports
        for p in PACKAGE_MODULES
        if (imports := _private_imports(p))
    }
    assert found == KNOWN_PRIVATE_IMPORTS


@pytest.mark.parametrize(
    ("module", "line", "caught"),
    [
        (
            "probe/_planted.py",
            "from otel_mcp_health.clientside.pipeline import _resource",
            ["otel_mcp_health.clientside.pipeline._resource"],
        ),
        (
            "probe/_planted.py",
            "from otel_mcp_health.check import _words",
            ["otel_mcp_health.check._words"],
        ),
        (
            "pin/_planted.py",
            "import otel_mcp_health.check._words",
            ["otel_mcp_health.check._words"],
        ),
        (
            "demo/_planted.py",
            "from ..check._words import render",
            ["otel_mcp_health.check._words.render"],
        ),
        (
            "probe/_planted.py",
            'importlib.import_module("otel_mcp_health.check._words")',
            ["otel_mcp_health.check._words"],
        ),
        (
            "probe/_planted.py",
            'import_module("otel_mcp_health.clientside.pipeline._resource")',
            ["otel_mcp_health.clientside.pipeline._resource"],
        ),
        (
            "pin/_planted.py",
            '__import__("otel_mcp_health.check._words")',
            ["otel_mcp_health.check._words"],
        ),
        ("probe/_planted.py", 'importlib.import_module("otel_mcp_health.probe._render")', []),
        ("probe/_planted.py", 'importlib.import_module("._words", "otel_mcp_health.check")', []),
        ("probe/_planted.py", "from otel_mcp_health.probe import _render", []),
        ("probe/_planted.py", "from otel_mcp_health._files import read_pin_text", []),
        ("probe/_planted.py", "from otel_mcp_health.clientside import driver", []),
    ],
)
def test_a_planted_private_import_is_caught(module: str, line: str, caught: list[str]) -> None:
    """Caught across packages, lazily too, and by ``import_module`` / ``__import__`` with a
    constant absolute name; a package's own private modules and the root package's are its
    own."""
    path = PACKAGE / module
    assert _private_imports(path, {path: f"def f():\n    {line}\n"}) == caught


def test_instrumentation_and_processor_never_import_each_other() -> None:
    """The two halves meet only in the span attributes (``_codec``): named apart from the table
    so that widening ``LAYERS`` by mistake cannot silence it."""
    assert "processor" not in LAYERS["instrumentation"]
    assert "instrumentation" not in LAYERS["processor"]
    assert not {"processor", "instrumentation"} & LAYERS["_codec"]


#: The SDK's private span fields are read in one module, the one to revisit when the SDK changes
#: (docs/architecture.md, "The path of a span" step 5). The names below are always covered; the
#: rule adds every private field of the SDK objects a finished span is made of, read from live
#: objects so that a field a new SDK adds is covered too.
SDKSPAN = PACKAGE / "_sdkspan.py"
SDK_SPAN_FIELDS = frozenset(
    {
        "_instrumentation_scope",
        "_kind",
        "_attributes",
        "_context",
        "_immutable",
        "_dict",
        "_events",
        "_status",
        "_links",
        "_dq",
    }
)
_ATTRIBUTE_BUILTINS = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def _sdk_private_fields() -> frozenset[str]:
    """The private fields of an SDK span, its attributes, its event list, an event, a link and a
    status."""
    from opentelemetry.sdk.trace import Event, TracerProvider
    from opentelemetry.trace import Link, Status

    provider = TracerProvider(shutdown_on_exit=False)
    span = provider.get_tracer(__name__).start_span("probe", attributes={"a": 1})
    span.add_event("event")
    span.end()
    fields = vars(span)
    parts = (span, fields["_attributes"], fields["_events"], Event("e"), Link(span.context))
    names = set(SDK_SPAN_FIELDS)
    for part in (*parts, Status()):
        names.update(getattr(part, "__dict__", ()))
        for cls in type(part).__mro__:
            names.update(getattr(cls, "__slots__", ()))
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__"))


def _sdk_field_reads(path: Path, fields: frozenset[str]) -> list[str]:
    """Every ``x._field`` (or ``getattr(x, "_field")``, ``setattr``...) of an SDK field in the
    module, except ``self._field`` where the module assigns ``self._field`` (its own object's)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name, target = node.attr, node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _ATTRIBUTE_BUILTINS
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
        ):
            name, target = node.args[1].value, node.args[0]
        else:
            continue
        if name not in fields or (
            isinstance(target, ast.Name) and target.id == "self" and name in own
        ):
            continue
        found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_sdk_private_span_fields_are_read_in_sdkspan_only() -> None:
    """No module but ``_sdkspan.py`` reads or writes a private field of the SDK's span
    objects (``span._kind``, ``attributes._dict``...); the offending lines are in the failure."""
    fields = _sdk_private_fields()
    assert _sdk_field_reads(SDKSPAN, fields), "the rule no longer sees _sdkspan's own reads"
    outside = {
        p.relative_to(PACKAGE).as_posix(): reads
        for p in PACKAGE_MODULES
        if p != SDKSPAN and (reads := _sdk_field_reads(p, fields))
    }
    assert not outside, f"SDK private span fields read outside _sdkspan.py: {outside}"
