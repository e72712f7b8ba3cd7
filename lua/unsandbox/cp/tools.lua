--- The MCP tool methods of unsandbox.Manager (spec §8): files through
-- file_read/_write/_edit/_glob/_grep and commands through shell (exec,
-- exec_stream, the PTY session actions). Arguments are checked here,
-- before anything is sent; paths as a program in the runtime sees them
-- (/workspace/...) are made relative by the core's rule (§7.5). Each
-- method takes the session key last (default: the Manager's session);
-- the long ones (grep_files, shell_session) also take an options table.
-- @classmod Manager
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local mcp = require "unsandbox.cp.mcp"

local Manager = {}   -- the methods this file adds to unsandbox.Manager

local FILE_TIMEOUT = 45

local function wpath(fname, path, allow_root)
  check.type(fname, "path", path, "string")
  if allow_root and (path == "" or path == ".") then return path end
  return check.value(fname, "path", core.cp.workspace_path(path))
end

local function count(fname, arg, v, lo, hi)
  return check.int_range(fname, arg, v, lo, hi)
end

--- Files through the MCP tools.
-- Each ensures a running runtime first (creating one if needed) and
-- fails with kind rpc (err.rpc_code -32602) when the tool refuses (no
-- such file, a path escaping the workspace, an edit whose old text is
-- not found exactly once).
-- @section tools

--- Reads a window of a UTF-8 text file (MCP file_read): at most 2000
-- lines or 8000 characters; files up to 16 MiB.
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam[opt=1] integer offset the first line (1-based)
-- @tparam[opt=0] integer limit lines at most (0: the tool's window)
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{path, content, start_line, end_line, truncated,
-- next_offset, ...}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise a bad path, offset or limit out of range
function Manager:read_file(path, offset, limit, key)
  local args = { path = wpath("read_file", path) }
  offset = count("read_file", "offset", offset, 1, compat.maxinteger) or 1
  limit = count("read_file", "limit", limit, 0, compat.maxinteger) or 0
  if offset > 1 then args.offset = offset end
  if limit > 0 then args.limit = limit end
  return mcp.call(self, "read_file", "file_read", args, { key = key, timeout = FILE_TIMEOUT })
end

--- Writes a UTF-8 text file, atomically, its parents made (MCP
-- file_write); at most 1 000 000 bytes. Bytes of any kind: `upload`.
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam string content
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{path, chars, bytes}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise a bad path, content not a string
function Manager:write_file(path, content, key)
  local args = { path = wpath("write_file", path),
    content = check.type("write_file", "content", content, "string") }
  return mcp.call(self, "write_file", "file_write", args, { key = key, timeout = FILE_TIMEOUT })
end

--- Replaces text in a file (MCP file_edit): old must occur exactly once.
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam string old the text to replace (non-empty)
-- @tparam string new its replacement
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{path, replacements = 1}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise a bad path, an empty old, new not a string
function Manager:edit_file(path, old, new, key)
  check.nonempty("edit_file", "old", old)
  local args = { path = wpath("edit_file", path), old = old,
    new = check.type("edit_file", "new", new, "string") }
  return mcp.call(self, "edit_file", "file_edit", args, { key = key, timeout = FILE_TIMEOUT })
end

--- Finds files by a glob pattern (MCP file_glob): `*` and `?` within a
-- segment, `**` across; newest first, at most 200.
-- @tparam string pattern
-- @tparam[opt=""] string path the directory to search ("" or ".": the root)
-- @tparam[opt=0] integer limit matches at most (0: the tool's)
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{pattern, matches, total, scanned, truncated,
-- truncated_reason}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise an empty pattern, a bad path
function Manager:glob_files(pattern, path, limit, key)
  check.nonempty("glob_files", "pattern", pattern)
  local args = { pattern = pattern, path = wpath("glob_files", path or "", true) }
  limit = count("glob_files", "limit", limit, 0, compat.maxinteger) or 0
  if limit > 0 then args.limit = limit end
  return mcp.call(self, "glob_files", "file_glob", args, { key = key, timeout = FILE_TIMEOUT })
end

local GREP_MODES = { files_with_matches = true, content = true, count = true }
local GREP_OPTIONS = { path = true, glob = true, file_glob = true, mode = true,
  case_insensitive = true, context = true, regex = true, use_regex = true, limit = true, key = true }

--- Searches file contents (MCP file_grep): literal unless regex; at
-- most 200 files, skipping files over 1 MB and those not UTF-8. Takes
-- its arguments in order (as the protocol's SDK does) or as a table:
-- `grep_files(pattern, {path =, glob =, mode =, case_insensitive =,
-- context =, regex =, limit =, key =})`.
-- @tparam string pattern
-- @tparam[opt=""] string|table path the directory to search, or the
-- options table
-- @tparam[opt] string file_glob only files matching it
-- @tparam[opt="files_with_matches"] string mode "files_with_matches",
-- "content" or "count"
-- @tparam[opt=false] boolean ci case_insensitive
-- @tparam[opt=0] integer context lines around a match, 0..5
-- @tparam[opt=false] boolean use_regex
-- @tparam[opt=0] integer limit
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{pattern, mode, files, file_count, match_count,
-- scanned, truncated, truncated_reason}`, files paths or `{path, count,
-- lines}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise an empty pattern, a bad path, an unknown mode or option
function Manager:grep_files(pattern, path, file_glob, mode, ci, context, use_regex, limit, key)
  check.nonempty("grep_files", "pattern", pattern)
  if type(path) == "table" then
    local o = check.options("grep_files", path, GREP_OPTIONS)
    path, file_glob, mode, ci = o.path, o.glob or o.file_glob, o.mode, o.case_insensitive
    context, use_regex, limit, key = o.context, o.regex or o.use_regex, o.limit, o.key
  end
  local args = { pattern = pattern, path = wpath("grep_files", path or "", true),
    mode = check.oneof("grep_files", "mode", mode, GREP_MODES) or "files_with_matches" }
  check.type("grep_files", "file_glob", file_glob, "string", true)
  if file_glob and file_glob ~= "" then args.glob = file_glob end
  if check.type("grep_files", "case_insensitive", ci, "boolean", true) then args.case_insensitive = true end
  context = count("grep_files", "context", context, 0, 5) or 0
  if context > 0 then args.context = context end
  if check.type("grep_files", "use_regex", use_regex, "boolean", true) then args.regex = true end
  limit = count("grep_files", "limit", limit, 0, compat.maxinteger) or 0
  if limit > 0 then args.limit = limit end
  return mcp.call(self, "grep_files", "file_grep", args, { key = key, timeout = FILE_TIMEOUT })
end

--- Commands through the MCP shell tool.
-- Commands run under bash in /workspace (no profile, pipefail), their
-- process group killed at the timeout; each output stream is cut at
-- 64 000 bytes. Exit codes are the runtime's report.
-- @section shell

local function seconds(fname, t, hi)
  return count(fname, "timeout", t, 1, hi) or 30
end

local function command(fname, cmd)
  check.type(fname, "command", cmd, "string")
  if #cmd > 8192 then check.fail(fname, "command", "at most 8192 bytes") end
  if cmd:find("\0", 1, true) then check.fail(fname, "command", "contains a NUL byte") end
  return cmd
end

--- Runs a shell line to its end (MCP shell exec).
-- @tparam string cmd a shell line, at most 8192 bytes, no NUL
-- @tparam[opt=30] integer t its timeout in seconds, 1..30
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{exit_code, stdout, stderr, timed_out,
-- output_truncated, sandbox_id, workspace_id}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise command too long or with a NUL, t out of range
function Manager:shell(cmd, t, key)
  t = seconds("shell", t, 30)
  local args = { action = "exec", command = command("shell", cmd), timeout_seconds = t }
  return mcp.call(self, "shell", "shell", args, { key = key, timeout = t + 15 })
end

local function callbacks(fname, on_chunk, is_cancelled)
  check.type(fname, "on_chunk", on_chunk, "function", true)
  check.type(fname, "is_cancelled", is_cancelled, "function", true)
end

--- Runs a shell line with its output streamed as it is written (MCP
-- shell exec_stream, SSE).
-- @tparam string cmd a shell line, at most 8192 bytes
-- @tparam[opt=30] integer t its timeout in seconds, 1..30
-- @tparam[opt] function on_chunk on_chunk(channel, chunk, sequence),
-- channel "stdout" or "stderr", as the command writes
-- @tparam[opt] function is_cancelled asked every 100 ms at most; true
-- closes the connection (the command is killed)
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table the result as `shell` gives it, plus `stream_chunks`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error cancelled (499 "Sandbox command cancelled": is_cancelled
-- or Ctrl-C)
-- @raise as `shell`; callbacks that are not functions
function Manager:shell_stream(cmd, t, on_chunk, is_cancelled, key)
  t = seconds("shell_stream", t, 30)
  callbacks("shell_stream", on_chunk, is_cancelled)
  local args = { action = "exec_stream", command = command("shell_stream", cmd), timeout_seconds = t }
  return mcp.call(self, "shell_stream", "shell", args, { key = key, timeout = t + 15,
    on_chunk = on_chunk or function() end, is_cancelled = is_cancelled })
end

local SESSION_OPTIONS = { command = true, timeout = true, input = true, input_text = true,
  append_newline = true, async = true, async_mode = true, on_chunk = true, is_cancelled = true,
  key = true }

--- One action on a PTY shell session of the runtime (MCP shell
-- session_*): a bash on a pseudo-terminal kept between calls (at most
-- 16; idle ones end after 1800 s). `Sandbox:shell` gives the same as an
-- object. Takes its arguments in order (as the protocol's SDK does) or
-- as a table: `shell_session(action, session_id, {command =, timeout =,
-- input =, append_newline =, async =, on_chunk =, is_cancelled =, key =})`.
-- Streamed when on_chunk is given.
-- @tparam string action "exec", "wait", "input" or "kill"
-- @tparam string session_id `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`
-- @tparam[opt] string|table cmd exec's shell line (command), or the
-- options table
-- @tparam[opt=30] integer t seconds: wait 1..120, the others 1..30
-- @tparam[opt] string input input's text (input_text), at most 8192 bytes
-- @tparam[opt=true] boolean newline input: add "\n" (append_newline)
-- @tparam[opt=false] boolean async exec: answer after ~0.2 s with
-- running = true (async_mode)
-- @tparam[opt] function on_chunk as for `shell_stream`
-- @tparam[opt] function is_cancelled as for `shell_stream`
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{action, session_id, exit_code (nil while running),
-- stdout, running, timed_out, wait_timed_out, output_truncated,
-- session_restarted}`: the output since the previous call
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error rpc (-32602: no such session for wait or input,
-- -32001: every PTY session busy), cancelled
-- @raise an unknown action, a malformed session_id, a value out of range
function Manager:shell_session(action, session_id, cmd, t, input, newline, async, on_chunk, is_cancelled, key)
  local wire = core.cp.mcp_session_action(check.type("shell_session", "action", action, "string"))
  if not wire then
    check.fail("shell_session", "action", "exec, wait, input or kill expected, got '" .. action .. "'")
  end
  check.type("shell_session", "session_id", session_id, "string")
  if not core.cp.mcp_valid_session_id(session_id) then
    check.fail("shell_session", "session_id", "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ expected")
  end
  if type(cmd) == "table" then
    local o = check.options("shell_session", cmd, SESSION_OPTIONS)
    cmd, t, input, newline = o.command, o.timeout, o.input or o.input_text, o.append_newline
    async, on_chunk, is_cancelled, key = o.async or o.async_mode, o.on_chunk, o.is_cancelled, o.key
  end
  t = seconds("shell_session", t, action == "wait" and 120 or 30)
  callbacks("shell_session", on_chunk, is_cancelled)
  local args = { action = wire, session_id = session_id, timeout_seconds = t }
  if action == "exec" then
    args.command = command("shell_session", cmd or "")
    args.async = check.type("shell_session", "async", async, "boolean", true) or false
  elseif action == "input" then
    args.input = check.type("shell_session", "input", input or "", "string")
    if #args.input > 8192 then check.fail("shell_session", "input", "at most 8192 bytes") end
    args.append_newline = check.type("shell_session", "append_newline", newline, "boolean", true) ~= false
  end
  return mcp.call(self, "shell_session", "shell", args, { key = key, timeout = t + 15,
    on_chunk = on_chunk, is_cancelled = is_cancelled })
end

return Manager
