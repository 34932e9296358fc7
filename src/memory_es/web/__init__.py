"""The read-only web inspector (``memory-es serve-web``): what the agent remembers, why a line
ranks, and whether the root is healthy, as server-rendered pages over
:class:`~memory_es.root.MemoryRoot`. The ``[web]`` extra (Starlette, uvicorn, Jinja2).

- :mod:`~memory_es.web.guard`: the gate (GET only, the token or a session, Host and Origin,
  security headers);
- :mod:`~memory_es.web.pages`: the pages; :mod:`~memory_es.web.graph`: the people picture;
- :mod:`~memory_es.web.app`: the Starlette app and :func:`~memory_es.web.app.serve_web`.
"""
