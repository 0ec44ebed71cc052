#!/usr/bin/env python3
"""Linear's GraphQL API as the tests need it: on 127.0.0.1, standard library only, its
workspace described by a JSON file.

orchestra's Linear task source talks to this instead of api.linear.app
(ORCHESTRA_LINEAR_API). One endpoint, POST /graphql, parsing and checking each query
against the part of Linear's schema orchestra uses: `teams` (filtered by key or id),
`team`, `issues` (filtered by team, state type and name, number), `issue` (by its
identifier such as ENG-12 or its id), `workflowStates` (filtered by team), a team's
`states`, `viewer`; the mutations `issueUpdate` (stateId, title, description) and
`commentCreate` (issueId, body). Connections page with `first`/`after` and
`pageInfo { hasNextPage endCursor }`. A field the schema here lacks is a 400
GRAPHQL_VALIDATION_FAILED, as Linear answers one. Scripted faults answer chosen
operations with a status, a GraphQL error code (RATELIMITED…) or late.

    python3 linear.py --port 0 --port-file PORT_FILE --log requests.jsonl --world world.json

The world file:

    {"key": "lin_api_…",                    # the one key accepted, as Authorization: <key>
                                            # (personal keys take no "Bearer"); else 401
     "watched": ["…"],                      # keys refused as any other, logged as "watched"
     "page_size": 2,                        # the most nodes one connection answers
     "teams": [{"id": "<uuid>", "key": "ENG", "name": "Engineering",
                "states": [{"id": "<uuid>", "name": "Todo", "type": "unstarted"}, …]}],
     "issues": [{"id": "<uuid>", "team": "ENG", "number": 12, "title": "Fix login",
                 "description": "markdown…", "state": "Todo"}],
     "faults": [{"operation": "issues", "code": "RATELIMITED", "status": 400, "times": 1},
                {"operation": "teams", "matching": "SLOW", "delay": 10},
                {"operation": "issue", "delay": 5},
                {"operation": "issueUpdate", "status": 500, "after": 1}]}

A fault's "operation" is a root field of the query, "matching" a part of the request's
body (a variable's value), "method" the HTTP method. "code"
answers a GraphQL error with that extensions code ("status" its HTTP status, default
400; RATELIMITED answers carry Linear's X-RateLimit-Requests-* headers and
"retry_after" if given); "status" alone answers that status with a plain error.

Each request is appended to --log as one JSON line {"method", "path", "auth",
"operations" (the root fields asked for), "query", "variables"} before it is answered
("auth" is "ok", "watched" or "bad"; a "Bearer " prefix is "bearer": the key itself is
never written).
"""

import json
import re
import threading
import time
import uuid

import standin

STATE_TYPES = ("triage", "backlog", "unstarted", "started", "completed", "canceled")
ORG = "orchestra-test"


# --- a GraphQL parser for the part of the language orchestra's queries use: operations
# with variables, selection sets, aliases, arguments of every literal kind.

class GraphQLError(Exception):
    def __init__(self, message, code="GRAPHQL_VALIDATION_FAILED", status=400, user_error=False):
        super().__init__(message)
        self.code = code
        self.status = status
        self.user_error = user_error


TOKEN = re.compile(r"""
    (?P<ws>[\s,]+|\#[^\n]*) |
    (?P<spread>\.\.\.) |
    (?P<punct>[!$():=@\[\]{}|]) |
    (?P<name>[_A-Za-z][_0-9A-Za-z]*) |
    (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?) |
    (?P<string>"(?:[^"\\\n]|\\.)*")
""", re.VERBOSE)


def tokens(text):
    out, at = [], 0
    while at < len(text):
        m = TOKEN.match(text, at)
        if not m:
            raise GraphQLError(f"Syntax Error: Unexpected character: {text[at]!r}.")
        at = m.end()
        kind = m.lastgroup
        if kind != "ws":
            out.append((kind, m.group(kind)))
    out.append(("end", None))
    return out


class Parser:
    def __init__(self, text):
        self.toks = tokens(text)
        self.at = 0

    def peek(self, value=None):
        kind, v = self.toks[self.at]
        return v == value if value is not None else (kind, v)

    def take(self, value=None, kind=None):
        k, v = self.toks[self.at]
        if (value is not None and v != value) or (kind is not None and k != kind):
            want = value or kind
            raise GraphQLError(f"Syntax Error: Expected {want}, found {v if v is not None else '<EOF>'}.")
        self.at += 1
        return v

    def document(self):
        """(operation type, variable definitions {name: (type, required)}, selections)."""
        op = "query"
        variables = {}
        if self.peek()[0] == "name" and self.peek()[1] in ("query", "mutation", "subscription"):
            op = self.take()
            if self.peek()[0] == "name":
                self.take()
            if self.peek("("):
                self.take("(")
                while not self.peek(")"):
                    self.take("$")
                    name = self.take(kind="name")
                    self.take(":")
                    kind, required = self.type_ref()
                    default = None
                    if self.peek("="):
                        self.take("=")
                        default = self.value({})
                    variables[name] = (kind, required, default)
                self.take(")")
        if self.peek("fragment") or op == "subscription":
            raise GraphQLError("This stand-in answers one query or mutation without fragments.")
        selections = self.selection_set()
        if self.peek()[0] != "end":
            raise GraphQLError("This stand-in answers one operation per document.")
        return op, variables, selections

    def type_ref(self):
        if self.peek("["):
            self.take("[")
            inner, _ = self.type_ref()
            self.take("]")
            kind = f"[{inner}]"
        else:
            kind = self.take(kind="name")
        required = False
        if self.peek("!"):
            self.take("!")
            required = True
        return kind, required

    def selection_set(self):
        self.take("{")
        fields = []
        while not self.peek("}"):
            if self.peek("..."):
                raise GraphQLError("This stand-in answers no fragments.")
            name = self.take(kind="name")
            alias = name
            if self.peek(":"):
                self.take(":")
                name = self.take(kind="name")
            args = {}
            if self.peek("("):
                self.take("(")
                while not self.peek(")"):
                    arg = self.take(kind="name")
                    self.take(":")
                    args[arg] = self.value(None)
                self.take(")")
            sub = self.selection_set() if self.peek("{") else None
            fields.append((alias, name, args, sub))
        self.take("}")
        return fields

    def value(self, variables):
        kind, v = self.peek()
        if v == "$":
            self.take("$")
            return ("var", self.take(kind="name"))
        if v == "[":
            self.take("[")
            items = []
            while not self.peek("]"):
                items.append(self.value(variables))
            self.take("]")
            return ("list", items)
        if v == "{":
            self.take("{")
            fields = {}
            while not self.peek("}"):
                key = self.take(kind="name")
                self.take(":")
                fields[key] = self.value(variables)
            self.take("}")
            return ("object", fields)
        self.take()
        if kind == "string":
            return ("const", json.loads(v))
        if kind == "number":
            return ("const", float(v) if any(c in v for c in ".eE") else int(v))
        if kind == "name":
            return ("const", {"true": True, "false": False, "null": None}.get(v, v))
        raise GraphQLError(f"Syntax Error: Unexpected {v}.")


def resolve_value(value, variables):
    kind, v = value
    if kind == "var":
        return variables.get(v)
    if kind == "list":
        return [resolve_value(i, variables) for i in v]
    if kind == "object":
        return {k: resolve_value(i, variables) for k, i in v.items()}
    return v


# --- the workspace

def rfc3339(n):
    return f"2026-01-{1 + n % 28:02d}T00:00:00.000Z"


class World:
    """The workspace, in memory: mutations change it; every answer is built from it."""

    def __init__(self, spec):
        self.lock = threading.Lock()
        self.key = spec.get("key") or ""
        self.watched = set(spec.get("watched") or [])
        self.page_size = int(spec.get("page_size") or 50)
        self.teams = []
        self.states = []
        for t in spec.get("teams") or []:
            team = {"id": t.get("id") or str(uuid.uuid4()), "key": t["key"],
                    "name": t.get("name") or t["key"]}
            self.teams.append(team)
            for n, s in enumerate(t.get("states") or []):
                if s.get("type") not in STATE_TYPES:
                    raise ValueError(f"state {s.get('name')}: type must be one of {STATE_TYPES}")
                self.states.append({"id": s.get("id") or str(uuid.uuid4()), "name": s["name"],
                                    "type": s["type"], "position": n, "team": team["id"]})
        self.issues = []
        for n, i in enumerate(spec.get("issues") or []):
            team = self.team_by_key(i["team"])
            state = self.state_named(team["id"], i.get("state"))
            self.issues.append({"id": i.get("id") or str(uuid.uuid4()), "team": team["id"],
                                "number": int(i["number"]), "title": i.get("title") or "",
                                "description": i.get("description"), "state": state["id"],
                                "n": n, "archived": bool(i.get("archived"))})
        self.comments = []
        # A fault's operation matches one root field exactly: "#issue#" is not in "#issues#";
        # its "matching" a part of the request's body (a variable's value).
        self.faults = [(f.get("matching") or "",
                        standin.Faults([dict(f, path=f"#{f['operation']}#") if f.get("operation") else f]))
                       for f in spec.get("faults") or []]

    def fault(self, method, path, body=""):
        """The first scripted fault matching this request (used up after `times`)."""
        for matching, faults in self.faults:
            if matching in body:
                found = faults.match(method, path)
                if found:
                    return found
        return None

    def team_by_key(self, key):
        return next(t for t in self.teams if t["key"] == key)

    def state_named(self, team_id, name):
        states = [s for s in self.states if s["team"] == team_id]
        if name is None:
            return states[0]
        return next(s for s in states if s["name"] == name)

    def by_id(self, items, ident):
        return next((i for i in items if i["id"] == ident), None)

    def identifier(self, issue):
        return f"{self.by_id(self.teams, issue['team'])['key']}-{issue['number']}"

    def find_issue(self, ident):
        """By id, or by identifier (ENG-12, case-insensitive) as Linear's `issue(id:)`."""
        found = self.by_id(self.issues, ident)
        if found:
            return found
        m = re.match(r"^([A-Za-z][A-Za-z0-9_]*)-(\d+)$", ident or "")
        if m:
            for i in self.issues:
                if self.identifier(i).upper() == f"{m.group(1).upper()}-{int(m.group(2))}":
                    return i
        return None

    def find_team(self, ident):
        return self.by_id(self.teams, ident) or next(
            (t for t in self.teams if t["key"].upper() == (ident or "").upper()), None)

    # --- filters: comparators on a field, nested filters on a relation, and/or

    def compare(self, value, cond, where):
        if not isinstance(cond, dict):
            raise GraphQLError(f"{where}: a comparator is an object")
        for op, want in cond.items():
            low = lambda x: x.lower() if isinstance(x, str) else x  # noqa: E731
            ok = {
                "eq": lambda: value == want,
                "neq": lambda: value != want,
                "in": lambda: value in (want or []),
                "nin": lambda: value not in (want or []),
                "eqIgnoreCase": lambda: low(value) == low(want),
                "neqIgnoreCase": lambda: low(value) != low(want),
                "containsIgnoreCase": lambda: isinstance(value, str) and low(want) in low(value),
                "gt": lambda: value > want, "gte": lambda: value >= want,
                "lt": lambda: value < want, "lte": lambda: value <= want,
                "null": lambda: (value is None) == bool(want),
            }.get(op)
            if ok is None:
                raise GraphQLError(f"Field \"{op}\" is not defined by the comparator of {where}.")
            if not ok():
                return False
        return True

    def matches(self, kind, item, flt):
        if not flt:
            return True
        fields = FILTERS[kind]
        for key, cond in flt.items():
            if key == "and":
                if not all(self.matches(kind, item, f) for f in cond or []):
                    return False
                continue
            if key == "or":
                if not any(self.matches(kind, item, f) for f in cond or []):
                    return False
                continue
            if key not in fields:
                raise GraphQLError(f"Field \"{key}\" is not defined by type \"{kind}Filter\".")
            field = fields[key]
            if isinstance(field, tuple):  # a relation: (its kind, the related item)
                related_kind, related = field
                if not self.matches(related_kind, related(self, item), cond):
                    return False
            elif not self.compare(field(self, item), cond, f"{kind}Filter.{key}"):
                return False
        return True

    def connection(self, kind, items, args):
        items = [i for i in items if self.matches(kind, i, args.get("filter"))]
        first = args.get("first")
        size = max(1, min(int(first if first is not None else 50), 250, self.page_size))
        at = 0
        after = args.get("after")
        if after:
            ids = [i["id"] for i in items]
            if after not in ids:
                raise GraphQLError(f"Argument Validation Error: the cursor {after} is not valid",
                                   code="INVALID_INPUT", status=400, user_error=True)
            at = ids.index(after) + 1
        chunk = items[at:at + size]
        more = at + size < len(items)
        return {"__nodes": (kind, chunk),
                "pageInfo": {"hasNextPage": more, "hasPreviousPage": at > 0,
                             "startCursor": chunk[0]["id"] if chunk else None,
                             "endCursor": chunk[-1]["id"] if chunk else None}}

    # --- what each root field does

    def root(self, op, name, args):
        if op == "query":
            if name == "teams":
                return self.connection("Team", self.teams, args)
            if name == "team":
                team = self.find_team(args.get("id"))
                if not team:
                    raise not_found("Team")
                return Ref("Team", team)
            if name == "issues":
                live = [i for i in self.issues if args.get("includeArchived") or not i["archived"]]
                return self.connection("Issue", live, args)
            if name == "issue":
                issue = self.find_issue(args.get("id"))
                if not issue:
                    raise not_found("Issue")
                return Ref("Issue", issue)
            if name == "workflowStates":
                return self.connection("WorkflowState", self.states, args)
            if name == "viewer":
                return Ref("User", {"id": "user-1", "name": "Orchestra Test", "email": "test@orchestra.invalid"})
        if op == "mutation":
            if name == "issueUpdate":
                issue = self.find_issue(args.get("id"))
                if not issue:
                    raise not_found("Issue")
                change = args.get("input") or {}
                for key in change:
                    if key not in ("stateId", "title", "description"):
                        raise GraphQLError(f"Field \"{key}\" is not defined by type \"IssueUpdateInput\".")
                if "stateId" in change:
                    state = self.by_id(self.states, change["stateId"])
                    if not state:
                        raise not_found("WorkflowState")
                    if state["team"] != issue["team"]:
                        raise GraphQLError("Argument Validation Error: the state is not one of the issue's team",
                                           code="INVALID_INPUT", status=400, user_error=True)
                    issue["state"] = state["id"]
                for key in ("title", "description"):
                    if key in change:
                        issue[key] = change[key]
                return Ref("IssuePayload", {"success": True, "issue": issue, "lastSyncId": len(self.comments) + 1})
            if name == "commentCreate":
                change = args.get("input") or {}
                for key in change:
                    if key not in ("issueId", "body"):
                        raise GraphQLError(f"Field \"{key}\" is not defined by type \"CommentCreateInput\".")
                issue = self.find_issue(change.get("issueId"))
                if not issue:
                    raise not_found("Issue")
                comment = {"id": str(uuid.uuid4()), "body": change.get("body") or "",
                           "issue": issue["id"], "n": len(self.comments)}
                self.comments.append(comment)
                return Ref("CommentPayload", {"success": True, "comment": comment, "lastSyncId": len(self.comments)})
        raise GraphQLError(f"Cannot query field \"{name}\" on type \"{op.capitalize()}\".")

    def execute(self, query, variables):
        """(status, answer) for one request body's query and variables."""
        op, defined, selections = Parser(query).document()
        variables = dict(variables or {})
        for name, (kind, required, default) in defined.items():
            if variables.get(name) is None:
                if default is not None:
                    variables[name] = resolve_value(default, {})
                elif required:
                    raise GraphQLError(f"Variable \"${name}\" of required type \"{kind}!\" was not provided.",
                                       code="GRAPHQL_VALIDATION_FAILED")
        data = {}
        with self.lock:
            self.variables = variables
            for alias, name, args, sub in selections:
                args = {k: resolve_value(v, variables) for k, v in args.items()}
                data[alias] = self.present(self.root(op, name, args), sub, f"{op.capitalize()}.{name}")
        return 200, {"data": data}

    def shape(self, kind, value, selections, where):
        if value is None:
            return None
        if selections is None:
            raise GraphQLError(f"Field \"{where}\" of type \"{kind}!\" must have a selection of subfields.")
        fields = TYPES[kind]
        out = {}
        for alias, name, args, sub in selections:
            if name == "__typename":
                out[alias] = kind
                continue
            if name not in fields:
                raise GraphQLError(f"Cannot query field \"{name}\" on type \"{kind}\".")
            args = {k: resolve_value(v, self.variables) for k, v in args.items()}
            out[alias] = self.present(fields[name](self, value, args), sub, f"{kind}.{name}")
        return out

    def present(self, got, sub, where):
        """A field's value as its selection asks: an object, a connection or a scalar."""
        if isinstance(got, Ref):
            return self.shape(got.kind, got.value, sub, where)
        if isinstance(got, dict) and "__nodes" in got:
            node_kind, nodes = got["__nodes"]
            if sub is None:
                raise GraphQLError(f"Field \"{where}\" of type \"{node_kind}Connection!\" must have a selection of subfields.")
            out = {}
            for alias, name, _, inner in sub:
                if name == "nodes":
                    out[alias] = [self.shape(node_kind, n, inner, f"{where}.nodes") for n in nodes]
                elif name == "pageInfo":
                    info = got["pageInfo"]
                    for _, field, _, _ in inner or []:
                        if field not in info:
                            raise GraphQLError(f"Cannot query field \"{field}\" on type \"PageInfo\".")
                    out[alias] = {a: info[f] for a, f, _, _ in inner or []}
                else:
                    raise GraphQLError(f"Cannot query field \"{name}\" on type \"{node_kind}Connection\".")
            return out
        if sub is not None:
            raise GraphQLError(f"Field \"{where}\" must not have a selection since it has no subfields.")
        return got


class Ref:
    def __init__(self, kind, value):
        self.kind = kind
        self.value = value


def not_found(kind):
    return GraphQLError(f"Entity not found: {kind}", code="INVALID_INPUT", status=200, user_error=True)


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", (text or "").lower()).strip("-")[:60]


def issue_url(w, i, _args=None):
    return f"https://linear.app/{ORG}/issue/{w.identifier(i)}/{slug(i['title'])}"


TYPES = {
    "Team": {
        "id": lambda w, t, a: t["id"], "key": lambda w, t, a: t["key"], "name": lambda w, t, a: t["name"],
        "states": lambda w, t, a: w.connection(
            "WorkflowState", [s for s in w.states if s["team"] == t["id"]], a),
        "issues": lambda w, t, a: w.connection(
            "Issue", [i for i in w.issues if i["team"] == t["id"] and not i["archived"]], a),
    },
    "WorkflowState": {
        "id": lambda w, s, a: s["id"], "name": lambda w, s, a: s["name"], "type": lambda w, s, a: s["type"],
        "position": lambda w, s, a: float(s["position"]),
        "team": lambda w, s, a: Ref("Team", w.by_id(w.teams, s["team"])),
    },
    "Issue": {
        "id": lambda w, i, a: i["id"], "identifier": lambda w, i, a: w.identifier(i),
        "number": lambda w, i, a: float(i["number"]), "title": lambda w, i, a: i["title"],
        "description": lambda w, i, a: i["description"], "url": issue_url,
        "createdAt": lambda w, i, a: rfc3339(i["n"]), "updatedAt": lambda w, i, a: rfc3339(i["n"]),
        "archivedAt": lambda w, i, a: rfc3339(i["n"]) if i["archived"] else None,
        "state": lambda w, i, a: Ref("WorkflowState", w.by_id(w.states, i["state"])),
        "team": lambda w, i, a: Ref("Team", w.by_id(w.teams, i["team"])),
        "comments": lambda w, i, a: w.connection(
            "Comment", [c for c in w.comments if c["issue"] == i["id"]], a),
    },
    "Comment": {
        "id": lambda w, c, a: c["id"], "body": lambda w, c, a: c["body"],
        "createdAt": lambda w, c, a: rfc3339(c["n"]),
        "issue": lambda w, c, a: Ref("Issue", w.by_id(w.issues, c["issue"])),
    },
    "IssuePayload": {
        "success": lambda w, p, a: p["success"], "lastSyncId": lambda w, p, a: float(p["lastSyncId"]),
        "issue": lambda w, p, a: Ref("Issue", p["issue"]),
    },
    "CommentPayload": {
        "success": lambda w, p, a: p["success"], "lastSyncId": lambda w, p, a: float(p["lastSyncId"]),
        "comment": lambda w, p, a: Ref("Comment", p["comment"]),
    },
    "User": {"id": lambda w, u, a: u["id"], "name": lambda w, u, a: u["name"],
             "email": lambda w, u, a: u["email"]},
}

# The filter fields each kind answers: a function of the item for a comparator, or
# (kind, the related item) for a nested filter.
FILTERS = {
    "Team": {"id": lambda w, t: t["id"], "key": lambda w, t: t["key"], "name": lambda w, t: t["name"]},
    "WorkflowState": {
        "id": lambda w, s: s["id"], "name": lambda w, s: s["name"], "type": lambda w, s: s["type"],
        "team": ("Team", lambda w, s: w.by_id(w.teams, s["team"])),
    },
    "Issue": {
        "id": lambda w, i: i["id"], "number": lambda w, i: i["number"], "title": lambda w, i: i["title"],
        "state": ("WorkflowState", lambda w, i: w.by_id(w.states, i["state"])),
        "team": ("Team", lambda w, i: w.by_id(w.teams, i["team"])),
    },
    "Comment": {"id": lambda w, c: c["id"], "body": lambda w, c: c["body"]},
}


def error_body(message, code, user_error=False, extra=None):
    types = {"RATELIMITED": "ratelimited", "AUTHENTICATION_ERROR": "authentication error",
             "FORBIDDEN": "forbidden", "INVALID_INPUT": "invalid input",
             "GRAPHQL_VALIDATION_FAILED": "graphql error", "INTERNAL_SERVER_ERROR": "internal error"}
    extensions = {"type": types.get(code, "unknown"), "code": code, "userError": user_error}
    if user_error or code in ("AUTHENTICATION_ERROR", "RATELIMITED"):
        extensions["userPresentableMessage"] = message
    extensions.update(extra or {})
    return {"errors": [{"message": message, "extensions": extensions}], "data": None}


class Server(standin.Server):
    def __init__(self, address, log_path, world):
        super().__init__(address, Handler, log_path)
        self.world = world

    def record(self, entry):
        self.append_log(entry)


def operations(query):
    """The root fields a query asks for (for the log and for faults); [] if it does not parse."""
    try:
        return [name for _, name, _, _ in Parser(query).document()[2]]
    except GraphQLError:
        return []


class Handler(standin.WorldHandler):
    server_version = "orchestra-linear-stand-in"
    json_type = "application/json; charset=utf-8"

    def answer(self, method):
        raw = self.body()
        world = self.server.world
        header = self.headers.get("authorization") or ""
        if world.key and header == world.key:
            auth = "ok"
        elif world.key and header == f"Bearer {world.key}":
            auth = "bearer"
        else:
            auth = "watched" if header in world.watched else "bad"
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        query = body.get("query") if isinstance(body, dict) else None
        variables = body.get("variables") if isinstance(body, dict) else None
        ops = operations(query) if isinstance(query, str) else []
        self.server.record({"method": method, "path": self.path, "auth": auth, "operations": ops,
                            "query": query, "variables": variables})
        try:
            if method != "POST" or self.path.split("?")[0].rstrip("/") != "/graphql":
                return self.send_json(404, {"errors": [{"message": f"Cannot {method} {self.path}"}]})
            fault = None
            for op in ops or [""]:
                fault = fault or world.fault(method, f"{self.path}#{op}#", raw.decode("utf-8", "replace"))
            if fault and fault.get("delay"):
                time.sleep(float(fault["delay"]))
            if fault and (fault.get("code") or fault.get("status")):
                return self.scripted(fault)
            if auth != "ok":
                # A key with "Bearer " is an OAuth token to Linear, and this is none.
                return self.send_json(401, error_body(
                    "Authentication required, not authenticated", "AUTHENTICATION_ERROR"))
            if not isinstance(query, str):
                return self.send_json(400, error_body("Must provide query string.", "GRAPHQL_VALIDATION_FAILED"))
            if variables is not None and not isinstance(variables, dict):
                return self.send_json(400, error_body("Variables must be an object.", "GRAPHQL_VALIDATION_FAILED"))
            try:
                self.send_json(*world.execute(query, variables))
            except GraphQLError as e:
                self.send_json(e.status, error_body(str(e), e.code, e.user_error))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (its timeout)

    def scripted(self, fault):
        status = int(fault.get("status") or 400)
        code = fault.get("code")
        if not code:
            return self.send_json(status, {"errors": [{"message": f"scripted {status}"}]})
        headers = []
        if code == "RATELIMITED":
            reset = int((time.time() + float(fault.get("retry_after") or 1)) * 1000)
            headers = [("x-ratelimit-requests-limit", "1500"), ("x-ratelimit-requests-remaining", "0"),
                       ("x-ratelimit-requests-reset", str(reset))]
            message = "Rate limit exceeded"
        else:
            message = fault.get("message") or f"scripted {code}"
        if "retry_after" in fault:
            headers.append(("retry-after", str(fault["retry_after"])))
        self.send_json(status, error_body(message, code, code != "INTERNAL_SERVER_ERROR"), headers)


def main():
    standin.serve_world(__doc__, lambda address, log, spec: Server(address, log, World(spec)), "workspace")


if __name__ == "__main__":
    main()
