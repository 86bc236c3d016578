"""The MCP adapter (extra ``mcp``): run it with ``mnesis mcp``."""

from mnesis.mcp.server import MnesisMCP, build_server

__all__ = ["MnesisMCP", "build_server"]
