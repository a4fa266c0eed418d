"""Serving the service: ``python -m app.serve`` starts uvicorn on ``app.asgi:create_app`` with the
connection bounds of the settings (``app.serve.protocol``), the worker processes, and a shutdown with a
deadline (``app.serve.config``). ``deploy/serve``, ``make run`` and the tests' served instances all
start it, so what is tested is what is deployed (docs/operations.md, "Connections and shutdown")."""
