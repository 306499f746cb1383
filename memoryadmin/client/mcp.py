"""Old path of `memoryadmin_client.mcp` (the MCP server): the same objects, re-exported, and
`python -m memoryadmin.client.mcp` still runs the server."""

import sys

from memoryadmin_client.mcp import (
    SAVED_MEMORY_DESCRIPTION,
    SERVER_NAME,
    TOKEN_ENV,
    build_server,
    main,
    parse_args,
    serve,
)

__all__ = [
    "SAVED_MEMORY_DESCRIPTION",
    "SERVER_NAME",
    "TOKEN_ENV",
    "build_server",
    "main",
    "parse_args",
    "serve",
]


if __name__ == "__main__":
    sys.exit(main())
