--- The agent tools as methods of unsandbox.Sandbox (added by
-- cp/init.lua): each calls the Manager's method of the same concern with
-- the sandbox's name as its session key. Internal module.
-- @module unsandbox.agent.sandbox
local files = require "unsandbox.agent.files"
local Process = require "unsandbox.agent.process"
local Context = require "unsandbox.agent.context"
local transfer = require "unsandbox.agent.transfer"

local SandboxMT = {}

--- sb:stat(path): {type, size, mode, mtime} or nil, Error (not_found).
function SandboxMT:stat(path) return self:manager():stat(path, self:name()) end
--- sb:exists(path): true or false.
function SandboxMT:exists(path) return self:manager():exists(path, self:name()) end
--- sb:list(path[, {recursive=, depth=}]): entries {path, name, type, size, mode, mtime}.
function SandboxMT:list(path, opts) return self:manager():list(path, opts, self:name()) end
--- sb:remove(path[, {recursive=}]).
function SandboxMT:remove(path, opts) return self:manager():remove(path, opts, self:name()) end
--- sb:rename(from, to).
function SandboxMT:rename(from, to) return self:manager():rename(from, to, self:name()) end
--- sb:mkdir(path[, {parents=}]).
function SandboxMT:mkdir(path, opts) return self:manager():mkdir(path, opts, self:name()) end
--- sb:chmod(path, mode).
function SandboxMT:chmod(path, mode) return self:manager():chmod(path, mode, self:name()) end

--- sb:spawn(command[, opts]): a Process running in the background.
-- command: a shell line, or an argv list (POSIX-quoted). opts: cwd (a
-- workspace path), env ({NAME = value}), pty (a terminal: one stream),
-- id (default "p-<16 hex>"), on_stdout(chunk), on_stderr(chunk).
function SandboxMT:spawn(command, opts)
  return Process.spawn(self:manager(), self:name(), command, opts, files.path)
end

--- sb:process(id): the Process of that id in this sandbox's runtime
-- (started by this or another OS process), read from its first byte.
function SandboxMT:process(id) return Process.attach(self:manager(), self:name(), id) end

--- sb:processes(): {{id, pid, running, exit_code, started, pty, command}, ...}.
function SandboxMT:processes() return Process.list(self:manager(), self:name()) end

--- sb:context(language[, opts]): a stateful code Context (python, node,
-- lua or bash).
function SandboxMT:context(language, opts)
  return Context.new(self:manager(), self:name(), language, opts)
end

--- sb:upload(source, dest[, opts]): see Manager:upload.
function SandboxMT:upload(source, dest, opts) return self:manager():upload(source, dest, opts, self:name()) end
--- sb:download(src[, dest][, opts]): see Manager:download.
function SandboxMT:download(src, dest, opts) return self:manager():download(src, dest, opts, self:name()) end
--- sb:upload_dir(local_dir, dest[, opts]).
function SandboxMT:upload_dir(dir, dest, opts) return self:manager():upload_dir(dir, dest, opts, self:name()) end
--- sb:download_dir(src, local_dir[, opts]).
function SandboxMT:download_dir(src, dir, opts) return self:manager():download_dir(src, dir, opts, self:name()) end

return { methods = SandboxMT, classes = { Process.class, Context.class },
         manager = { { methods = files.methods, from = "unsandbox.agent.files" },
                     { methods = transfer.methods, from = "unsandbox.agent.transfer" } } }
