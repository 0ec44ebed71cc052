#!/usr/bin/env python3
"""A tiny MCP server on stdio (JSON-RPC, one message a line), standard library only: one
tool, `note`, that answers with the text it was given. Enough for the real claude CLI to
list `mcp__orchestra__note` and ask permission before calling it ([[mcp: orchestra note]]).

    claude --mcp-config '{"mcpServers": {"orchestra": {"command": "python3", "args": ["mcp_server.py"]}}}'
"""

import json
import sys

TOOLS = [{
    "name": "note",
    "description": "Keeps a short note for the person (the test's MCP tool).",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}]


def answer(request):
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion") or "2024-11-05",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "orchestra", "version": "1.0.0"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text = str((params.get("arguments") or {}).get("text", ""))
        return {"content": [{"type": "text", "text": "noted: " + text}]}
    if method in ("resources/list", "prompts/list"):
        return {method.split("/")[0]: []}
    if method == "ping":
        return {}
    return None


def main():
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if not isinstance(request, dict) or "id" not in request:
            continue  # a notification: nothing to answer
        result = answer(request)
        reply = {"jsonrpc": "2.0", "id": request["id"]}
        if result is None:
            reply["error"] = {"code": -32601, "message": f"no method {request.get('method')}"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
