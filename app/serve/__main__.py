"""``python -m app.serve [--host H] [--port P] [--workers N] [--log-level L]``: the service, served.

The options default to the environment's ``HOST`` (127.0.0.1), ``PORT`` (8000) and ``WORKERS`` (1);
everything else comes from the settings (README, "Configuration"). ``--no-access-log`` is accepted
for uvicorn's command line's sake: there is no access log of uvicorn's, the service logs one line per
request itself. With several workers, uvicorn's supervisor starts them (one process each) on one
listening socket and replaces any that dies.
"""

from __future__ import annotations

import argparse
import os
import sys

from uvicorn.config import LOG_LEVELS, STARTUP_FAILURE
from uvicorn.server import Server
from uvicorn.supervisors.multiprocess import Multiprocess

from app.serve.config import ServingConfig, descriptors_for
from app.settings import Settings
from app.web.logs import configure_logging
from app.web.metrics import process_exit


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m app.serve", description="Serve compute-advisor.")
    parser.add_argument("--host", default=os.environ.get("HOST") or "127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8000))
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WORKERS") or 1))
    parser.add_argument("--log-level", choices=sorted(LOG_LEVELS), default=None, help="uvicorn's own loggers")
    parser.add_argument("--no-access-log", action="store_true", help="always so (the service logs each request)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = arguments(argv)
    try:
        settings = Settings.from_env()
    except ValueError as exc:
        sys.exit(f"compute-advisor: {exc}")
    configure_logging(settings)
    config = ServingConfig(
        settings,
        max_connections=descriptors_for(settings.max_connections),
        host=args.host,
        port=args.port,
        workers=max(1, args.workers),
        log_level=args.log_level,
    )
    server = Server(config)
    if config.workers > 1:
        try:
            Multiprocess(config, sockets=[config.bind_socket()]).run()
        finally:
            # the supervisor imported the metrics (its gauges made files of its pid): they go with it, as
            # each worker's go with the worker
            process_exit(settings.prometheus_multiproc_dir)
        return
    server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)


if __name__ == "__main__":
    main()
