"""The test suites: a package, so their helpers import by name (``tests.support.*``,
``tests.<suite>.*``).

``pyproject.toml`` puts the repository root on pytest's ``pythonpath``; this ``__init__`` makes
``tests`` a regular package, so a ``tests`` package that a third-party distribution installs into
site-packages cannot shadow it in a nox cell.
"""
