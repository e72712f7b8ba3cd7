#!/usr/bin/env python3
"""An independent client of the unsandbox execution API, for interop tests.

Written from the API's documentation (spec section 3: headers and the
HMAC-SHA256 signature over "ts:METHOD:path:body"; section 4: the routes)
with the Python standard library only (urllib, hmac, hashlib, json). It
shares no code with the project's Lua client on purpose: it is a second
reading of the same documents. It drives every route of section 4 against
a running unsandboxd and prints one TAP line per check; the exit status is
0 only when every check passed.

  unsandbox_interop.py --url URL --pk PK --sk SK --pk2 PK2 --sk2 SK2
                       --data DIR [--lenient] [--vectors signing.json]

--lenient also drives the variant forms (query-signed paths, "" signed
for a {} body, the Lua and Python SDKs' alias routes and keys), which a
server in lenient mode must accept; without it the same variants must be
refused, since the strict mode is the default.
"""
import argparse
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def sign(secret, ts, method, path, body):
    """X-Signature: lowercase hex HMAC-SHA256 over "ts:METHOD:path:" + body bytes."""
    msg = ("%s:%s:%s:" % (ts, method, path)).encode("utf-8") + body
    return hmac.new(secret.encode("utf-8"), msg, hashlib.sha256).hexdigest()


def vectors(t, path):
    """This signer against the documented vectors (spec section 3.2)."""
    with open(path, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    n = 0
    for c in cases:
        fields = [c.get(k) for k in ("secret", "timestamp", "method", "path", "body")]
        if not all(isinstance(v, str) for v in fields):
            continue
        got = sign(fields[0], fields[1], fields[2], fields[3], fields[4].encode("utf-8"))
        t.ok(got == c["signature"], "signing vector %s" % c["name"], got)
        n += 1
    t.ok(n >= 8, "at least 8 signing vectors checked", n)


class Api:
    """One key pair; every request freshly signed."""

    def __init__(self, base, pk, sk):
        self.base, self.pk, self.sk = base.rstrip("/"), pk, sk

    def call(self, method, path, body=None, raw=None, ctype="application/json",
             query="", sign_query=False, sign_empty=False, py_style=False):
        if raw is not None:
            data = raw
        elif body is not None:
            seps = (", ", ": ") if py_style else (",", ":")
            data = json.dumps(body, separators=seps).encode("utf-8")
        else:
            data = b""
        ts = str(int(time.time()))
        signed_path = path + ("?" + query if sign_query and query else "")
        sig = sign(self.sk, ts, method, signed_path, b"" if sign_empty else data)
        url = self.base + path + ("?" + query if query else "")
        send = data if (data or method in ("POST", "PUT", "PATCH")) else None
        req = urllib.request.Request(url, data=send, method=method)
        req.add_header("Authorization", "Bearer " + self.pk)
        req.add_header("X-Timestamp", ts)
        req.add_header("X-Signature", sig)
        if data:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                status, text = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            status, text = err.code, err.read()
        try:
            doc = json.loads(text) if text else None
        except ValueError:
            doc = None
        return status, doc


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail=None):
        self.n += 1
        if cond:
            print("ok %d - %s" % (self.n, name))
        else:
            self.failed += 1
            print("not ok %d - %s%s" % (self.n, name, "" if detail is None else " # " + repr(detail)[:400]))
        sys.stdout.flush()
        return cond


def wait_job(api, job_id, limit_s=60):
    """Polls GET /jobs/{id} on the documented schedule until a final state."""
    delays = [0.3, 0.45, 0.7, 0.9, 0.65, 1.6, 2.0]
    deadline = time.time() + limit_s
    i = 0
    while time.time() < deadline:
        time.sleep(delays[min(i, len(delays) - 1)])
        i += 1
        status, doc = api.call("GET", "/jobs/" + job_id)
        if status == 200 and doc.get("status") in ("completed", "failed", "timeout", "cancelled"):
            return doc
    return None


def wait_log(api, sid, text, limit_s=30):
    deadline = time.time() + limit_s
    while time.time() < deadline:
        status, doc = api.call("GET", "/services/%s/logs" % sid)
        if status == 200 and text in doc.get("log", ""):
            return doc["log"]
        time.sleep(0.25)
    return None


def basics(t, api):
    req = urllib.request.Request(api.base + "/health")
    with urllib.request.urlopen(req, timeout=30) as resp:
        t.ok(resp.status == 200, "GET /health needs no signature")
    s, d = api.call("POST", "/keys/validate")
    t.ok(s == 200 and d.get("valid") is True, "POST /keys/validate signed over an empty body", d)
    s, d = api.call("POST", "/execute", {"language": "bash", "code": "echo hi"}, py_style=True)
    t.ok(s == 200 and d.get("stdout") == "hi\n" and d.get("success") is True,
         "POST /execute (Python-style separators) carries success true", d)
    s, d = api.call("POST", "/execute", {"language": "bash", "code": "exit 3"})
    t.ok(s == 200 and d.get("exit_code") == 3 and d.get("success") is False,
         "a non-zero exit code gives success false", d)


def sessions(t, api):
    s, d = api.call("POST", "/sessions", {"network_mode": "zerotrust", "ttl": 3600, "shell": "bash"})
    t.ok(s in (200, 201) and d.get("session_id"), "POST /sessions", d)
    sid = d["session_id"]
    s, d = api.call("POST", "/sessions/%s/shell" % sid, {"command": "echo data > f.txt"})
    t.ok(s == 200 and d.get("exit_code") == 0, "session shell writes a file", d)
    s, d = api.call("POST", "/sessions/%s/freeze" % sid, {})
    t.ok(s == 400 and "multiplexer" in d.get("message", ""),
         "freeze without a multiplexer is 400 (section 4.2, 6)", (s, d))
    s, d = api.call("POST", "/sessions", {"multiplexer": "tmux"})
    mux = d.get("session_id")
    s, d = api.call("POST", "/sessions/%s/freeze" % mux, {})
    t.ok(s == 200 and d.get("status") == "frozen", "POST /sessions/{id}/freeze (a tmux session)", d)
    s, d = api.call("POST", "/sessions/%s/shell" % mux, {"command": "true"})
    t.ok(s == 409, "a frozen session refuses commands with 409", (s, d))
    s, d = api.call("POST", "/sessions/%s/unfreeze" % mux, {})
    t.ok(s == 200 and d.get("status") == "running", "POST /sessions/{id}/unfreeze", d)
    s, d = api.call("POST", "/sessions/%s/shell" % mux, {"command": "echo back"})
    t.ok(s == 200 and d.get("stdout") == "back\n", "the unfrozen session runs commands again", d)
    api.call("DELETE", "/sessions/" + mux)
    s, d = api.call("POST", "/sessions/%s/boost" % sid, {"vcpu": 2})
    t.ok(s == 200 and d.get("vcpu") == 2, "POST /sessions/{id}/boost", d)
    s, d = api.call("POST", "/sessions/%s/boost" % sid, {"vcpu": 9})
    t.ok(s == 400, "boost refuses vcpu 9", (s, d))
    s, d = api.call("POST", "/sessions/%s/boost" % sid, {"vcpu": "2"})
    t.ok(s == 400, "boost refuses a string vcpu", (s, d))
    s, d = api.call("POST", "/sessions/%s/unboost" % sid, {})
    t.ok(s == 200 and d.get("vcpu") == 1, "POST /sessions/{id}/unboost", d)
    for route in ("freeze", "unfreeze", "boost", "unboost"):
        s, d = api.call("POST", "/sessions/unsb-session-nope/%s" % route, {})
        t.ok(s == 404, "%s of an unknown session is 404" % route, (s, d))
    s, d = api.call("POST", "/sessions/%s/freeze" % sid, raw=b"[1]")
    t.ok(s == 400, "freeze refuses a body that is not an object", (s, d))
    return sid


def terminal(t, api, sid):
    """The WebSocket terminal of section 5.4 (ws_client.py: standard library
    only, signed like every session route), in both modes."""
    import ws_client
    w = ws_client.attach(api.base, api.pk, api.sk, sid)
    ok = t.ok(w.status == 101, "GET /sessions/{id}/shell upgrades to a WebSocket", w.status)
    if ok:
        w.text({"type": "resize", "cols": 90, "rows": 20})
        w.keys("stty size; cat f.txt; exit 4\n")
        out, texts, code = w.until_end(60)
        t.ok(b"20 90" in out and b"data" in out, "the terminal resizes and sees the session's files",
             out[-300:])
        t.ok(texts == [{"type": "exit", "exit_code": 4}] and code == 1000,
             "the terminal reports the shell's exit, then closes", (texts, code))
    w.shut()
    w = ws_client.attach(api.base, api.pk, api.sk, sid, X_Signature="0" * 64)
    t.ok(w.status == 401, "an unsigned terminal handshake is 401", w.status)
    w.shut()


def snapshots(t, api, sid):
    s, d = api.call("POST", "/sessions/%s/snapshot" % sid, {"name": "s1", "hot": False})
    t.ok(s in (200, 201) and d.get("id"), "POST /sessions/{id}/snapshot", d)
    s, d = api.call("POST", "/snapshots", {"source_type": "session", "source_id": sid, "name": "c"})
    t.ok(s in (200, 201) and d.get("id"), "POST /snapshots {source_type, source_id}", d)
    snap = d["id"]
    s, d = api.call("POST", "/snapshots", {"session_id": sid})
    t.ok(s in (200, 201) and d.get("snapshot_id"), "POST /snapshots {session_id}", d)
    for bad in ({}, {"source_type": "session"}, {"session_id": sid, "service_id": "x"},
                {"source_type": "vm", "source_id": sid},
                {"source_type": "session", "source_id": sid, "session_id": sid}):
        s, d = api.call("POST", "/snapshots", bad)
        t.ok(s == 400, "POST /snapshots refuses %s" % json.dumps(bad), (s, d))
    s, d = api.call("POST", "/snapshots", {"session_id": "unsb-session-nope"})
    t.ok(s == 404, "POST /snapshots of an unknown session is 404", (s, d))
    s, d = api.call("POST", "/snapshots", {"session_id": "../../etc"})
    t.ok(s == 404, "POST /snapshots with a hostile id is 404", (s, d))
    s, d = api.call("POST", "/snapshots/%s/clone" % snap, {"type": "session"})
    t.ok(s in (200, 201) and d.get("session_id"), "POST /snapshots/{id}/clone to a session", d)
    clone = d.get("session_id")
    s, d = api.call("POST", "/sessions/%s/shell" % clone, {"command": "cat f.txt"})
    t.ok(s == 200 and d.get("stdout") == "data\n", "the cloned session has the snapshot's files", d)
    s, d = api.call("POST", "/snapshots/%s/clone" % snap, {"type": "vm"})
    t.ok(s == 400, "clone refuses an unknown type", (s, d))
    s, d = api.call("POST", "/snapshots/%s/clone" % snap, {})
    t.ok(s == 400, "clone needs a type", (s, d))
    s, d = api.call("POST", "/snapshots/unsb-snapshot-nope/clone", {"type": "session"})
    t.ok(s == 404, "clone of an unknown snapshot is 404", (s, d))
    api.call("DELETE", "/sessions/" + clone)
    return snap


def until(fn, limit_s=30):
    """fn() until it returns something true (polled, bounded)."""
    deadline = time.time() + limit_s
    while True:
        v = fn()
        if v or time.time() > deadline:
            return v
        time.sleep(0.25)


FETCH = ("python3 -c 'import urllib.request as u;"
         "print(u.urlopen(\"http://127.0.0.1:%d/\", timeout=5).read().decode().strip())'")


def living(t, api):
    """Sessions and services are long-lived sandboxes (sections 1, 4.2, 4.3)."""
    s, d = api.call("POST", "/sessions", {})
    sid = d.get("session_id")
    s, d = api.call("POST", "/sessions/%s/shell" % sid, {
        "command": "cd /tmp && echo living > index.html && "
                   "(python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 &); echo up"})
    t.ok(s == 200 and d.get("stdout") == "up\n", "a session command starts a background web server", d)
    got = until(lambda: (lambda r: r if r.get("exit_code") == 0 else None)(
        api.call("POST", "/sessions/%s/shell" % sid, {"command": FETCH % 8765})[1]))
    t.ok(got and got.get("stdout") == "living\n", "the next command reaches it", got)
    s, d = api.call("POST", "/sessions/%s/shell" % sid, {"command": "cat /tmp/index.html"})
    t.ok(d.get("stdout") == "living\n", "a file in /tmp survives between commands", d)
    api.call("DELETE", "/sessions/" + sid)

    s, d = api.call("POST", "/sessions", {"ttl": 3})
    short = d.get("session_id")
    t.ok(s in (200, 201) and 1 <= d.get("remaining_ttl", 0) <= 3, "a ttl=3 session", d)
    gone = until(lambda: api.call("GET", "/sessions/" + short)[0] == 404, 30)
    t.ok(gone, "is gone after its ttl")

    s, d = api.call("POST", "/sessions", {"shell": "python3"})
    import ws_client
    w = ws_client.attach(api.base, api.pk, api.sk, d.get("session_id"))
    w.keys("print(2 ** 10 + 7)\n")
    t.ok(w.status == 101 and w.wait_for("1031") is not None, "a python3 session's terminal is its REPL")
    w.shut()
    api.call("DELETE", "/sessions/" + d.get("session_id"))

    s, d = api.call("POST", "/services", {"name": "daemon", "ports": [8766], "bootstrap_content":
                                          "cd /tmp && echo daemonised > index.html && "
                                          "nohup python3 -m http.server 8766 >/dev/null 2>&1 &"})
    svc = d.get("service_id")
    urls = d.get("urls") or []
    t.ok(s in (200, 201) and len(urls) == 1 and urls[0].get("port") == 8766 and
         urls[0].get("url", "").startswith("http://127.0.0.1:"), "a service's port is forwarded (urls)", d)

    def inside():
        s2, j = api.call("POST", "/services/%s/execute" % svc, {"command": FETCH % 8766})
        job = wait_job(api, j["job_id"]) if s2 == 202 else None
        return job if job and job.get("exit_code") == 0 else None
    job = until(inside)
    t.ok(job and job.get("stdout") == "daemonised\n", "its daemon answers execute on localhost", job)

    def outside():
        try:
            with urllib.request.urlopen(urls[0]["url"] + "/", timeout=5) as resp:
                return resp.read().decode().strip()
        except (OSError, ValueError, IndexError, KeyError):
            return None
    t.ok(until(outside) == "daemonised", "and the host, at its forwarded address")
    s, d = api.call("GET", "/services/" + svc)
    t.ok(d.get("state") == "running", "a bootstrap that daemonised keeps the service running", d)
    api.call("DELETE", "/services/" + svc)
    t.ok(outside() is None, "the forward closes with the service")


TICKER = "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done"


def service_power(t, api):
    s, d = api.call("POST", "/services", {"name": "ticker", "bootstrap_content": TICKER,
                                          "network_mode": "zerotrust"})
    t.ok(s in (200, 201) and d.get("service_id"), "POST /services", d)
    svc = d["service_id"]
    t.ok(wait_log(api, svc, "tick 3") is not None, "the bootstrap runs")
    s, d = api.call("POST", "/services/%s/freeze" % svc, {})
    t.ok(s == 200 and d.get("state") == "frozen", "POST /services/{id}/freeze", d)
    _, a = api.call("GET", "/services/%s/logs" % svc)
    time.sleep(1.5)
    _, b = api.call("GET", "/services/%s/logs" % svc)
    t.ok(a["log"] == b["log"], "a frozen bootstrap prints nothing more")
    s, d = api.call("POST", "/services/%s/snapshot" % svc, {})
    t.ok(s in (200, 201), "a frozen service can be snapshotted", (s, d))
    _, a = api.call("GET", "/services/%s/logs" % svc)
    time.sleep(1.0)
    _, b = api.call("GET", "/services/%s/logs" % svc)
    t.ok(a["log"] == b["log"], "and stays frozen after the snapshot")
    s, d = api.call("POST", "/services/%s/execute" % svc, {"command": "echo x"})
    t.ok(s == 409, "a frozen service refuses execute with 409", (s, d))
    s, d = api.call("POST", "/services/%s/unfreeze" % svc, {})
    t.ok(s == 200 and d.get("state") == "running", "POST /services/{id}/unfreeze", d)
    last = b["log"].strip().split("\n")[-1]
    n = int(last.split()[-1])
    t.ok(wait_log(api, svc, "tick %d" % (n + 2), 20) is not None, "the thawed bootstrap goes on")
    s, d = api.call("POST", "/services/%s/lock" % svc, {})
    t.ok(s == 200 and d.get("locked") is True, "POST /services/{id}/lock", d)
    s, d = api.call("DELETE", "/services/" + svc)
    t.ok(s == 409, "a locked service refuses DELETE", (s, d))
    s, d = api.call("POST", "/services/%s/unlock" % svc, {})
    t.ok(s == 200 and d.get("locked") is False, "POST /services/{id}/unlock", d)
    s, d = api.call("PATCH", "/services/" + svc, {"vcpu": 2})
    t.ok(s == 200 and d.get("vcpu") == 2, "PATCH vcpu", d)
    for bad in ({"vcpu": 9}, {"vcpu": 0}, {}, {"show_freeze_page": "yes"}):
        s, d = api.call("PATCH", "/services/" + svc, bad)
        t.ok(s == 400, "PATCH refuses %s" % json.dumps(bad), (s, d))
    s, d = api.call("PATCH", "/services/" + svc, {"show_freeze_page": True})
    t.ok(s == 200 and d.get("show_freeze_page") is True, "PATCH show_freeze_page", d)
    s, d = api.call("PATCH", "/services/" + svc, {"unfreeze_on_demand": True})
    t.ok(s == 200 and d.get("unfreeze_on_demand") is True, "PATCH unfreeze_on_demand", d)
    api.call("POST", "/services/%s/freeze" % svc, {})
    s, d = api.call("POST", "/services/%s/execute" % svc, {"command": "echo woke"})
    job = wait_job(api, d["job_id"]) if s == 202 else None
    t.ok(job is not None and job.get("stdout") == "woke\n",
         "unfreeze_on_demand: execute thaws a frozen service", (s, d, job))
    s, d = api.call("GET", "/services/" + svc)
    t.ok(s == 200 and d.get("state") == "running", "and the service runs again", d)
    s, d = api.call("PATCH", "/services/unsb-service-nope", {"vcpu": 2})
    t.ok(s == 404, "PATCH of an unknown service is 404", (s, d))
    return svc


def domains(t, api, svc):
    steps = [({"add": ["a.example.com"]}, ["a.example.com"]),
             ({"add": ["b.example.com", "a.example.com"]}, ["a.example.com", "b.example.com"]),
             ({"remove": ["a.example.com"]}, ["b.example.com"]),
             ({"custom_domains": ["c.example.com"]}, ["c.example.com"])]
    for body, want in steps:
        s, d = api.call("PUT", "/services/%s/domains" % svc, body)
        t.ok(s == 200 and d.get("domains") == want, "PUT domains %s" % json.dumps(body), d)
    for bad in ({}, {"add": ["bad domain"]}, {"add": "a.example.com"},
                {"add": ["x.example.com"], "remove": ["c.example.com"]}, {"add": ["a" * 300]}):
        s, d = api.call("PUT", "/services/%s/domains" % svc, bad)
        t.ok(s == 400, "PUT domains refuses %s" % json.dumps(bad)[:60], (s, d))


def read_all(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def env_vault(t, api, svc, data_dir):
    s, d = api.call("GET", "/services/%s/env" % svc)
    t.ok(s == 200 and d.get("has_vault") is False, "GET env without a vault", d)
    text = "SECRET_A=hello-vault\n# a comment\n\nexport B='two words'\r\n"
    s, d = api.call("PUT", "/services/%s/env" % svc, raw=text.encode(), ctype="text/plain")
    t.ok(s == 200 and d.get("count") == 2, "PUT env (text/plain, signed over the raw text)", d)
    s, d = api.call("GET", "/services/%s/env" % svc)
    t.ok(s == 200 and d.get("has_vault") is True and d.get("count") == 2 and "hello-vault" not in json.dumps(d),
         "GET env shows metadata only", d)
    s, d = api.call("POST", "/services/%s/execute" % svc, {"command": "echo \"$SECRET_A/$B\""})
    job = wait_job(api, d["job_id"]) if s == 202 else None
    t.ok(job is not None and job.get("stdout") == "hello-vault/two words\n",
         "the vault's variables reach the service's runs", job)
    s, d = api.call("POST", "/services/%s/env/export" % svc)
    t.ok(s == 200 and d.get("env") == text, "POST env/export (empty body) gives the text back", d)
    s, d = api.call("POST", "/services/%s/env/export" % svc, {})
    t.ok(s == 200 and d.get("env") == text, "POST env/export ({} body)", d)
    stored = b"".join(read_all(os.path.join(data_dir, n)) for n in os.listdir(data_dir)
                      if n.startswith("unsandboxd.db"))
    # (a run's output is stored with its job, so look for the .env line itself)
    t.ok(len(stored) > 0 and b"SECRET_A=hello-vault" not in stored, "the vault is encrypted at rest")
    key = os.path.join(data_dir, "vault.key")
    t.ok(os.path.exists(key) and (os.stat(key).st_mode & 0o777) == 0o600, "vault.key is 0600")
    for name, body, want in (("oversized", b"A=" + b"x" * 70000, 413),
                             ("a line without =", b"A=1\njunk\n", 400),
                             ("a bad name", b"1A=x\n", 400),
                             ("a NUL byte", b"A=x\x00y\n", 400)):
        s, d = api.call("PUT", "/services/%s/env" % svc, raw=body, ctype="text/plain")
        t.ok(s == want, "PUT env refuses %s with %d" % (name, want), (s, d))
    s, d = api.call("POST", "/services/%s/env/export" % svc)
    t.ok(s == 200 and d.get("env") == text, "a refused PUT leaves the vault as it was", d)
    s, d = api.call("DELETE", "/services/%s/env" % svc)
    t.ok(s == 200, "DELETE env", (s, d))
    s, d = api.call("DELETE", "/services/%s/env" % svc)
    t.ok(s == 404, "DELETE env again is 404", (s, d))
    s, d = api.call("POST", "/services/%s/env/export" % svc)
    t.ok(s == 404, "export without a vault is 404", (s, d))
    s, d = api.call("PUT", "/services/unsb-service-nope/env", raw=b"A=1", ctype="text/plain")
    t.ok(s == 404, "PUT env of an unknown service is 404", (s, d))


def redeploy_and_logs(t, api, svc):
    s, d = api.call("POST", "/services/%s/redeploy" % svc,
                    {"bootstrap_content": "echo redeployed-now; sleep 60",
                     "input_files": [{"filename": "r.txt", "content": "cmVkZXBsb3k="}]})
    t.ok(s == 200, "POST /services/{id}/redeploy with a new script", (s, d))
    t.ok(wait_log(api, svc, "redeployed-now") is not None, "the new bootstrap runs")
    s, d = api.call("POST", "/services/%s/execute" % svc, {"command": "cat r.txt"})
    job = wait_job(api, d["job_id"]) if s == 202 else None
    t.ok(job is not None and job.get("stdout") == "redeploy", "redeploy placed its input files", job)
    s, d = api.call("POST", "/services/%s/redeploy" % svc, {})
    t.ok(s == 200, "redeploy with an empty body restarts the stored bootstrap", (s, d))
    s, d = api.call("POST", "/services/%s/redeploy" % svc, {"bootstrap": "https://example.com/x.sh"})
    t.ok(s == 400, "redeploy refuses a bootstrap URL", (s, d))
    s, d = api.call("POST", "/services/unsb-service-nope/redeploy", {})
    t.ok(s == 404, "redeploy of an unknown service is 404", (s, d))
    deadline, s, d = time.time() + 30, 0, {}
    while time.time() < deadline and not (s == 200 and "redeployed-now" in d.get("log", "")):
        s, d = api.call("GET", "/services/%s/logs" % svc, query="all=true")
        time.sleep(0.2)
    t.ok(s == 200 and "redeployed-now" in d.get("log", ""), "GET logs?all=true signed over the path alone", d)


def service_snapshots(t, api, svc):
    s, d = api.call("POST", "/services/%s/snapshot" % svc, {"hot": True})
    t.ok(s in (200, 201) and d.get("id"), "POST /services/{id}/snapshot", d)
    s, d = api.call("POST", "/snapshots", {"service_id": svc, "ephemeral": False})
    t.ok(s in (200, 201) and d.get("snapshot_id"), "POST /snapshots {service_id}", d)
    snap = d["snapshot_id"]
    s, d = api.call("POST", "/snapshots/%s/clone" % snap, {"type": "service", "name": "svc-clone",
                                                             "ports": [8080]})
    t.ok(s in (200, 201) and d.get("service_id") and d.get("ports") == [8080],
         "POST /snapshots/{id}/clone to a service", d)
    clone = d.get("service_id")
    s, d = api.call("POST", "/services/%s/execute" % clone, {"command": "cat r.txt"})
    job = wait_job(api, d["job_id"]) if s == 202 else None
    t.ok(job is not None and job.get("stdout") == "redeploy", "the cloned service has the files", job)
    s, d = api.call("POST", "/snapshots/%s/clone" % snap, {"type": "service", "ports": [70000]})
    t.ok(s == 400, "clone refuses a bad port", (s, d))
    return snap, clone


def ids(doc):
    return [i["id"] for i in (doc or {}).get("images", [])]


def images(t, api, api2, svc, snap):
    s, d = api.call("POST", "/images", {"source_type": "service", "source_id": svc,
                                        "name": "img-svc", "description": "from a service"})
    t.ok(s in (200, 201) and d.get("id") and d.get("visibility") == "private", "POST /images from a service", d)
    img = d["id"]
    s, d = api.call("POST", "/images", {"source_type": "snapshot", "source_id": snap})
    t.ok(s in (200, 201) and d.get("id"), "POST /images from a snapshot", d)
    img2 = d["id"]
    for bad, want in (({"source_type": "vm", "source_id": svc}, 400), ({"source_type": "service"}, 400),
                      ({"source_type": "service", "source_id": "unsb-service-nope"}, 404),
                      ({"source_type": "snapshot", "source_id": "../x"}, 404)):
        s, d = api.call("POST", "/images", bad)
        t.ok(s == want, "POST /images refuses %s" % json.dumps(bad), (s, d))
    s, d = api.call("GET", "/images")
    t.ok(s == 200 and img in ids(d) and img2 in ids(d) and d.get("count") == len(ids(d)), "GET /images", d)
    s, d = api.call("GET", "/images/owned")
    t.ok(s == 200 and img in ids(d), "GET /images/owned", d)
    s, d = api.call("GET", "/images/public")
    t.ok(s == 200 and img not in ids(d), "a private image is not public", d)
    s, d = api.call("GET", "/images/" + img)
    t.ok(s == 200 and d.get("owner_api_key") == api.pk, "GET /images/{id}", d)
    s, d = api2.call("GET", "/images/" + img)
    t.ok(s == 404, "another key cannot see a private image", (s, d))
    s, d = api2.call("POST", "/images/%s/grant" % img, {"trusted_api_key": api2.pk})
    t.ok(s == 404, "another key cannot grant itself access", (s, d))
    s, d = api.call("POST", "/images/%s/grant" % img, {"trusted_api_key": api2.pk})
    t.ok(s == 200 and d.get("access") == [api2.pk], "POST /images/{id}/grant", d)
    s, d = api.call("GET", "/images/%s/trusted" % img)
    t.ok(s == 200 and all(d.get(f) == [api2.pk] for f in ("trusted_api_keys", "trusted_keys", "trusted")),
         "GET /images/{id}/trusted (under each name an SDK reads)", d)
    s, d = api2.call("GET", "/images/shared")
    t.ok(s == 200 and img in ids(d), "GET /images/shared of the trusted key", d)
    s, d = api2.call("GET", "/images/" + img)
    t.ok(s == 200 and d.get("access") == [], "the trusted key sees the image, not its access list", d)
    s, d = api2.call("POST", "/images/%s/spawn" % img, {"name": "spawned", "ports": "80,443",
                                                         "bootstrap": "sleep 60"})
    t.ok(s in (200, 201) and d.get("service_id") and d.get("ports") == [80, 443],
         "POST /images/{id}/spawn (ports as a comma string)", d)
    spawned = d.get("service_id")
    s, d = api2.call("POST", "/services/%s/execute" % spawned, {"command": "cat r.txt"})
    job = wait_job(api2, d["job_id"]) if s == 202 else None
    t.ok(job is not None and job.get("stdout") == "redeploy", "the spawned service has the image's files", job)
    s, d = api2.call("POST", "/images/%s/spawn" % img, {"ports": "80,x"})
    t.ok(s == 400, "spawn refuses bad ports", (s, d))
    s, d = api2.call("POST", "/images/%s/clone" % img, {"name": "mine-now"})
    t.ok(s in (200, 201) and d.get("owner_api_key") == api2.pk, "POST /images/{id}/clone", d)
    s, d = api.call("POST", "/images/%s/revoke" % img, {"trusted_api_key": api2.pk})
    t.ok(s == 200 and d.get("access") == [], "POST /images/{id}/revoke", d)
    s, d = api.call("POST", "/images/%s/revoke" % img, {"trusted_api_key": api2.pk})
    t.ok(s == 400, "revoking an untrusted key is 400", (s, d))
    s, d = api2.call("GET", "/images/" + img)
    t.ok(s == 404, "a revoked key no longer sees the image", (s, d))
    s, d = api.call("POST", "/images/%s/visibility" % img, {"visibility": "public"})
    t.ok(s == 200 and d.get("visibility") == "public", "POST /images/{id}/visibility", d)
    s, d = api2.call("GET", "/images/public")
    t.ok(s == 200 and img in ids(d), "a public image is listed to every key", d)
    s, d = api.call("POST", "/images/%s/visibility" % img, {"visibility": "everyone"})
    t.ok(s == 400, "visibility refuses an unknown value", (s, d))
    s, d = api.call("POST", "/images/%s/lock" % img, {})
    t.ok(s == 200 and d.get("locked") is True, "POST /images/{id}/lock", d)
    s, d = api.call("DELETE", "/images/" + img)
    t.ok(s == 409, "a locked image refuses DELETE", (s, d))
    s, d = api.call("POST", "/images/%s/unlock" % img, {})
    t.ok(s == 200 and d.get("locked") is False, "POST /images/{id}/unlock", d)
    # another key's image: the same 404 whether the new owner's key exists
    s1, d1 = api2.call("POST", "/images/%s/transfer" % img, {"to_api_key": "unsb-pk-none-none-none-none"})
    s2, d2 = api2.call("POST", "/images/%s/transfer" % img, {"to_api_key": api.pk})
    t.ok(s1 == s2 == 404 and d1 == d2, "a transfer of another's image tells nothing of the key", (s1, d1, s2, d2))
    s, d = api.call("POST", "/images/%s/transfer" % img, {"to_api_key": "not a key"})
    t.ok(s == 400, "a transfer to a malformed key is refused", (s, d))
    s, d = api.call("POST", "/images/%s/transfer" % img, {"to_api_key": api2.pk})
    t.ok(s == 200 and d.get("owner_api_key") == api2.pk, "POST /images/{id}/transfer", d)
    s, d = api.call("DELETE", "/images/" + img)
    t.ok(s == 404, "the old owner can no longer delete it", (s, d))
    s, d = api2.call("DELETE", "/images/" + img)
    t.ok(s == 200, "the new owner deletes it", (s, d))
    s, d = api.call("DELETE", "/images/" + img2)
    t.ok(s == 200, "DELETE /images/{id}", (s, d))
    api2.call("DELETE", "/services/" + spawned)


def strict_refusals(t, api, svc, sid):
    s, d = api.call("GET", "/services/%s/logs" % svc, query="all=true", sign_query=True)
    t.ok(s == 401, "strict: a signature over path and query is refused", (s, d))
    s, d = api.call("POST", "/sessions/%s/freeze" % sid, {}, sign_empty=True)
    t.ok(s == 401, "strict: \"\" signed for a {} body is refused", (s, d))
    s, d = api.call("POST", "/sessions/%s/execute" % sid, {"command": "true"})
    t.ok(s in (404, 405), "strict: the /sessions/{id}/execute alias is not served", (s, d))
    s, d = api.call("POST", "/images/publish", {"source_type": "service", "source_id": svc})
    t.ok(s in (404, 405), "strict: the /images/publish alias is not served", (s, d))
    s, d = api.call("POST", "/sessions", {"network": "semitrusted"})
    t.ok(s in (200, 201) and d.get("network_mode") == "zerotrust", "strict: the key 'network' is ignored", d)
    if s in (200, 201):
        api.call("DELETE", "/sessions/" + d["session_id"])


def lenient(t, api, api2, svc, sid, snap):
    s, d = api.call("GET", "/services/%s/logs" % svc, query="all=true", sign_query=True)
    t.ok(s == 200 and "log" in d, "lenient: a signature over path and query is accepted", (s, d))
    s, d = api.call("POST", "/sessions/%s/unfreeze" % sid, {}, sign_empty=True)
    t.ok(s == 200, "lenient: \"\" signed for a {} body is accepted", (s, d))
    s, d = api.call("POST", "/sessions/%s/unboost" % sid, {})
    t.ok(s == 200, "lenient: the canonical signature still works", (s, d))
    s, d = api.call("POST", "/sessions/%s/freeze" % sid, {"x": 1}, sign_empty=True)
    t.ok(s == 401, "lenient: \"\" is accepted only for a body of exactly {}", (s, d))
    s, d = api.call("POST", "/sessions/%s/execute" % sid, {"command": "echo via-alias"})
    t.ok(s == 200 and d.get("stdout") == "via-alias\n", "lenient: POST /sessions/{id}/execute", d)
    s, d = api.call("POST", "/sessions", {"network": "semitrusted"})
    t.ok(s in (200, 201) and d.get("network_mode") == "semitrusted", "lenient: session key 'network'", d)
    if s in (200, 201):
        api.call("DELETE", "/sessions/" + d["session_id"])
    s, d = api.call("POST", "/sessions", {"network": "open"})
    t.ok(s == 400, "lenient: a bad 'network' is still refused", (s, d))
    s, d = api.call("POST", "/services", {"name": "aliased", "domains": ["x.example.com"]})
    t.ok(s in (200, 201) and d.get("domains") == ["x.example.com"], "lenient: service key 'domains'", d)
    other = d.get("service_id")
    s, d = api.call("PUT", "/services/%s/domains" % other, {"domains": ["y.example.com"]})
    t.ok(s == 200 and d.get("domains") == ["y.example.com"], "lenient: PUT domains {domains}", d)
    s, d = api.call("POST", "/services/%s/env" % other, {"env": "A=1\nB=2\n"})
    t.ok(s == 200 and d.get("count") == 2, "lenient: POST env {env} (Python SDK)", d)
    s, d = api.call("GET", "/services/%s/env" % other, query="format=export", sign_query=True)
    t.ok(s == 200 and d.get("env") == "A=1\nB=2\n", "lenient: GET env?format=export", d)
    api.call("DELETE", "/services/" + other)
    s, d = api.call("POST", "/snapshots/%s/clone" % snap, {"clone_type": "session"})
    t.ok(s in (200, 201) and d.get("session_id"), "lenient: clone {clone_type}", d)
    if s in (200, 201):
        api.call("DELETE", "/sessions/" + d["session_id"])
    s, d = api.call("POST", "/images/publish", {"source_type": "service", "source_id": svc})
    t.ok(s in (200, 201) and d.get("id"), "lenient: POST /images/publish", d)
    img = d["id"]
    s, d = api.call("GET", "/images", query="filter=owned", sign_query=True)
    t.ok(s == 200 and img in ids(d), "lenient: GET /images?filter=owned", d)
    s, d = api.call("POST", "/images/%s/access" % img, {"api_key": api2.pk})
    t.ok(s == 200 and d.get("access") == [api2.pk], "lenient: POST /images/{id}/access", d)
    s, d = api.call("GET", "/images/%s/access" % img)
    t.ok(s == 200 and d.get("trusted_api_keys") == [api2.pk], "lenient: GET /images/{id}/access", d)
    s, d = api.call("DELETE", "/images/%s/access/%s" % (img, api2.pk))
    t.ok(s == 200 and d.get("access") == [], "lenient: DELETE /images/{id}/access/{key}", d)
    s, d = api.call("DELETE", "/images/%s/access/%s" % ("unsb-image-nope", api2.pk))
    t.ok(s == 404, "lenient: access of an unknown image is 404", (s, d))
    api.call("DELETE", "/images/" + img)


def main():
    p = argparse.ArgumentParser()
    for opt in ("--url", "--pk", "--sk", "--pk2", "--sk2", "--data"):
        p.add_argument(opt, required=True)
    p.add_argument("--lenient", action="store_true")
    p.add_argument("--vectors", help="signing.json: check this signer first")
    a = p.parse_args()
    api, api2 = Api(a.url, a.pk, a.sk), Api(a.url, a.pk2, a.sk2)
    t = Tap()
    if a.vectors:
        vectors(t, a.vectors)
    basics(t, api)
    living(t, api)
    sid = sessions(t, api)
    terminal(t, api, sid)
    snap = snapshots(t, api, sid)
    svc = service_power(t, api)
    domains(t, api, svc)
    env_vault(t, api, svc, a.data)
    redeploy_and_logs(t, api, svc)
    ssnap, clone = service_snapshots(t, api, svc)
    images(t, api, api2, svc, ssnap)
    if a.lenient:
        lenient(t, api, api2, svc, sid, snap)
    else:
        strict_refusals(t, api, svc, sid)
    for path in ("/services/" + clone, "/services/" + svc, "/sessions/" + sid):
        s, _ = api.call("DELETE", path)
        t.ok(s == 200, "DELETE " + path.split("/")[1])
    print("1..%d" % t.n)
    print("# %d passed, %d failed" % (t.n - t.failed, t.failed))
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
