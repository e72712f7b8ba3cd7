--- Saving a result's artifacts (execute_code{return_artifacts = true}) to
-- this machine: unsandbox.save_artifacts(result_or_list, dest[, opts]).
-- @module unsandbox.exec.artifacts
local check = require "unsandbox.check"
local core = require "unsandbox.core"
local Error = require "unsandbox.errors"

local M = {}

--- save(result_or_list, dest[, opts]): each artifact {filename, content}
-- written whole or not at all (a temporary renamed over the name) under
-- the local directory dest (made with its parents), at its relative path
-- (its directories made), or flattened into dest with opts.flatten ("/"
-- becomes "_"); or dest a function(filename, content) called for each.
-- Names were checked as relative paths when the result was read; they
-- are checked again here. Returns the list of paths written (or names
-- given to the function), or nil, Error naming the file that failed.
function M.save(list, dest, opts)
  if type(list) == "table" and list.artifacts then list = list.artifacts end
  check.type("save_artifacts", "artifacts", list, "table")
  opts = check.options("save_artifacts", opts, { flatten = true })
  local written = {}
  if type(dest) == "function" then
    for _, a in ipairs(list) do
      dest(a.filename, a.content or "")
      written[#written + 1] = a.filename
    end
    return written
  end
  check.nonempty("save_artifacts", "dest", dest)
  dest = dest:gsub("(.)/+$", "%1")
  for _, a in ipairs(list) do
    check.type("save_artifacts", "filename", a.filename, "string")
    local why = core.rules.relpath_check(a.filename)
    if why then
      return nil, Error.new { kind = "validation",
        message = "artifact " .. a.filename .. " not saved: its name " .. why }
    end
    local name = opts.flatten and a.filename:gsub("/", "_") or a.filename
    local path = (dest == "/" and "" or dest) .. "/" .. name
    local made, err = core.files.mkdirs(path:match("^(.*)/[^/]*$"))
    if not made then return nil, Error.new { kind = "validation", message = "cannot save artifacts: " .. err } end
    local saved, werr = core.files.write_file(path, a.content or "")
    if not saved then return nil, Error.new { kind = "validation", message = "cannot save artifact: " .. werr } end
    written[#written + 1] = path
  end
  return written
end

return M
