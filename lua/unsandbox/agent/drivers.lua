--- The interpreters' sides of code contexts (context.lua): one small
-- program per language, installed in the runtime like the helper, that
-- keeps one interpreter's state for the cells it runs. Protocol: argv[1]
-- is the cells directory; stdin gives lines "N TIMEOUT_MS"; cell N's
-- code is DIR/N.code. While a cell runs, its stdout and stderr go to
-- DIR/N.out and DIR/N.err (fd 1 and 2 themselves where the language can
-- redirect them, so a cell's output can never reach another cell's
-- files), its stdin is /dev/null; then DIR/N.res gets a one-line JSON
-- object {error = null | {name, message, traceback}, value = repr of a
-- last expression | null, exit = status (bash), nout, nerr = the sizes of
-- N.out and N.err}, written to a temporary and renamed, so it is complete
-- when it appears. The files of cell N-1 (read by then) are removed when
-- cell N starts. The driver's own timeout
-- interrupts a cell where the language allows it (python: SIGALRM; node:
-- vm's timeout; lua: a count hook); an exception is a result, never the
-- end of the interpreter. Internal module.
local M = {}

M.python = [==[
import ast, json, os, signal, sys, threading, traceback
D = sys.argv[1]
os.makedirs(D, exist_ok=True)
proto = os.fdopen(os.dup(0), "rb", buffering=0)
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
saved_out, saved_err = os.dup(1), os.dup(2)
G = {"__name__": "__main__", "__builtins__": __builtins__}
MAIN = threading.main_thread()

class Router:
    """sys.stdout/err: the main thread writes to fd 1/2 (the running
    cell's files); other threads (started by an earlier cell) to the
    process's own output, never into a later cell's."""
    def __init__(self, cell, orphan):
        self.cell, self.orphan = cell, orphan
    def write(self, s):
        return (self.cell if threading.current_thread() is MAIN else self.orphan).write(s)
    def flush(self):
        self.cell.flush()
        self.orphan.flush()
    def __getattr__(self, name):
        return getattr(self.cell, name)

sys.stdout = Router(sys.stdout, os.fdopen(os.dup(saved_out), "w", buffering=1))
sys.stderr = Router(sys.stderr, os.fdopen(os.dup(saved_err), "w", buffering=1))

def on_alarm(signum, frame):
    raise TimeoutError("the cell ran longer than its timeout")
signal.signal(signal.SIGALRM, on_alarm)

def readline():
    b = b""
    while not b.endswith(b"\n"):
        c = proto.read(1)
        if not c:
            return None
        b += c
    return b.decode()

def flush():
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass

def run(code, n):
    tree = ast.parse(code, "<cell %s>" % n)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell %s>" % n, "exec"), G)
    if last is not None:
        v = eval(compile(last, "<cell %s>" % n, "eval"), G)
        if v is not None:
            return repr(v)
    return None

prev = None
while True:
    line = readline()
    if line is None:
        break
    n, ms = line.split()
    for ext in (".out", ".err", ".res", ".code"):
        if prev is not None:
            try:
                os.remove(os.path.join(D, prev + ext))
            except OSError:
                pass
    prev = n
    with open(os.path.join(D, n + ".code"), "rb") as f:
        code = f.read().decode("utf-8", "replace")
    res = {"error": None, "value": None}
    flush()
    for fd, ext in ((1, ".out"), (2, ".err")):
        t = os.open(os.path.join(D, n + ext), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(t, fd)
        os.close(t)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, max(int(ms), 1) / 1000.0)
            res["value"] = run(code, n)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        res["error"] = {"name": type(e).__name__, "message": str(e),
                        "traceback": "".join(traceback.format_exception(type(e), e, tb))}
    flush()
    res["nout"], res["nerr"] = os.fstat(1).st_size, os.fstat(2).st_size
    os.dup2(saved_out, 1)
    os.dup2(saved_err, 2)
    tmp = os.path.join(D, "." + n + ".res")
    with open(tmp, "w") as f:
        json.dump(res, f)
    os.rename(tmp, os.path.join(D, n + ".res"))
]==]

M.node = [==[
"use strict";
const fs = require("fs"), path = require("path"), vm = require("vm"), util = require("util");
const D = process.argv[2];
fs.mkdirSync(D, { recursive: true });
globalThis.require = require;
process.on("SIGINT", () => {});
let fd1 = 1, fd2 = 2;
function writer(fd) {
  return function (chunk, enc, cb) {
    fs.writeSync(fd(), typeof chunk === "string" ? chunk : Buffer.from(chunk));
    if (typeof enc === "function") enc(); else if (cb) cb();
    return true;
  };
}
process.stdout.write = writer(() => fd1);
process.stderr.write = writer(() => fd2);
function readline() {
  const b = Buffer.alloc(1); let s = "";
  for (;;) {
    let n;
    try { n = fs.readSync(0, b, 0, 1, null); } catch (e) { if (e.code === "EAGAIN") continue; throw e; }
    if (n === 0) return null;
    const c = b.toString("latin1");
    if (c === "\n") return s;
    s += c;
  }
}
let prev = null;
for (;;) {
  const line = readline();
  if (line === null) break;
  const [n, ms] = line.split(" ");
  if (prev !== null)
    for (const ext of [".out", ".err", ".res", ".code"]) fs.rmSync(path.join(D, prev + ext), { force: true });
  prev = n;
  const code = fs.readFileSync(path.join(D, n + ".code"), "utf8");
  const res = { error: null, value: null };
  fd1 = fs.openSync(path.join(D, n + ".out"), "w", 0o600);
  fd2 = fs.openSync(path.join(D, n + ".err"), "w", 0o600);
  try {
    const v = vm.runInThisContext(code, { filename: "<cell " + n + ">", timeout: Math.max(1, Number(ms)) });
    if (v !== undefined) res.value = util.inspect(v);
  } catch (e) {
    if (e instanceof Error) res.error = { name: e.name, message: e.message, traceback: String(e.stack) };
    else res.error = { name: "Error", message: String(e), traceback: "" };
  }
  res.nout = fs.fstatSync(fd1).size; res.nerr = fs.fstatSync(fd2).size;
  fs.closeSync(fd1); fs.closeSync(fd2); fd1 = 1; fd2 = 2;
  const tmp = path.join(D, "." + n + ".res");
  fs.writeFileSync(tmp, JSON.stringify(res));
  fs.renameSync(tmp, path.join(D, n + ".res"));
}
]==]

M.lua = [==[
local D = arg[1]
os.execute("mkdir -p '" .. D .. "'")
local proto = io.stdin
local env = setmetatable({}, { __index = _G })
local real = { print = print, write = io.write, stdout = io.stdout, stderr = io.stderr,
  output = io.output(), input = io.input() }
local null = io.open("/dev/null", "rb")
local unpack_ = table.unpack or unpack
local function pack(...) return { n = select("#", ...), ... } end

local function compile(code, name)
  if setfenv then
    local f, e = loadstring(code, name)
    if f then setfenv(f, env) end
    return f, e
  end
  return load(code, name, "t", env)
end

local function json(s)
  s = tostring(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' elseif c == "\\" then return "\\\\" end
    return string.format("\\u%04x", c:byte())
  end) .. '"'
end

local function show(n, ...)
  local parts = {}
  for i = 1, n do parts[i] = tostring((select(i, ...))) end
  return table.concat(parts, "\t")
end

local prev
while true do
  local line = proto:read("*l")
  if not line then break end
  local n, ms = line:match("^(%d+) (%d+)")
  if prev then
    for _, ext in ipairs { ".out", ".err", ".res", ".code" } do os.remove(D .. "/" .. prev .. ext) end
  end
  prev = n
  local f = io.open(D .. "/" .. n .. ".code", "rb")
  local code = f:read("*a")
  f:close()
  local out = io.open(D .. "/" .. n .. ".out", "wb")
  local err = io.open(D .. "/" .. n .. ".err", "wb")
  out:setvbuf("no"); err:setvbuf("no")
  print = function(...)
    local t = {}
    for i = 1, select("#", ...) do t[i] = tostring((select(i, ...))) end
    out:write(table.concat(t, "\t"), "\n")
  end
  io.stdout, io.stderr = out, err
  io.output(out); io.input(null)
  local name = "=cell " .. n
  local fn, cerr = compile("return " .. code, name)
  if not fn then fn, cerr = compile(code, name) end
  local error_json, value = "null", "null"
  if not fn then
    error_json = '{"name":"SyntaxError","message":' .. json(cerr) .. ',"traceback":' .. json(cerr) .. '}'
  else
    local deadline = os.clock() + tonumber(ms) / 1000
    debug.sethook(function()
      if os.clock() > deadline then error("the cell ran longer than its timeout", 2) end
    end, "", 10000)
    local res = pack(xpcall(fn, function(e) return { e = e, tb = debug.traceback(tostring(e), 2) } end))
    debug.sethook()
    if res[1] then
      if res.n > 1 then value = json(show(res.n - 1, unpack_(res, 2, res.n))) end
    else
      local e = res[2]
      error_json = '{"name":"Error","message":' .. json(e.e) .. ',"traceback":' .. json(e.tb) .. '}'
    end
  end
  print = real.print
  io.stdout, io.stderr = real.stdout, real.stderr
  io.output(real.output); io.input(real.input)
  local nout, nerr = out:seek("end"), err:seek("end")
  out:close(); err:close()
  local tmp = D .. "/." .. n .. ".res"
  local r = io.open(tmp, "wb")
  r:write('{"error":', error_json, ',"value":', value, ',"nout":', nout, ',"nerr":', nerr, '}')
  r:close()
  os.rename(tmp, D .. "/" .. n .. ".res")
end
]==]

M.bash = [==[
__unsb_d=$1
mkdir -p "$__unsb_d"
exec 63<&0 0</dev/null
trap : INT
__unsb_p=
while IFS=' ' read -r __unsb_n __unsb_ms <&63; do
  [ -n "$__unsb_p" ] && rm -f -- "$__unsb_d/$__unsb_p".{out,err,res,code}
  __unsb_p=$__unsb_n
  { eval "$(<"$__unsb_d/$__unsb_n.code")"; } >"$__unsb_d/$__unsb_n.out" 2>"$__unsb_d/$__unsb_n.err"
  __unsb_s=$?
  printf '{"error":null,"value":null,"exit":%d,"nout":%d,"nerr":%d}' "$__unsb_s" \
    "$(stat -c %s -- "$__unsb_d/$__unsb_n.out")" "$(stat -c %s -- "$__unsb_d/$__unsb_n.err")" \
    > "$__unsb_d/.$__unsb_n.res"
  mv -f "$__unsb_d/.$__unsb_n.res" "$__unsb_d/$__unsb_n.res"
done
]==]

-- How each is started: the interpreter (the first one found) and its file.
M.start = {
  python = { ext = ".py", run = "exec python3 -u %s %s" },
  node = { ext = ".js", run = "exec node %s %s" },
  lua = { ext = ".lua", run = "for l in lua5.4 lua lua5.3 luajit lua5.1; do command -v $l >/dev/null && " ..
    "exec $l %s %s; done; echo 'no Lua interpreter in this sandbox' >&2; exit 127" },
  bash = { ext = ".sh", run = "exec bash --noprofile --norc %s %s" },
}

return M
