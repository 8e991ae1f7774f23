#!/usr/bin/env python3
"""A scripted model server speaking the vendors' own APIs, for the real Claude Code and Codex
tests, on 127.0.0.1 (stdlib only).

    vendor_server.py SCRIPT.json PORT_FILE LOG.jsonl

Listens on an ephemeral port (written to PORT_FILE once it accepts connections) and answers:

- `POST /v1/messages` (Anthropic Messages, what Claude Code calls): streamed as server-sent
  events (`message_start` with the input usage, `content_block_start`/`_delta`/`_stop` for text
  and `tool_use` blocks with `input_json_delta`, `message_delta` with `stop_reason` and the
  output tokens, `message_stop`), or one JSON message without `"stream": true`;
  `POST /v1/messages/count_tokens` answers a count.
- `POST /v1/responses` (OpenAI Responses, what Codex calls): streamed as `response.created`,
  `response.output_item.added`, `response.output_text.delta`, `response.output_item.done`
  (a `message` item, then one `function_call` item per tool call) and `response.completed`
  with the usage.

SCRIPT is the same JSON as model_server.py's: `{"replies": [REPLY, ...], "then": REPLY}` and
`"match": [{"model": "m", "contains": "text", "replies": [...], "then": REPLY}, ...]` (a request
whose model is `model`, when given, and whose user text contains `contains` is answered from
that entry). With `"keys": ["sk-...", ...]`, a request carrying another key (`x-api-key`, or
`Authorization: Bearer`) gets a 401 as the vendor sends it, its WebSocket upgrade too, and uses
no scripted reply: a bad key and then a good one can be tried against one server. A REPLY is
one of:

    {"content": "text", "tool_calls": [{"name": "Bash", "arguments": {...}}],
     "usage": {"input": 1200, "cached": 1000, "write": 100, "output": 80}}
    {"status": 401, "message": "invalid x-api-key"}     # also 429, 500, 529
    {"hang": true}                                      # never answers

`usage.input` counts every input token (cache hits and writes included, bench's convention).
On the wire it is split as each vendor does: Anthropic's `input_tokens` is the uncached rest
(`input - cached - write`), with `cache_read_input_tokens` and `cache_creation_input_tokens`;
the Responses API's `input_tokens` is all of it, with `input_tokens_details.cached_tokens` and
`input_tokens_details.cache_write_tokens` (the field Codex 0.162 reads).

Every request, on any path, is appended to LOG as one JSON line: its index, method, path, the
key it carried (`x-api-key` or `Authorization`), model, whether it streamed, the tool names
offered, the status served and the usage served (bench's convention, null on an error), so a
test compares an agent's accounting with the truth and sees every request the CLI made.
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT_PATH, PORT_FILE, LOG_PATH = sys.argv[1], sys.argv[2], sys.argv[3]
with open(SCRIPT_PATH) as f:
    SCRIPT = json.load(f)
LOCK = threading.Lock()
COUNT = [0]
MATCH_COUNTS = {}
NO_MORE = {"status": 500, "message": "the script has no more replies"}


def texts(value):
    """Every string under a content value (strings, blocks, tool results)."""
    if isinstance(value, str):
        return [value]
    out = []
    if isinstance(value, list):
        for v in value:
            out.extend(texts(v))
    elif isinstance(value, dict):
        for k in ("text", "content", "output"):
            if k in value:
                out.extend(texts(value[k]))
    return out


def user_text(body):
    """The conversation's text (Anthropic `messages`, Responses `input`), not the system prompt."""
    if "messages" in body:
        return "\n".join(t for m in body["messages"] for t in texts(m.get("content")))
    return "\n".join(texts(body.get("input", [])))


def next_reply(body):
    """(request index, entry index or None, reply)."""
    text = user_text(body)
    model = body.get("model")
    with LOCK:
        n = COUNT[0]
        COUNT[0] += 1
        for i, e in enumerate(SCRIPT.get("match", [])):
            if e.get("model") not in (None, model) or e.get("contains", "") not in text:
                continue
            k = MATCH_COUNTS.get(i, 0)
            MATCH_COUNTS[i] = k + 1
            replies = e.get("replies", [])
            if k < len(replies):
                return n, i, replies[k]
            return n, i, e.get("then", SCRIPT.get("then", NO_MORE))
        k = MATCH_COUNTS.get(None, 0)
        MATCH_COUNTS[None] = k + 1
    replies = SCRIPT.get("replies", [])
    if k < len(replies):
        return n, None, replies[k]
    return n, None, SCRIPT.get("then", NO_MORE)


def usage_of(reply):
    u = reply.get("usage", {})
    return {k: int(u.get(k, 0)) for k in ("input", "cached", "write", "output")}


def calls_of(reply, n):
    out = []
    for i, c in enumerate(reply.get("tool_calls", [])):
        args = c.get("arguments", {})
        out.append((c.get("id", f"call_{n}_{i}"), c["name"],
                    args if isinstance(args, str) else json.dumps(args)))
    return out


ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error",
                    403: "permission_error", 429: "rate_limit_error", 500: "api_error",
                    529: "overloaded_error"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, n, body, status, usage, match=None):
        key = self.headers.get("x-api-key") or self.headers.get("Authorization")
        tools = [t.get("name") or t.get("function", {}).get("name") or t.get("type")
                 for t in body.get("tools", []) or [] if isinstance(t, dict)]
        entry = {"n": n, "match": match, "method": self.command, "path": self.path,
                 "key": key, "model": body.get("model"), "stream": bool(body.get("stream")),
                 "tools": tools, "status": status, "usage": usage}
        with LOCK:
            with open(LOG_PATH, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def send_json(self, status, obj, headers=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def start_events(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

    def event(self, name, data):
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def key_refused(self, api, n, body):
        """Answers a 401 when the script names a key and the request carries another."""
        want = SCRIPT.get("keys")
        got = self.headers.get("x-api-key") or (self.headers.get("Authorization") or "")
        got = got[len("Bearer "):] if got.startswith("Bearer ") else got
        if want is None or got in want:
            return False
        self.record(n, body, 401, None)
        if api == "anthropic":
            self.send_json(401, {"type": "error", "error": {
                "type": "authentication_error", "message": "invalid x-api-key"}})
        else:
            self.send_json(401, {"error": {
                "message": "Incorrect API key provided", "type": "invalid_request_error",
                "param": None, "code": "invalid_api_key"}})
        return True

    def do_GET(self):
        # Codex tries a WebSocket upgrade of /v1/responses first: refused as a gateway without
        # WebSockets refuses it (404), after the key check.
        with LOCK:
            n = COUNT[0]
            COUNT[0] += 1
        if self.key_refused("responses", n, {}):
            return
        self.record(n, {}, 404, None)
        self.send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/messages/count_tokens"):
            with LOCK:
                n = COUNT[0]
                COUNT[0] += 1
            self.record(n, body, 200, None)
            self.send_json(200, {"input_tokens": len(user_text(body)) // 4 + 1})
            return
        if path.endswith("/messages"):
            api = "anthropic"
        elif path.endswith("/responses"):
            api = "responses"
        else:
            with LOCK:
                n = COUNT[0]
                COUNT[0] += 1
            self.record(n, body, 404, None)
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        if self.key_refused(api, None, body):
            return
        n, match, reply = next_reply(body)
        if reply.get("hang"):
            self.record(n, body, "hang", None, match)
            time.sleep(3600)
            return
        status = int(reply.get("status", 200))
        if status != 200:
            self.record(n, body, status, None, match)
            message = reply.get("message", f"error {status}")
            if api == "anthropic":
                err = {"type": "error",
                       "error": {"type": ANTHROPIC_ERRORS.get(status, "api_error"),
                                 "message": message}}
            else:
                err = {"error": {"message": message, "type": "invalid_request_error",
                                 "param": None,
                                 "code": {401: "invalid_api_key",
                                          429: "insufficient_quota"}.get(status)}}
            self.send_json(status, err)
            return
        usage = usage_of(reply)
        self.record(n, body, 200, usage, match)
        if api == "anthropic":
            self.answer_anthropic(n, body, reply, usage)
        else:
            self.answer_responses(n, body, reply, usage)
        self.close_connection = True

    def answer_anthropic(self, n, body, reply, usage):
        model = body.get("model", "fake")
        content = reply.get("content", "")
        calls = calls_of(reply, n)
        wire_in = {"input_tokens": usage["input"] - usage["cached"] - usage["write"],
                   "cache_creation_input_tokens": usage["write"],
                   "cache_read_input_tokens": usage["cached"]}
        stop = "tool_use" if calls else "end_turn"
        mid = f"msg_fake_{n}"
        if not body.get("stream"):
            blocks = [{"type": "text", "text": content}] if content else []
            blocks += [{"type": "tool_use", "id": i, "name": name, "input": json.loads(a)}
                       for i, name, a in calls]
            self.send_json(200, {"id": mid, "type": "message", "role": "assistant",
                                 "model": model, "content": blocks, "stop_reason": stop,
                                 "stop_sequence": None,
                                 "usage": {**wire_in, "output_tokens": usage["output"]}})
            return
        self.start_events()
        self.event("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {**wire_in, "output_tokens": 1}}})
        index = 0
        if content:
            self.event("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}})
            step = max(1, len(content) // 3)
            for i in range(0, len(content), step):
                self.event("content_block_delta", {
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": content[i:i + step]}})
            self.event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        for cid, name, args in calls:
            self.event("content_block_start", {
                "type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}}})
            half = len(args) // 2
            for part in (args[:half], args[half:]):
                self.event("content_block_delta", {
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": part}})
            self.event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        self.event("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": usage["output"]}})
        self.event("message_stop", {"type": "message_stop"})

    def answer_responses(self, n, body, reply, usage):
        model = body.get("model", "fake")
        content = reply.get("content", "")
        calls = calls_of(reply, n)
        rid = f"resp_fake_{n}"
        wire = {"input_tokens": usage["input"],
                "input_tokens_details": {"cached_tokens": usage["cached"],
                                         "cache_write_tokens": usage["write"]},
                "output_tokens": usage["output"],
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage["input"] + usage["output"]}
        items = []
        if content:
            items.append({"type": "message", "id": f"msg_{n}", "role": "assistant",
                          "status": "completed",
                          "content": [{"type": "output_text", "text": content,
                                       "annotations": []}]})
        for cid, name, args in calls:
            items.append({"type": "function_call", "id": f"fc_{cid}", "call_id": cid,
                          "name": name, "arguments": args, "status": "completed"})
        base = {"id": rid, "object": "response", "created_at": int(time.time()),
                "model": model, "status": "in_progress", "output": []}
        self.start_events()
        self.event("response.created", {"type": "response.created", "response": base})
        for i, item in enumerate(items):
            self.event("response.output_item.added", {"type": "response.output_item.added",
                                                      "output_index": i, "item": item})
            if item["type"] == "message":
                self.event("response.output_text.delta", {
                    "type": "response.output_text.delta", "item_id": item["id"],
                    "output_index": i, "content_index": 0, "delta": content})
            self.event("response.output_item.done", {"type": "response.output_item.done",
                                                     "output_index": i, "item": item})
        self.event("response.completed", {"type": "response.completed", "response": {
            **base, "status": "completed", "output": items, "usage": wire}})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = PORT_FILE + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, PORT_FILE)
    server.serve_forever()


if __name__ == "__main__":
    main()
