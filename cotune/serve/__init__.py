"""``cotune serve``: the recommend API over HTTP (FastAPI + uvicorn, the ``serve`` extra).

Importing this package needs ``pip install 'cotune[serve]'``; ``import cotune`` never
imports it.
"""

from cotune.serve._app import DEFAULT_MAX_BODY_BYTES, ServiceSettings, create_app

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ServiceSettings", "create_app"]
