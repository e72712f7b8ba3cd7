--- The languages list and its cache file, ~/.unsandbox/languages.json,
-- fresh for an hour judged by the file's mtime. The file records which
-- service it came from, so a list fetched from a local unsandboxd never
-- answers for the real service; and a service on a loopback address (a
-- local unsandboxd: `make demo`, `unlua --local`, the tests) has a file of
-- its own, languages-local.json, so running one never overwrites the real
-- service's cache. A failed or empty fetch is never cached; a missing or
-- unwritable HOME means no cache, not an error.
local core = require "unsandbox.core"
local cjson = require "cjson.safe"
local transport = require "unsandbox.transport"
local Error = require "unsandbox.errors"

local M = {}

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
  local text, state = core.cache_read(path, M.TTL)
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
    core.cache_write(path, cjson.encode { languages = list, url = url, timestamp = core.now() })
  end
  return list, "service"
end

return M
