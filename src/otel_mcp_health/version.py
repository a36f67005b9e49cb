"""The package version: one source, read by hatchling and used as the tracer/meter scope version."""

__version__ = "0.1.0.dev0"
