#!/usr/bin/env python3
"""The Notion API (version 2025-09-03, data sources) as the tests need it: on 127.0.0.1,
standard library only, its workspace described by a JSON file.

orchestra's task source talks to this instead of api.notion.com (NOTION_API_URL). It
serves what orchestra uses: a data source's schema, a data source's query (filters,
sorting by creation, pagination with has_more/next_cursor), a page, a page update
(properties), and a block's children (pagination too). Scripted faults answer chosen
requests with a status (429 with Retry-After, 401, 404…) or answer them late.

    python3 notion.py --port 0 --port-file PORT_FILE --log requests.jsonl --world world.json

The world file:

    {"token": "ntn_…",                      # the one token accepted (else 401)
     "watched": ["…"],                      # tokens refused as any other, logged as "watched"
     "page_size": 2,                        # the most results one answer holds
     "data_sources": {"<id>": {"properties": {"Name": {"type": "title"},
                                              "Status": {"type": "status", "status": {"options": [{"name": "Done"}]}},
                                              "Project": {"type": "relation", "relation": {"data_source_id": "<id>"}}}}},
     "pages": [{"id": "<id>", "data_source": "<id>", "title": "Fix login",
                "status": "Not started", "relation": ["<project page id>"],
                "blocks": [{"type": "paragraph", "text": "…", "children": […]}]}],
     "faults": [{"method": "POST", "path": "/query", "status": 429, "retry_after": "1", "times": 1},
                {"path": "/v1/pages/", "delay": 5},
                {"method": "PATCH", "status": 500, "after": 1}]}   # from the 2nd match on

Each request is appended to --log as one JSON line {"method", "path", "auth", "version",
"body"} before it is answered ("auth" says "ok", "watched" (one of the world's
watched tokens, a secret that must never arrive) or "bad": the token itself is never
written), so a test that saw the answer finds the request in the log.
"""

import json
import re
import threading
import time
import uuid

import standin
from urllib.parse import parse_qs, urlsplit

VERSION = "2025-09-03"
HEX = re.compile(r"^[0-9a-f]{32}$")


def norm(ident):
    """An id in Notion's dashed form, whatever its spelling; None if it is none."""
    h = (ident or "").replace("-", "").lower()
    if not HEX.match(h):
        return None
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def rich(text):
    return [{"type": "text", "text": {"content": text, "link": None}, "plain_text": text,
             "annotations": {"bold": False, "italic": False, "strikethrough": False,
                             "underline": False, "code": False, "color": "default"},
             "href": None}]


def error(status, code, message):
    return status, {"object": "error", "status": status, "code": code, "message": message,
                    "request_id": str(uuid.uuid4())}


class World:
    """The workspace, in memory: updates change it; every answer is built from it."""

    def __init__(self, spec):
        self.lock = threading.Lock()
        self.token = spec.get("token") or ""
        self.watched = {f"Bearer {t}" for t in spec.get("watched") or []}
        self.page_size = int(spec.get("page_size") or 100)
        self.sources = {norm(k): v for k, v in (spec.get("data_sources") or {}).items()}
        self.pages = {}
        self.order = []
        self.blocks = {}  # parent id -> [block]
        for n, p in enumerate(spec.get("pages") or []):
            pid = norm(p["id"])
            page = dict(p, id=pid, data_source=norm(p.get("data_source")), n=n)
            page["relation"] = [norm(r) for r in p.get("relation") or []]
            self.pages[pid] = page
            self.order.append(pid)
            self.blocks[pid] = [self.block(b) for b in p.get("blocks") or []]
        self.faults = standin.Faults(spec.get("faults"))

    def block(self, spec):
        bid = str(uuid.uuid4())
        kind = spec.get("type") or "paragraph"
        body = {"rich_text": rich(spec.get("text") or ""), "color": "default"}
        for key in ("checked", "language"):
            if key in spec:
                body[key] = spec[key]
        children = [self.block(c) for c in spec.get("children") or []]
        self.blocks[bid] = children
        return {"object": "block", "id": bid, "type": kind, "has_children": bool(children),
                "in_trash": False, kind: body}

    def fault(self, method, path):
        """The first scripted fault matching this request (used up after `times`)."""
        return self.faults.match(method, path)

    # --- schema and pages as the API shows them

    def schema(self, sid):
        props = {}
        for name, p in (self.sources[sid].get("properties") or {}).items():
            kind = p.get("type")
            props[name] = dict({"id": name.lower()[:4], "name": name, "type": kind, kind: {}}, **p)
        return props

    def prop_of(self, sid, kinds):
        for name, p in (self.sources.get(sid, {}).get("properties") or {}).items():
            if p.get("type") in kinds:
                return name, p.get("type")
        return None, None

    def page_json(self, page):
        sid = page["data_source"]
        props = {}
        for name, p in (self.sources.get(sid, {}).get("properties") or {}).items():
            kind = p.get("type")
            if kind == "title":
                props[name] = {"id": "title", "type": "title", "title": rich(page.get("title") or "")}
            elif kind in ("status", "select"):
                value = page.get("status")
                props[name] = {"id": name.lower()[:4], "type": kind,
                               kind: {"id": "opt", "name": value, "color": "default"} if value else None}
            elif kind == "relation":
                props[name] = {"id": name.lower()[:4], "type": "relation",
                               "relation": [{"id": r} for r in page.get("relation") or []], "has_more": False}
        slug = re.sub(r"[^A-Za-z0-9]+", "-", page.get("title") or "").strip("-")
        return {"object": "page", "id": page["id"], "created_time": "2026-01-01T00:00:00.000Z",
                "last_edited_time": "2026-01-01T00:00:00.000Z", "in_trash": bool(page.get("in_trash")),
                "archived": bool(page.get("in_trash")),
                "url": f"https://www.notion.so/{slug}-{page['id'].replace('-', '')}",
                "parent": {"type": "data_source_id", "data_source_id": sid,
                           "database_id": norm(sid[::-1]) or sid},
                "properties": props}

    # --- what each endpoint does

    def matches(self, page, flt):
        if not flt:
            return True
        if "and" in flt:
            return all(self.matches(page, f) for f in flt["and"])
        if "or" in flt:
            return any(self.matches(page, f) for f in flt["or"])
        name = flt.get("property")
        props = self.sources.get(page["data_source"], {}).get("properties") or {}
        if name not in props:
            raise ValueError(f"Could not find property with name or id: {name}")
        kind = props[name].get("type")
        cond = flt.get(kind)
        if not isinstance(cond, dict):
            raise ValueError(f"body.filter: {name} is a {kind} property: filter it with \"{kind}\"")
        if kind == "title":
            value = page.get("title") or ""
            if "equals" in cond:
                return value == cond["equals"]
            if "contains" in cond:
                return cond["contains"] in value
        elif kind in ("status", "select"):
            value = page.get("status")
            if "equals" in cond:
                return value == cond["equals"]
            if "does_not_equal" in cond:
                return value != cond["does_not_equal"]
        elif kind == "relation":
            if "contains" in cond:
                return norm(cond["contains"]) in page.get("relation", [])
        raise ValueError(f"body.filter: an unsupported condition {cond} for {name}")

    def paged(self, items, start_cursor, page_size):
        size = max(1, min(int(page_size or 100), 100, self.page_size))
        ids = [i["id"] for i in items]
        at = 0
        if start_cursor:
            if start_cursor not in ids:
                return error(400, "validation_error", f"start_cursor {start_cursor} is not valid")
            at = ids.index(start_cursor)
        chunk = items[at:at + size]
        more = at + size < len(items)
        return 200, {"object": "list", "results": chunk, "has_more": more,
                     "next_cursor": ids[at + size] if more else None,
                     "type": "page_or_data_source", "page_or_data_source": {}}

    def handle(self, method, path, query, body):
        parts = [p for p in path.split("/") if p]
        with self.lock:
            if parts[:2] == ["v1", "data_sources"] and len(parts) >= 3:
                sid = norm(parts[2])
                if sid not in self.sources:
                    return error(404, "object_not_found",
                                 f"Could not find data_source with ID: {parts[2]}. Make sure the relevant pages and databases are shared with your integration.")
                if method == "GET" and len(parts) == 3:
                    return 200, {"object": "data_source", "id": sid, "properties": self.schema(sid),
                                 "title": rich(self.sources[sid].get("title") or "")}
                if method == "POST" and parts[3:] == ["query"]:
                    pages = [self.pages[p] for p in self.order
                             if self.pages[p]["data_source"] == sid and not self.pages[p].get("in_trash")]
                    try:
                        pages = [p for p in pages if self.matches(p, (body or {}).get("filter"))]
                    except ValueError as e:
                        return error(400, "validation_error", str(e))
                    items = [self.page_json(p) for p in pages]
                    return self.paged(items, (body or {}).get("start_cursor"), (body or {}).get("page_size"))
            if parts[:2] == ["v1", "pages"] and len(parts) == 3:
                pid = norm(parts[2])
                page = self.pages.get(pid)
                if page is None:
                    return error(404, "object_not_found",
                                 f"Could not find page with ID: {parts[2]}. Make sure the relevant pages and databases are shared with your integration.")
                if method == "GET":
                    return 200, self.page_json(page)
                if method == "PATCH":
                    props = self.sources.get(page["data_source"], {}).get("properties") or {}
                    for name, value in ((body or {}).get("properties") or {}).items():
                        if name not in props:
                            return error(400, "validation_error", f"{name} is not a property that exists.")
                        kind = props[name].get("type")
                        if kind in ("status", "select"):
                            chosen = (value.get(kind) or {}).get("name") if isinstance(value, dict) else None
                            if chosen is None:
                                return error(400, "validation_error", f"{name} is expected to be {kind}.")
                            options = [o.get("name") for o in (props[name].get(kind) or {}).get("options") or []]
                            if options and chosen not in options:
                                return error(400, "validation_error", f"Invalid status option. Status option \"{chosen}\" does not exist\".")
                            page["status"] = chosen
                        elif kind == "title":
                            page["title"] = "".join(t.get("plain_text") or (t.get("text") or {}).get("content") or ""
                                                    for t in value.get("title") or [])
                    return 200, self.page_json(page)
            if parts[:2] == ["v1", "blocks"] and parts[3:] == ["children"] and method == "GET":
                bid = norm(parts[2]) or parts[2]
                if bid not in self.blocks:
                    return error(404, "object_not_found", f"Could not find block with ID: {parts[2]}.")
                return self.paged(self.blocks[bid], query.get("start_cursor", [None])[0],
                                  query.get("page_size", [100])[0])
        return error(400, "invalid_request_url", f"Invalid request URL: {method} {path}")


class Server(standin.Server):
    def __init__(self, address, log_path, world):
        super().__init__(address, Handler, log_path)
        self.world = world

    def record(self, entry):
        self.append_log(entry)


class Handler(standin.WorldHandler):
    server_version = "orchestra-notion-stand-in"
    json_type = "application/json; charset=utf-8"

    def answer(self, method):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = "<not JSON>"
        url = urlsplit(self.path)
        world = self.server.world
        header = self.headers.get("authorization")
        if world.token and header == f"Bearer {world.token}":
            auth = "ok"
        else:
            auth = "watched" if header in world.watched else "bad"
        version = self.headers.get("notion-version")
        self.server.record({"method": method, "path": self.path, "auth": auth,
                            "version": version, "body": body})
        try:
            fault = world.fault(method, self.path)
            if fault and fault.get("delay"):
                time.sleep(float(fault["delay"]))
            if fault and fault.get("status"):
                status = int(fault["status"])
                headers = [("retry-after", str(fault["retry_after"]))] if "retry_after" in fault else []
                codes = {401: "unauthorized", 403: "restricted_resource", 404: "object_not_found",
                         429: "rate_limited", 500: "internal_server_error", 503: "service_unavailable"}
                _, obj = error(status, codes.get(status, "internal_server_error"), f"scripted {status}")
                return self.send_json(status, obj, headers)
            if auth != "ok":
                return self.send_json(*error(401, "unauthorized", "API token is invalid."))
            if version != VERSION:
                return self.send_json(*error(400, "missing_version",
                                             f"Notion-Version header should be {VERSION} for this stand-in."))
            if body == "<not JSON>":
                return self.send_json(*error(400, "invalid_json", "Error parsing JSON body."))
            self.send_json(*world.handle(method, url.path, parse_qs(url.query), body))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (its timeout)


def main():
    standin.serve_world(__doc__, lambda address, log, spec: Server(address, log, World(spec)), "workspace")


if __name__ == "__main__":
    main()
