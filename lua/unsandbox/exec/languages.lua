--- Languages: the rule that tells a file's language (no network), and
-- the list the service runs with its cache file, ~/.unsandbox/languages.json,
-- fresh for an hour judged by the file's mtime. The file records which
-- service it came from, so a list fetched from a local unsandboxd never
-- answers for the real service; and a service on a loopback address (a
-- local unsandboxd: `make demo`, `unlua --local`, the tests) has a file of
-- its own, languages-local.json, so running one never overwrites the real
-- service's cache. A failed or empty fetch is never cached; a missing or
-- unwritable HOME means no cache, not an error.
local core = require "unsandbox.core"
local cjson = require "cjson.safe"
local check = require "unsandbox.check"
local transport = require "unsandbox.transport"
local Error = require "unsandbox.errors"

local M = {}

-- The longest first line read from a file for its shebang: the kernel
-- reads no more of one either (BINPRM_BUF_SIZE on Linux is 256).
local SHEBANG_MAX = 256

-- The first line of the regular file at path (at most SHEBANG_MAX bytes
-- are read), or nil when there is none: no such file, a directory, a FIFO
-- (never waited on), no permission.
local function first_line(path)
  local head = core.files.file_head(path, SHEBANG_MAX)
  return head and head:match("^[^\n]*") or nil
end

--- The language of filename (its extension, by the core's map) or of
-- content's shebang (with no content: of the file's first line), or nil.
-- unsandbox.detect_language documents the rule.
function M.detect(filename, content)
  check.type("detect_language", "filename", filename, "string", true)
  check.type("detect_language", "content", content, "string", true)
  local known = filename ~= nil and filename ~= ""
  local lang = known and core.exec.detect_language(filename)
  if lang then return lang end
  if content == nil and known then content = first_line(filename) end
  if content == nil then return nil end
  return core.exec.detect_shebang(content:match("^[^\n]*")) or nil
end

M.TTL = 3600

-- Is url's host a loopback address (127.0.0.0/8, ::1, localhost)?
local function is_loopback(url)
  local host = url:match("^%a+://%[([^%]]*)%]") or url:match("^%a+://([^/:?#]*)") or ""
  host = host:lower()
  return host == "localhost" or host == "::1" or host:match("^127%.%d+%.%d+%.%d+$") ~= nil
end

--- The cache file for the service at url, or nil when there is no HOME.
function M.cache_path(url)
  local home = os.getenv("HOME")
  if not home or home == "" then return nil end
  local name = is_loopback(url) and "languages-local.json" or "languages.json"
  return home .. "/.unsandbox/" .. name
end

local function valid_list(v)
  if type(v) ~= "table" or #v == 0 then return false end
  for _, name in ipairs(v) do
    if type(name) ~= "string" then return false end
  end
  return true
end

local function read_cache(path, url)
  local text, state = core.files.cache_read(path, M.TTL)
  if state ~= "fresh" then return nil end
  local doc = cjson.decode(text)
  if type(doc) ~= "table" or doc.url ~= url or not valid_list(doc.languages) then return nil end
  return doc.languages
end

--- opts.refresh skips the cache. Returns a list of names and where it came
-- from ("cache" or "service"), or nil, Error.
function M.get(client, url, opts)
  local path = M.cache_path(url)
  if path and not opts.refresh then
    local cached = read_cache(path, url)
    if cached then return cached, "cache" end
  end
  local doc, rid = transport.request(client, "GET", "/languages", nil, opts)
  if not doc then return nil, rid end
  -- the C SDK also accepts a bare array
  local list = doc.languages or doc
  if not valid_list(list) then
    return nil, Error.new {
      kind = "protocol", request_id = rid, message = "the service returned no languages" }
  end
  if path then
    core.files.cache_write(path, cjson.encode { languages = list, url = url, timestamp = core.loop.now() })
  end
  return list, "service"
end

-- The names people use for a language, and the service's name of it.
local ALIASES = {
  python3 = "python", py = "python", node = "javascript", nodejs = "javascript",
  js = "javascript", ["c++"] = "cpp", cxx = "cpp", golang = "go", rb = "ruby",
  ts = "typescript", rs = "rust", pl = "perl", kt = "kotlin", ["c#"] = "csharp",
  cs = "csharp", ["f#"] = "fsharp", ["objective-c"] = "objc", shell = "bash",
}

--- The service's name of a language: without case, and an alias
-- (python3, py, node, js, c++, ...) as the language it names.
function M.canonical(name)
  local lower = name:lower()
  return ALIASES[lower] or lower
end

--- After the service refused a run (an http error), when the language is
-- not one of its list (cached, else fetched with a short timeout), says
-- so in err.hint, with the nearest names. Returns err.
function M.explain(client, language, err)
  if err.kind ~= "http" or (err.status ~= 400 and err.status ~= 404 and err.status ~= 422) then return err end
  local list = M.get(client, client:url(), { timeout = 5 })
  if type(list) ~= "table" then return err end
  for _, name in ipairs(list) do
    if name == language then return err end
  end
  err.hint = "language '" .. language .. "' is not one the service runs"
    .. require("unsandbox.suggest").phrase(language, list) .. "; get_languages() lists them"
  return err
end

return M
