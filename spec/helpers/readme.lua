-- The Lua code blocks of a Markdown text, for spec/readme_spec.lua. A block
-- may be preceded (on the line right before its fence) by a marker that the
-- rendered README does not show:
--   <!-- readme_spec: skip REASON -->    not run (REASON is required)
--   <!-- readme_spec: prelude CODE -->   CODE runs first (names a fragment
--                                        takes from the text around it)
-- Returns a list of {line =, code =, skip =, prelude =}, or raises for a
-- fence that is never closed or a marker it does not know.
local M = {}

local function marker(line, lineno)
  local body = line:match("^<!%-%- readme_spec: (.-) %-%->$")
  if not body then return nil end
  local verb, rest = body:match("^(%a+)%s*(.*)$")
  if verb == "skip" and rest ~= "" then return { skip = rest } end
  if verb == "prelude" and rest ~= "" then return { prelude = rest } end
  error(string.format("line %d: bad readme_spec marker %q", lineno, line), 0)
end

function M.blocks(text)
  local out, current, pending = {}, nil, nil
  local lineno = 0
  for line in (text .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    if current then
      if line:match("^```%s*$") then
        current.code = table.concat(current.lines, "\n") .. "\n"
        current.lines = nil
        out[#out + 1] = current
        current = nil
      else
        current.lines[#current.lines + 1] = line
      end
    elseif line:match("^```lua%s*$") then
      local m = pending or {}
      current = { line = lineno, lines = {}, skip = m.skip, prelude = m.prelude }
      pending = nil
    else
      if pending then
        error(string.format("line %d: a readme_spec marker must be right before a ```lua block", lineno - 1), 0)
      end
      pending = marker(line, lineno)
    end
  end
  if current then error(string.format("line %d: a ```lua block is never closed", current.line), 0) end
  if pending then error("the last readme_spec marker has no ```lua block after it", 0) end
  return out
end

return M
