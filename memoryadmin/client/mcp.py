"""Old path of `memoryadmin_client.mcp` (the MCP server), deprecated: the same objects,
re-exported, and `python -m memoryadmin.client.mcp` still runs the server, saying on stderr
(never stdout, the MCP channel) to run `python -m memoryadmin_client.mcp` instead."""

import sys
import warnings

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
    # Run as a script, the package's import warning is the import system's and Python hides it;
    # this one is __main__'s, which Python shows by default.
    warnings.warn(
        "python -m memoryadmin.client.mcp is deprecated: run python -m memoryadmin_client.mcp.",
        DeprecationWarning,
        stacklevel=1,
    )
    sys.exit(main())
