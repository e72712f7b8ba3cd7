--- The agent tools as methods of unsandbox.Sandbox (added by
-- cp/init.lua): each calls the Manager's method of the same concern with
-- the sandbox's name as its session key. Internal module; its methods
-- are documented as the Sandbox's.
-- @classmod Sandbox
local files = require "unsandbox.agent.files"
local Process = require "unsandbox.agent.process"
local Context = require "unsandbox.agent.context"
local transfer = require "unsandbox.agent.transfer"

local SandboxMT = {}

--- File operations (the agent tools).
-- As the Manager's of the same name, with the sandbox's name as key.
-- @section file_ops

--- Describes a path (`Manager:stat`).
-- @tparam string path a workspace path
-- @treturn[1] table `{path, type, size, mode, mtime}`
-- @return[2] nil
-- @treturn[2] Error not_found when nothing is there
function SandboxMT:stat(path) return self:manager():stat(path, self:name()) end
--- Whether something is at a path (`Manager:exists`).
-- @tparam string path a workspace path
-- @treturn[1] boolean
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:exists(path) return self:manager():exists(path, self:name()) end
--- The entries below a directory (`Manager:list`).
-- @tparam[opt="."] string path
-- @tparam[opt] table opts `recursive`, `depth`
-- @treturn[1] table a list of `{path, name, type, size, mode, mtime}`
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:list(path, opts) return self:manager():list(path, opts, self:name()) end
--- Removes a file, a symlink or a directory (`Manager:remove`).
-- @tparam string path a workspace path
-- @tparam[opt] table opts `recursive`
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error not_found; sandbox with err.code "not_empty"
function SandboxMT:remove(path, opts) return self:manager():remove(path, opts, self:name()) end
--- Moves a file or directory (`Manager:rename`).
-- @tparam string from
-- @tparam string to
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:rename(from, to) return self:manager():rename(from, to, self:name()) end
--- Makes a directory (`Manager:mkdir`).
-- @tparam string path a workspace path
-- @tparam[opt] table opts `parents`
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error sandbox with err.code "exists"; not_found
function SandboxMT:mkdir(path, opts) return self:manager():mkdir(path, opts, self:name()) end
--- Changes a path's mode (`Manager:chmod`).
-- @tparam string path a workspace path
-- @tparam integer|string mode 0..4095, "755" or "u+x,go-w"
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:chmod(path, mode) return self:manager():chmod(path, mode, self:name()) end

--- Processes and code contexts (the agent tools).
-- @section processes

--- Starts a command in the background, with a stdin to write and its
-- stdout and stderr read as they come.
-- @tparam string|table command a shell line, or an argv list (each word
-- POSIX-quoted)
-- @tparam[opt] table opts
-- @tparam[opt] string opts.cwd a workspace directory to run in
-- @tparam[opt] table opts.env `{NAME = value}`
-- @tparam[opt] boolean opts.pty true: on a terminal (one stream, input
-- through the line discipline)
-- @tparam[opt] string opts.id its id (default "p-" and 16 hex;
-- `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
-- @tparam[opt] function opts.on_stdout on_stdout(chunk), as output comes
-- @tparam[opt] function opts.on_stderr on_stderr(chunk)
-- @treturn[1] Process
-- @return[2] nil
-- @treturn[2] Error
-- @raise an empty command, an argv with a non-string, a bad cwd, env
-- or id, an unknown option, a line (with cwd and env) too long
function SandboxMT:spawn(command, opts)
  return Process.spawn(self:manager(), self:name(), command, opts, files.path)
end

--- Takes up a process of this sandbox's runtime by its id (started by
-- this or another OS process); its output is read from the first byte.
-- @tparam string id
-- @treturn[1] Process
-- @return[2] nil
-- @treturn[2] Error not_found: no such process
-- @raise id not a process id
function SandboxMT:process(id) return Process.attach(self:manager(), self:name(), id) end

--- What runs (and ran) in this sandbox's runtime, oldest first.
-- @treturn[1] table a list of `{id, pid, running, exit_code, started
-- (epoch s), pty, command}`
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:processes() return Process.list(self:manager(), self:name()) end

--- Starts a stateful interpreter: cells run one after the other keep
-- their variables, imports and functions. An empty cell is run first to
-- make sure the interpreter is there.
-- @tparam string language "python", "node", "lua" or "bash" (also
-- "python3", "javascript", "js", "sh", "shell")
-- @tparam[opt] table opts `timeout` (s, a cell's default limit: 60)
-- @treturn[1] Context
-- @return[2] nil
-- @treturn[2] Error sandbox with err.code "unavailable": the interpreter did
-- not start
-- @raise an unknown language or option
function SandboxMT:context(language, opts)
  return Context.new(self:manager(), self:name(), language, opts)
end

--- Transfers of any size (the agent tools).
-- @section transfers

--- Uploads bytes of any size to a workspace file (`Manager:upload`).
-- @tparam string|file|table|function source
-- @tparam string dest
-- @tparam[opt] table opts `on_progress`, `size`, `sha256`
-- @treturn[1] table `{path, bytes, sha256, source}`
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:upload(source, dest, opts) return self:manager():upload(source, dest, opts, self:name()) end
--- Downloads a workspace file of any size (`Manager:download`).
-- @tparam string src
-- @tparam[opt] string|table|file|function dest
-- @tparam[opt] table opts `on_progress`, `sha256`
-- @treturn[1] string|file|boolean the bytes, the path, the handle or true
-- @treturn[1] table `{path, bytes, sha256}`
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:download(src, dest, opts) return self:manager():download(src, dest, opts, self:name()) end
--- Uploads a local directory's files (`Manager:upload_dir`).
-- @tparam string dir
-- @tparam string dest
-- @tparam[opt] table opts `on_progress`
-- @treturn[1] table `{files, bytes, skipped}`
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:upload_dir(dir, dest, opts) return self:manager():upload_dir(dir, dest, opts, self:name()) end
--- Downloads a workspace directory's files (`Manager:download_dir`).
-- @tparam string src
-- @tparam string dir
-- @tparam[opt] table opts `on_progress`
-- @treturn[1] table `{files, bytes, skipped}`
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:download_dir(src, dir, opts) return self:manager():download_dir(src, dir, opts, self:name()) end

return { methods = SandboxMT, classes = { Process.class, Context.class },
         manager = { { methods = files.methods, from = "unsandbox.agent.files" },
                     { methods = transfer.methods, from = "unsandbox.agent.transfer" } } }
