--- How every `un` command prints: text for a person, or with --json one
-- JSON document on stdout. The library's `timing` (and a list's request
-- id) are left out of JSON, so a list is a JSON array (`[]` when empty).
-- An empty list says so when stdout is a terminal and prints nothing into
-- a pipe (so `un jobs | wc -l` counts jobs). A command that changes
-- something says what it did (`did`); one that makes something prints
-- its new id alone, for `ID=$(un session create)`. Internal module.
local cjson = require "cjson"
local core = require "unsandbox.core"

local M = {}

-- A copy of a document without the library's own fields.
local function plain(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do
    if k ~= "timing" then out[k] = x end
  end
  return out
end

-- A list's items alone, as a JSON array ("[]" when empty: cjson writes an
-- empty table as {}).
local function array_json(items)
  if #items == 0 then return "[]" end
  local out = {}
  for i, it in ipairs(items) do out[i] = plain(it) end
  return cjson.encode(out)
end

--- A value on one line (tables as JSON).
function M.text(v)
  if type(v) == "table" then return cjson.encode(plain(v)) end
  return tostring(v)
end

function M.json(v)
  if type(v) == "table" and #v > 0 then print(array_json(v)) return end
  print(cjson.encode(plain(v)))
end

--- A document: fields as "name  value" lines, or JSON.
function M.document(o, doc)
  if o.json then return M.json(doc) end
  local keys = {}
  for k in pairs(doc) do if k ~= "timing" then keys[#keys + 1] = k end end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do print(string.format("%-18s %s", k, M.text(doc[k]))) end
end

--- A list: one tab-separated line per item with fields (a missing one is
-- "-"), or a JSON array. what names the items for an empty list ("no
-- sessions").
function M.list(o, items, fields, what)
  if o.json then print(array_json(items)) return end
  if #items == 0 then
    if core.term.isatty(1) then print("no " .. what) end
    return
  end
  for _, it in ipairs(items) do
    local cols = {}
    for i, f in ipairs(fields) do
      local v = it[f]
      if type(v) == "table" and #v > 0 then v = table.concat(v, ",") end
      cols[i] = v == nil and "-" or M.text(v)
    end
    print(table.concat(cols, "\t"))
  end
end

--- Lines of text (a list of names), or a JSON array.
function M.lines(o, items, what)
  if o.json then print(array_json(items)) return end
  if #items == 0 then
    if core.term.isatty(1) then print("no " .. what) end
    return
  end
  print(table.concat(items, "\n"))
end

--- A new thing's id alone, or the document as JSON.
function M.id(o, doc, id)
  if o.json then return M.json(doc) end
  print(id or doc.id)
end

--- What a command that changed something did: the message, or with
-- --json {"ok": true, "message": ..., "result": the library's value}.
function M.did(o, value, message)
  if o.json then
    print(cjson.encode { ok = true, message = message, result = plain(value) })
    return
  end
  print(message)
end

--- Text as it is (a log, an exported env file), or {"text": ...}.
function M.raw(o, text)
  if o.json then print(cjson.encode { text = text }) return end
  io.stdout:write(text)
end

return M
