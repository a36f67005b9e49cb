"""The examples suite: each example is collected where its framework is installed.

``make test``'s pytest runs ``plain_session`` in the project's ``.venv``; the nox cells that hold
a framework (``mcp_latest_1x`` for LangChain, ``framework_pydantic_ai``,
``framework_openai_agents``; noxfile.py) run that framework's example.
"""
