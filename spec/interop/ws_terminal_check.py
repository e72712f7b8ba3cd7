#!/usr/bin/env python3
"""Checks unsandboxd's WebSocket terminal (GET /sessions/{id}/shell, spec
section 5.4) from outside, with ws_client.py (Python standard library
only). Prints one TAP line per check; exit status 0 only when all passed.

  ws_terminal_check.py --url URL --pk PK --sk SK --pk2 PK2 --sk2 SK2 --pid PID [GROUP...]

GROUP: basic, refusals, hostile, backpressure, cycles, lifecycle, living,
lenient (a server started with --lenient), stop (default: all but lenient;
stop stops the server, so it comes last).
Shells run markers (`sleep 4242`-like commands with a unique word) so
the check can prove, from /proc, that nothing of a terminal outlives it.
Every loop is bounded in count and time.
"""
import argparse
import os
import socket
import struct
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ws_client import Closed, accept_of, api, attach, frame  # noqa: E402


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, what, detail=None):
        self.n += 1
        if not cond:
            self.failed += 1
        line = "%s %d - %s" % ("ok" if cond else "not ok", self.n, what)
        if not cond and detail is not None:
            line += "  # got %r" % (detail,)
        print(line, flush=True)
        return cond


def marker():
    return "mk" + uuid.uuid4().hex[:12]


def procs(word):
    """How many processes on this machine have word in their command line."""
    n = 0
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                if word.encode() in f.read():
                    n += 1
        except OSError:
            pass
    return n


def gone(word, limit_s=15):
    """True once no process carries word (polled, bounded)."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if procs(word) == 0:
            return True
        time.sleep(0.2)
    return procs(word) == 0


def healthy(a):
    st, body = api(a.url, a.pk, a.sk, "GET", "/health")
    return st == 200 and isinstance(body, dict) and body.get("status") == "ok"


def new_session(a, **body):
    st, s = api(a.url, a.pk, a.sk, "POST", "/sessions", body)
    assert st == 201, (st, s)
    return s["id"]


def start_marked(w, word, cmd):
    """Runs cmd ("sleep": a sleep named word; "yes": `yes word`) in the
    background in the shell and waits until the shell says it started."""
    job = "(exec -a %s sleep 3000)" % word if cmd == "sleep" else "yes %s" % word
    w.keys("%s & echo started-$((40+2))-%s\n" % (job, word[:4]))
    return w.wait_for("started-42-" + word[:4]) is not None


# --------------------------------------------------------------- groups

def basic(t, a):
    sid = new_session(a)
    w = attach(a.url, a.pk, a.sk, sid)
    t.ok(w.status == 101, "attach: 101", w.status)
    key = None
    t.ok(w.headers.get("upgrade", "").lower() == "websocket", "Upgrade: websocket", w.headers)
    w.keys("echo hi-$((6*7)); exit 3\n")
    out, texts, code = w.until_end(30)
    t.ok(b"hi-42" in out, "the shell's output arrives as binary frames", out[-200:])
    t.ok(texts == [{"type": "exit", "exit_code": 3}], "then {\"type\":\"exit\",\"exit_code\":3}", texts)
    t.ok(code == 1000, "then a close 1000", code)
    w.shut()

    w = attach(a.url, a.pk, a.sk, sid)
    w.keys("stty size; echo sz-$((1+1))\n")
    first = w.wait_for("sz-2")
    t.ok(first is not None and b"24 80" in first, "80x24 until told otherwise", first)
    w.text({"type": "resize", "cols": 123, "rows": 45})
    w.keys("stty size; echo rs-$((2+2))\n")
    got = w.wait_for("rs-4")
    t.ok(got is not None and b"45 123" in got, "stty size after a resize shows it", got)
    w.send(9, b"are you there")
    op, data = w.recv()
    while op == 2:                                  # output may come first
        op, data = w.recv()
    t.ok((op, data) == (10, b"are you there"), "a ping gets its pong", (op, data))
    w.keys("echo from-the-terminal > term_file.txt; exit 0\n")
    _, texts, code = w.until_end(30)
    t.ok(texts == [{"type": "exit", "exit_code": 0}] and code == 1000, "exit 0", (texts, code))
    st, job = api(a.url, a.pk, a.sk, "POST", "/sessions/%s/shell" % sid, {"command": "cat term_file.txt"})
    t.ok(st == 200 and job.get("stdout") == "from-the-terminal\n",
         "a file written in the terminal is seen by a later command (same volume)", job)
    w.shut()

    w = attach(a.url, a.pk, a.sk, sid)
    key_hdr = w.headers.get("sec-websocket-accept")
    t.ok(key_hdr is not None and len(key_hdr) == 28, "Sec-WebSocket-Accept is sent", w.headers)
    w.close(1000, "bye")
    _, _, code = w.until_end(15)
    t.ok(code == 1000, "a client's close is answered with a close", code)
    w.shut()


def refusals(t, a):
    sid = new_session(a, multiplexer="tmux")          # only such a session freezes
    other = api(a.url, a.pk2, a.sk2, "POST", "/sessions", {})[1]["id"]
    cases = [
        ("an unknown session is 404", dict(sid="unsb-session-000000000000"), 404),
        ("an id outside the id alphabet is 404", dict(sid="bad%20id"), 404),
        ("another key's session is 404", dict(sid=other), 404),
        ("a bad signature is 401", dict(X_Signature="0" * 64), 401),
        ("no Authorization is 401", dict(Authorization=None), 401),
        ("a stale timestamp is 401", dict(X_Timestamp="1000000000"), 401),
        ("a missing Sec-WebSocket-Key is 400", dict(Sec_WebSocket_Key=None), 400),
        ("a key that is not 16 bytes is 400", dict(Sec_WebSocket_Key="c2hvcnQ="), 400),
        ("no Upgrade header is 400", dict(Upgrade=None), 400),
        ("Sec-WebSocket-Version 12 is 426", dict(Sec_WebSocket_Version="12"), 426),
    ]
    for what, over, want in cases:
        s = over.pop("sid", sid)
        w = attach(a.url, a.pk, a.sk, s, **over)
        t.ok(w.status == want and "upgrade" not in w.headers, what + " (no upgrade)",
             (w.status, w.body[:120]))
        if want == 426:
            t.ok(w.headers.get("sec-websocket-version") == "13", "426 names version 13", w.headers)
        w.shut()
    st, _ = api(a.url, a.pk, a.sk, "POST", "/sessions/%s/freeze" % sid, {})
    w = attach(a.url, a.pk, a.sk, sid)
    t.ok(st == 200 and w.status == 409, "a frozen session is 409", (st, w.status))
    w.shut()
    api(a.url, a.pk, a.sk, "POST", "/sessions/%s/unfreeze" % sid, {})
    ws = []
    for _ in range(5):                              # the per-key cap is 4
        ws.append(attach(a.url, a.pk, a.sk, sid))
    t.ok([w.status for w in ws] == [101, 101, 101, 101, 429],
         "a fifth terminal of one key is 429", [w.status for w in ws])
    w2 = attach(a.url, a.pk2, a.sk2, other)
    t.ok(w2.status == 101, "another key still gets one", w2.status)
    for w in ws + [w2]:
        w.shut()


def hostile_one(t, a, sid, what, send, want_code):
    word = marker()
    w = attach(a.url, a.pk, a.sk, sid)
    started = start_marked(w, word, "sleep")
    send(w)
    _, _, code = w.until_end(15)
    t.ok(started and code == want_code, what + ": close %d" % want_code, code)
    w.shut()
    t.ok(healthy(a) and gone(word), what + ": the server answers /health, no process of the shell remains",
         procs(word))


def hostile(t, a):
    sid = new_session(a)
    hostile_one(t, a, sid, "an unmasked frame", lambda w: w.send(2, b"ls\n", mask=False), 1002)
    hostile_one(t, a, sid, "a 64-bit length of 2^62",
                lambda w: w.send_raw(bytes([0x82, 0xFF]) + struct.pack(">Q", 1 << 62) + b"mask"), 1009)
    hostile_one(t, a, sid, "garbage bytes", lambda w: w.send_raw(b"\x13\x37garbage" * 8), 1002)
    hostile_one(t, a, sid, "a message over 64 KiB",
                lambda w: w.send(2, b"x" * (64 * 1024 + 1)), 1009)
    hostile_one(t, a, sid, "a resize out of range",
                lambda w: w.text({"type": "resize", "cols": 0, "rows": 24}), 1008)
    hostile_one(t, a, sid, "an unknown control message",
                lambda w: w.text({"type": "launch", "what": "missiles"}), 1008)
    hostile_one(t, a, sid, "a control message that is not JSON",
                lambda w: w.send(1, b"{not json"), 1008)
    hostile_one(t, a, sid, "text that is not UTF-8", lambda w: w.send(1, b"\xff\xfe"), 1007)


def backpressure(t, a):
    sid = new_session(a)
    word = marker()
    w = attach(a.url, a.pk, a.sk, sid)
    w.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    started = start_marked(w, word, "yes")
    rss0 = rss(a.pid)
    slow = 0
    for _ in range(8):                              # never read while `yes` prints
        time.sleep(0.5)
        t0 = time.monotonic()
        slow += 0 if healthy(a) and time.monotonic() - t0 < 5 else 1
    grew = rss(a.pid) - rss0
    t.ok(started and slow == 0, "a client that never reads: /health still answers", slow)
    t.ok(grew < 8 * 1024, "and the server does not buffer without bound (RSS grew %d KiB)" % grew, grew)
    w.shut()
    t.ok(healthy(a) and gone(word, 30), "when it goes, its shell is gone too", procs(word))

    word = marker()
    w = attach(a.url, a.pk, a.sk, sid)
    started = start_marked(w, word, "yes")
    got = w.wait_for(word, 10)
    w.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    w.shut()                                        # a reset mid-output
    t.ok(started and got is not None and healthy(a) and gone(word),
         "a client that disconnects mid-output: nothing of its shell remains", procs(word))


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cycles(t, a):
    sid = new_session(a)
    bad = []
    word = marker()
    for i in range(50):
        step = "attach"
        try:
            w = attach(a.url, a.pk, a.sk, sid)
            if w.status != 101:
                bad.append((i, w.status))
                w.shut()
                continue
            step = "marker"
            if i % 10 == 0 and not start_marked(w, word, "sleep"):
                bad.append((i, "no marker"))
            step = "close"
            w.close()
            _, _, code = w.until_end(15)
            if code != 1000:
                bad.append((i, code))
            w.shut()
        except (Closed, OSError, ValueError) as e:
            bad.append((i, step, repr(e)))
    t.ok(not bad, "50 attach/close cycles", bad)
    t.ok(healthy(a) and gone(word), "then /health answers and no shell of them remains", procs(word))

    # three clients at once (the per-key cap is 4): the transport's give-back
    # of upgraded sockets races its other work here (a deadlock once)
    sids = [new_session(a) for _ in range(3)]
    errors = []

    def churn(sid):
        for i in range(100):
            try:
                w = attach(a.url, a.pk, a.sk, sid)
                # a terminal counts against the cap until its shell is gone,
                # a little after its close: 429 then means "a moment" (bounded)
                for _ in range(50):
                    if w.status != 429:
                        break
                    w.shut()
                    time.sleep(0.1)
                    w = attach(a.url, a.pk, a.sk, sid)
                if w.status != 101:
                    errors.append((sid[-4:], i, w.status))
                else:
                    w.close()
                    code = w.until_end(15)[2]
                    if code != 1000:
                        errors.append((sid[-4:], i, code))
                w.shut()
            except (Closed, OSError, ValueError) as e:
                errors.append((sid[-4:], i, repr(e)))
                return
    threads = [threading.Thread(target=churn, args=(s,)) for s in sids]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    t.ok(not errors and not any(th.is_alive() for th in threads),
         "3 clients x 100 attach/close cycles at once", errors[:5])
    t.ok(healthy(a), "then /health still answers")


def lifecycle(t, a):
    sid = new_session(a)
    word = marker()
    w = attach(a.url, a.pk, a.sk, sid)
    started = start_marked(w, word, "sleep")
    st, _ = api(a.url, a.pk, a.sk, "DELETE", "/sessions/" + sid)
    _, texts, code = w.until_end(20)
    t.ok(started and st == 200 and (code == 1001 or (texts and texts[0].get("type") == "exit")),
         "deleting the session ends its terminal", (st, texts, code))
    t.ok(gone(word), "and its processes", procs(word))
    w.shut()

    sid = new_session(a, multiplexer="tmux")          # only such a session freezes
    word = marker()
    w = attach(a.url, a.pk, a.sk, sid)
    started = start_marked(w, word, "sleep")
    st, _ = api(a.url, a.pk, a.sk, "POST", "/sessions/%s/freeze" % sid, {})
    w.keys("echo thawed-$((5*5))\n")
    frozen_quiet = st == 200 and w.wait_for("thawed-25", 1.5) is None
    st, _ = api(a.url, a.pk, a.sk, "POST", "/sessions/%s/unfreeze" % sid, {})
    t.ok(started and frozen_quiet and st == 200 and w.wait_for("thawed-25", 15) is not None,
         "freezing the session freezes its terminal; unfreezing resumes it", (started, frozen_quiet, st))
    api(a.url, a.pk, a.sk, "POST", "/sessions/%s/freeze" % sid, {})
    w.close()
    _, _, code = w.until_end(15)
    t.ok(code == 1000 and procs(word) == 1,
         "a detach from a frozen multiplexer session's terminal leaves its shell for the next attach",
         (code, procs(word)))
    w.shut()
    api(a.url, a.pk, a.sk, "POST", "/sessions/%s/unfreeze" % sid, {})
    api(a.url, a.pk, a.sk, "DELETE", "/sessions/" + sid)
    t.ok(gone(word), "deleting it leaves no process", procs(word))

    sid = new_session(a, ttl=2)
    w = attach(a.url, a.pk, a.sk, sid)
    _, _, code = w.until_end(30)
    t.ok(code == 1001, "a terminal is closed (1001) when the session reaches its ttl (2 s)", code)
    w.shut()

    sid = new_session(a)
    early = frame(2, "echo early-$((3*3))\n")      # in the handshake's own packet
    w = attach(a.url, a.pk, a.sk, sid, early=early, Sec_WebSocket_Key="dGhlIHNhbXBsZSBub25jZQ==")
    t.ok(w.headers.get("sec-websocket-accept") == accept_of("dGhlIHNhbXBsZSBub25jZQ==") ==
         "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "the RFC's sample key gets the RFC's accept", w.headers)
    t.ok(w.status == 101 and w.wait_for("early-9") is not None,
         "a frame sent with the handshake, before its answer, is not lost")
    w.shut()


def living(t, a):
    """The terminal attaches to the living session: what a command started
    is there, what the terminal starts with nohup lives on after it, a REPL
    shell answers, a multiplexer's session is re-attachable."""
    sid = new_session(a)
    st, _ = api(a.url, a.pk, a.sk, "POST", "/sessions/%s/shell" % sid,
                {"command": "echo from-a-command > /tmp/note; nohup sleep 300 >/dev/null 2>&1 &"})
    w = attach(a.url, a.pk, a.sk, sid)
    w.keys("cat /tmp/note; pgrep -c sleep; echo shared-$((2*21))\n")
    got = w.wait_for("shared-42")
    t.ok(st == 200 and got is not None and b"from-a-command" in got,
         "the terminal sees /tmp and the processes of the session's commands", got)
    word = marker()
    w.keys("nohup bash -c 'exec -a %s sleep 300' >/dev/null 2>&1 & echo bg-$((3*3))\n" % word)
    t.ok(w.wait_for("bg-9") is not None, "a nohup'd job is started in the terminal")
    w.close()
    w.until_end(15)
    w.shut()
    time.sleep(0)                                    # nothing waited on: checked from the session
    st, job = api(a.url, a.pk, a.sk, "POST", "/sessions/%s/shell" % sid,
                  {"command": "pgrep -f %s >/dev/null && echo lives" % word})
    t.ok(st == 200 and job.get("stdout") == "lives\n", "it lives on after the terminal closed", job)
    api(a.url, a.pk, a.sk, "DELETE", "/sessions/" + sid)
    t.ok(gone(word), "until the session is deleted", procs(word))

    st, s = api(a.url, a.pk, a.sk, "POST", "/sessions", {"shell": "python3"})
    w = attach(a.url, a.pk, a.sk, s["id"])
    w.keys("print(6 * 7 + 1000)\n")
    t.ok(st == 201 and w.wait_for("1042") is not None, "a python3 session's terminal is its REPL")
    w.keys("exit()\n")
    _, texts, code = w.until_end(15)
    t.ok(texts == [{"type": "exit", "exit_code": 0}] and code == 1000, "leaving the REPL ends the terminal",
         (texts, code))
    w.shut()

    sid = new_session(a, multiplexer="tmux")
    word = marker()
    w = attach(a.url, a.pk, a.sk, sid)
    started = start_marked(w, word, "sleep")
    w.close()
    w.until_end(15)
    w.shut()
    w = attach(a.url, a.pk, a.sk, sid)
    w.keys("jobs; echo again-$((4*4))\n")
    got = w.wait_for("again-16")
    t.ok(started and got is not None and word.encode() in got,
         "a multiplexer session is re-attached with its jobs", got)
    w.keys("tmux detach-client\n")
    _, texts, code = w.until_end(15)
    t.ok(texts == [{"type": "detached"}] and code == 1000, "a detach from inside says detached", (texts, code))
    w.shut()
    api(a.url, a.pk, a.sk, "DELETE", "/sessions/" + sid)


def lenient(t, a):
    """With --lenient, the reference CLI's handshake (no auth header at all)
    opens the terminal of a session that exists; the id is the capability."""
    sid = new_session(a)
    w = attach(a.url, a.pk, a.sk, sid, Authorization=None, X_Timestamp=None, X_Signature=None)
    w.keys("echo unsigned-$((5*8))\n")
    t.ok(w.status == 101 and w.wait_for("unsigned-40") is not None, "an unsigned handshake attaches", w.status)
    w.shut()
    w = attach(a.url, a.pk, a.sk, "unsb-session-000000000000", Authorization=None, X_Timestamp=None,
               X_Signature=None)
    t.ok(w.status == 401, "an unknown id is 401, like any unauthenticated request", w.status)
    w.shut()
    w = attach(a.url, a.pk, a.sk, sid, X_Signature="0" * 64)
    t.ok(w.status == 401, "a bad signature is still refused", w.status)
    w.shut()


def stop(t, a):
    """Last: stops the server (SIGTERM) with two terminals open, one of
    them a client that reads nothing while `yes` prints."""
    sid = new_session(a)
    word, word2 = marker(), marker()
    w = attach(a.url, a.pk, a.sk, sid)
    started = start_marked(w, word, "sleep")
    w2 = attach(a.url, a.pk, a.sk, sid)
    w2.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    started2 = start_marked(w2, word2, "yes")
    t0 = time.monotonic()
    os.kill(a.pid, 15)
    _, _, code = w.until_end(15)
    t.ok(started and started2 and code == 1001, "a server that stops closes its terminals with 1001", code)
    exited = False
    for _ in range(300):                            # at most 15 s
        try:
            os.kill(a.pid, 0)
        except OSError:
            exited = True
            break
        time.sleep(0.05)
    took = time.monotonic() - t0
    t.ok(exited and took < 12, "and exits within seconds, a reader-less client or not (%.1f s)" % took, took)
    t.ok(gone(word) and gone(word2), "leaving no process of the shells", (procs(word), procs(word2)))
    w.shut()
    w2.shut()


GROUPS = {"basic": basic, "refusals": refusals, "hostile": hostile,
          "backpressure": backpressure, "cycles": cycles, "lifecycle": lifecycle, "living": living,
          "lenient": lenient, "stop": stop}


def main():
    ap = argparse.ArgumentParser()
    for k in ("url", "pk", "sk", "pk2", "sk2"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("groups", nargs="*")
    a = ap.parse_args()
    t = Tap()
    for g in a.groups or [g for g in GROUPS if g != "lenient"]:
        try:
            GROUPS[g](t, a)
        except (Closed, OSError, ValueError, AssertionError) as e:
            t.ok(False, "group %s ran to its end" % g, repr(e))
    print("1..%d" % t.n)
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
