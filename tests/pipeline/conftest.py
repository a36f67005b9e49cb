"""Fixtures of the pipeline tests: the real collector, Prometheus and Alertmanager on 127.0.0.1.

Nothing here skips: CI provisions every binary (``make provision``), so a missing one fails the
test with the command that installs it. The stack and the agent scenarios are modules beside this
file (``tests.pipeline.pipeline_stack``; ``python -m tests.pipeline.agent_scenarios``).
"""
