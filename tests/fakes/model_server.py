#!/usr/bin/env python3
"""A scripted OpenAI-compatible model server for the real-CLI tests, on 127.0.0.1.

    model_server.py SCRIPT.json PORT_FILE LOG.jsonl

Listens on an ephemeral port (written to PORT_FILE once it accepts connections) and answers
`POST /v1/chat/completions` (also `/chat/completions`) from SCRIPT, a JSON object:

    {"replies": [REPLY, ...], "then": REPLY}

The n-th request gets `replies[n]` (`then` once they run out; without `then`, a 500). With
`"match": [{"model": "fake-a", "contains": "text", "replies": [...], "then": REPLY}, ...]`, a
request whose model is `model` (when given) and whose messages contain `contains` is answered
from that entry's own replies instead (so concurrent conversations each get their script). A
REPLY is one of:

    {"content": "text", "tool_calls": [{"name": "bash", "arguments": {...}}],
     "usage": {"prompt_tokens": 1200, "completion_tokens": 80,
               "cached_tokens": 1000, "cache_write_tokens": 0}}
    {"status": 401, "message": "Incorrect API key provided"}
    {"status": 429, "retry_after": 1, "message": "Rate limit reached"}
    {"status": 500, "message": "boom"}
    {"hang": true}                      # never answers (the client times out)

Requests with `"stream": true` get server-sent events (content deltas, tool-call deltas, a
finish chunk, then a usage chunk, then `data: [DONE]`), the rest one JSON body. `usage` is
returned the way litellm-fronted OpenAI-compatible providers do: `prompt_tokens` (cache hits
included, cache writes not), `completion_tokens`, `total_tokens`,
`prompt_tokens_details.cached_tokens` plus `cache_read_input_tokens` for cache hits, and
`cache_creation_input_tokens` for cache writes. So a script's reply costs
(prompt_tokens - cached_tokens) x input + cached_tokens x cached_input + cache_write_tokens x
cache_write + completion_tokens x output.

Every request is appended to LOG as one JSON line: its index, path, the Authorization header
(so a test can check which key arrived), whether it streamed, the status served and the usage
served (null when it was an error), so a test compares the agents' accounting with the truth.
`GET /v1/models` lists `fake-model`.
"""
import json
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


def text_of(body):
    parts = []
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts.extend(p.get("text", "") for p in c if isinstance(p, dict))
    return "\n".join(parts)


def next_reply(body):
    """(request index, entry index or None, reply)."""
    text = text_of(body)
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


def wire_usage(u):
    prompt = int(u.get("prompt_tokens", 0))
    completion = int(u.get("completion_tokens", 0))
    out = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": int(u.get("cached_tokens", 0)), "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0,
                                      "rejected_prediction_tokens": 0},
    }
    if u.get("cached_tokens"):
        out["cache_read_input_tokens"] = int(u["cached_tokens"])
    if u.get("cache_write_tokens"):
        out["cache_creation_input_tokens"] = int(u["cache_write_tokens"])
    return out


def tool_calls(reply):
    calls = []
    for i, c in enumerate(reply.get("tool_calls", [])):
        args = c.get("arguments", {})
        calls.append({
            "id": c.get("id", f"call_{i}"),
            "type": "function",
            "function": {"name": c["name"],
                         "arguments": args if isinstance(args, str) else json.dumps(args)},
        })
    return calls


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, n, body, status, usage):
        entry = {
            "n": n,
            "match": self.match,
            "path": self.path,
            "authorization": self.headers.get("Authorization"),
            "model": body.get("model"),
            "stream": bool(body.get("stream")),
            "tools": [t.get("function", {}).get("name") for t in body.get("tools", []) or []],
            "messages": len(body.get("messages", [])),
            "status": status,
            "usage": usage,
        }
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

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self.send_json(200, {"object": "list", "data": [
                {"id": "fake-model", "object": "model", "owned_by": "bench"}]})
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        n, self.match, reply = next_reply(body)
        if reply.get("hang"):
            self.record(n, body, "hang", None)
            time.sleep(3600)
            return
        status = int(reply.get("status", 200))
        if status != 200:
            self.record(n, body, status, None)
            kinds = {401: "invalid_request_error", 429: "rate_limit_exceeded", 500: "server_error"}
            err = {"error": {"message": reply.get("message", f"error {status}"),
                             "type": kinds.get(status, "error"), "param": None,
                             "code": {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)}}
            headers = []
            if "retry_after" in reply:
                headers.append(("Retry-After", str(reply["retry_after"])))
            self.send_json(status, err, headers)
            return
        usage = wire_usage(reply.get("usage", {}))
        self.record(n, body, 200, usage)
        model = body.get("model", "fake-model")
        content = reply.get("content", "")
        calls = tool_calls(reply)
        finish = "tool_calls" if calls else "stop"
        created = int(time.time())
        rid = f"chatcmpl-fake-{n}"
        if not body.get("stream"):
            message = {"role": "assistant", "content": content or None}
            if calls:
                message["tool_calls"] = calls
            self.send_json(200, {
                "id": rid, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            })
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(delta, finish_reason=None, usage=None):
            chunk = {"id": rid, "object": "chat.completion.chunk", "created": created,
                     "model": model,
                     "choices": [] if usage else [
                         {"index": 0, "delta": delta, "finish_reason": finish_reason}]}
            if usage:
                chunk["usage"] = usage
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()

        event({"role": "assistant", "content": ""})
        # Content in a few pieces, as a real server streams it.
        step = max(1, len(content) // 3)
        for i in range(0, len(content), step):
            event({"content": content[i:i + step]})
        for i, c in enumerate(calls):
            event({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                   "function": {"name": c["function"]["name"], "arguments": ""}}]})
            event({"tool_calls": [{"index": i,
                                   "function": {"arguments": c["function"]["arguments"]}}]})
        event({}, finish_reason=finish)
        event(None, usage=usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = PORT_FILE + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.replace(tmp, PORT_FILE)
    server.serve_forever()


if __name__ == "__main__":
    main()
